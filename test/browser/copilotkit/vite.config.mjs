// Builds the page (index.html, src/) into dist/: no CDN, every module from
// node_modules. JSX is compiled by Vite's own esbuild step.
import { defineConfig } from 'vite';

export default defineConfig({
  root: import.meta.dirname,
  logLevel: 'warn',
  esbuild: { jsx: 'automatic' },
  build: { outDir: 'dist', emptyOutDir: true, sourcemap: false, chunkSizeWarningLimit: 10_000 },
});
