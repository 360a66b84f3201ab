// Builds the page (index.html, src/) into dist/: no CDN, every module from
// node_modules. JSX is compiled by Vite's own esbuild step.
import { defineConfig } from 'vite';

export default defineConfig({
  root: import.meta.dirname,
  logLevel: 'warn',
  esbuild: { jsx: 'automatic' },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    sourcemap: false,
    chunkSizeWarningLimit: 10_000,
    rollupOptions: {
      // CopilotKit and Radix mark their modules "use client" (a React
      // Server Components directive); a client-only bundle has no use for
      // it, and Rollup would print one warning per module.
      onwarn(warning, warn) {
        if (warning.code === 'MODULE_LEVEL_DIRECTIVE') return;
        warn(warning);
      },
    },
  },
});
