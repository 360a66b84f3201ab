// The CopilotKit side of the app: the CopilotKit runtime (Node) with one
// agent, an AG-UI HttpAgent pointed at agentchat's POST /api/v1/agent/runs,
// and the page built by Vite (dist/), both on one origin.
//
// The person's agentchat token comes with each runtime request
// (Authorization) and the runtime forwards it to the agent: agentchat sees
// the person, not a service account.
import http from 'node:http';
import { readFile } from 'node:fs/promises';
import { extname, join, normalize } from 'node:path';
import { HttpAgent } from '@ag-ui/client';
import { CopilotRuntime, InMemoryAgentRunner } from '@copilotkit/runtime/v2';
import { createCopilotNodeListener } from '@copilotkit/runtime/v2/node';

const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.css': 'text/css', '.svg': 'image/svg+xml', '.woff2': 'font/woff2' };

/**
 * startApp serves the runtime at /api/copilotkit and the built page at /,
 * on a free 127.0.0.1 port. agentchat is agentchat's base URL.
 */
export async function startApp({ agentchat, dist = join(import.meta.dirname, 'dist') }) {
  const runtime = new CopilotRuntime({
    agents: { default: new HttpAgent({ url: `${agentchat}/api/v1/agent/runs` }) },
    runner: new InMemoryAgentRunner(),
    // The runtime forwards the request's Authorization header to the
    // HttpAgent, so agentchat sees the person. Its default policy forwards
    // Authorization and every x-* header; only the token is agentchat's
    // business.
    forwardHeaders: { allow: ['authorization'] },
  });
  const api = createCopilotNodeListener({ runtime, basePath: '/api/copilotkit', activateChannels: false });
  const server = http.createServer(async (req, res) => {
    if (req.url.startsWith('/api/copilotkit')) return api(req, res);
    const path = normalize(decodeURIComponent(new URL(req.url, 'http://x').pathname)).replace(/^(\.\.[/\\])+/, '');
    const file = join(dist, path === '/' ? 'index.html' : path);
    try {
      const body = await readFile(file);
      res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' }).end(body);
    } catch {
      res.writeHead(404).end('not found');
    }
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    close: () => new Promise((ok) => { server.closeAllConnections(); server.close(() => ok()); }),
  };
}

/** buildPage builds index.html and src/ into dist/ with Vite. */
export async function buildPage() {
  const { build } = await import('vite');
  await build({ configFile: join(import.meta.dirname, 'vite.config.mjs') });
}
