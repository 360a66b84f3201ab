// Shared pieces of the conformance tests: bounded waits, local listeners,
// and the server under test (as test/browser/lib.mjs starts it there).

import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import http from 'node:http';

const here = dirname(fileURLToPath(import.meta.url));
/** BIN is the binary under test; .ci/run builds it, startAgentchat when missing. */
export const BIN = join(here, '.bin', 'agentchat');
/** WAIT bounds every wait: the longest any one step may take. */
export const WAIT = 15_000;

export function within(promise, what, ms = WAIT) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms}ms: ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export function listen(server) {
  return new Promise((ok, fail) => {
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => ok(`http://127.0.0.1:${server.address().port}`));
  });
}

export function close(server) {
  server.closeAllConnections?.();
  return within(new Promise((ok) => server.close(() => ok())), 'server close', 5_000);
}

// fakeServer makes a fake upstream's HTTP server from an async handler.
// agentchat may drop a request at any instant (a run cancelled, the server
// stopping), and reading such a request's body rejects with "aborted":
// that is the client's right, not the fake's failure, so the handler ends
// quietly. Any other error is printed and answered 500, which the test sees;
// it never becomes an unhandled rejection that fails the whole file.
export function fakeServer(handler) {
  return http.createServer((req, res) => {
    handler(req, res).catch((err) => {
      if (req.destroyed || res.destroyed) return;
      console.error('fake server:', err);
      if (res.headersSent) res.destroy(err);
      else res.writeHead(500).end(String(err));
    });
  });
}

/**
 * startAgentchat runs the binary (built when missing) on a free 127.0.0.1
 * port with a fresh data directory and the offline scripted model, env on
 * top, and resolves once /healthz answers with its URL, its output so far
 * (stdout and stderr, for failure messages) and stop(), which ends the
 * process and removes the data directory.
 */
export async function startAgentchat(env = {}) {
  if (!existsSync(BIN)) {
    execFileSync('go', ['build', '-o', BIN, './cmd/agentchat'], { cwd: resolve(here, '../..'), stdio: 'inherit' });
  }
  const dataDir = mkdtempSync(join(tmpdir(), 'agentchat-conformance-'));
  const child = spawn(BIN, ['serve'], {
    env: {
      PATH: process.env.PATH ?? '',
      HOME: dataDir,
      AGENTCHAT_ADDR: '127.0.0.1:0',
      AGENTCHAT_DATA_DIR: dataDir,
      AGENTCHAT_LLM: 'scripted',
      AGENTCHAT_SCRIPTED_TOKEN_DELAY: '1ms',
      AGENTCHAT_LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const exited = new Promise((ok) => child.once('exit', ok));
  const stop = async () => {
    child.kill('SIGTERM');
    await within(exited, 'agentchat to stop', 10_000).catch(() => child.kill('SIGKILL'));
    rmSync(dataDir, { recursive: true, force: true });
  };
  const listening = new Promise((ok, fail) => {
    child.stdout.on('data', (b) => {
      output += b;
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
      if (m) ok(m[1]);
    });
    child.stderr.on('data', (b) => (output += b));
    child.once('exit', (code) => fail(new Error(`agentchat exited (${code}):\n${output}`)));
  });
  try {
    const url = await within(listening, 'agentchat to listen');
    for (let i = 0; ; i++) {
      const ok = await fetch(`${url}/healthz`).then((r) => r.ok, () => false);
      if (ok) break;
      if (i === 50) throw new Error(`${url}/healthz never answered:\n${output}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    return { url, output: () => output, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
