// The shipped nginx configuration (deploy/nginx.conf, the one compose.yaml
// mounts) in front of the binary, in Debian's nginx, and the console loaded
// through it in Debian's chromium: sign in, stream an answer, approve a
// tool. Only the addresses are changed (the upstream servers become the
// binary, the listener a free port on 127.0.0.1); every proxy directive is
// the file's own. nginx runs in the foreground from a temporary prefix, as
// whoever runs the test.
//
// With `proxy_set_header Host $host` (the port dropped), the browser's
// Origin (http://127.0.0.1:<port>) no longer matched the Host the server
// saw, so the console's module scripts got 403 origin_not_allowed and the
// page stayed blank.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startAgentchat, fakeFeishu, launch, guard, shot, within, WAIT } from './lib.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
/** NGINX is Debian's nginx; NGINX_PATH overrides it. */
const NGINX = process.env.NGINX_PATH || '/usr/sbin/nginx';

let server;
let proxy;
let feishu;
let chromium;

before(async () => {
  feishu = await fakeFeishu();
  server = await startAgentchat({ AGENTCHAT_SCRIPTED_TOKEN_DELAY: '5ms', AGENTCHAT_FEISHU_WEBHOOK_URL: feishu.url });
  proxy = await startNginx(readFileSync(join(root, 'deploy/nginx.conf'), 'utf8'), new URL(server.url).host);
  chromium = await launch();
});

after(async () => {
  await chromium?.close();
  await proxy?.stop();
  await server?.stop();
  await feishu?.close();
});

function freePort() {
  return new Promise((ok, fail) => {
    const s = net.createServer();
    s.once('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => ok(port));
    });
  });
}

/**
 * startNginx runs nginx in the foreground with site (a conf.d file such as
 * deploy/nginx.conf) inside a minimal main configuration, its upstream
 * servers pointed at upstream and its listener at a free 127.0.0.1 port.
 */
async function startNginx(site, upstream) {
  if (!existsSync(NGINX)) throw new Error(`no nginx at ${NGINX}: apt-get install -y nginx (or set NGINX_PATH)`);
  let servers = 0;
  let listens = 0;
  const port = await freePort();
  const conf = site
    .replace(/^(\s*server\s+)\S+:\d+(\s[^;]*)?;/gm, (_, lead, params = '') => (servers++, `${lead}${upstream}${params};`))
    .replace(/^(\s*listen\s+)\d+;/gm, (_, lead) => (listens++, `${lead}127.0.0.1:${port};`));
  assert.ok(servers > 0 && listens === 1, `deploy/nginx.conf has upstream servers and one "listen <port>;" (${servers}, ${listens})`);
  const prefix = mkdtempSync(join(tmpdir(), 'agentchat-nginx-'));
  // Workers may run as another user (nobody) when the test runs as root.
  chmodSync(prefix, 0o755);
  mkdirSync(join(prefix, 'logs'));
  writeFileSync(join(prefix, 'site.conf'), conf);
  writeFileSync(join(prefix, 'nginx.conf'), `
daemon off;
worker_processes 1;
pid ${prefix}/nginx.pid;
error_log ${prefix}/logs/error.log warn;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path ${prefix}/client_body;
  proxy_temp_path ${prefix}/proxy;
  fastcgi_temp_path ${prefix}/fastcgi;
  uwsgi_temp_path ${prefix}/uwsgi;
  scgi_temp_path ${prefix}/scgi;
  include ${prefix}/site.conf;
}
`);
  execFileSync(NGINX, ['-t', '-q', '-p', prefix, '-c', join(prefix, 'nginx.conf')], { stdio: 'pipe' });
  const child = spawn(NGINX, ['-p', prefix, '-c', join(prefix, 'nginx.conf')], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (b) => (output += b));
  child.stderr.on('data', (b) => (output += b));
  const exited = new Promise((ok) => child.once('exit', ok));
  const url = `http://127.0.0.1:${port}`;
  // Ready when it answers through to the binary (bounded: within).
  await within((async () => {
    for (;;) {
      const res = await fetch(`${url}/healthz`).catch(() => null);
      if (res?.status === 200) return;
      if (child.exitCode !== null) throw new Error(`nginx exited (${child.exitCode}):\n${output}`);
      await new Promise((ok) => setTimeout(ok, 50));
    }
  })(), 'nginx to proxy /healthz');
  return {
    url,
    async stop() {
      child.kill('SIGQUIT'); // graceful
      await within(exited, 'nginx to stop', 10_000).catch(() => child.kill('SIGKILL'));
      rmSync(prefix, { recursive: true, force: true });
    },
  };
}

test('the shipped nginx configuration forwards the port in Host, and the docs show the same', () => {
  for (const file of ['deploy/nginx.conf', 'docs/operations.md']) {
    const text = readFileSync(join(root, file), 'utf8');
    assert.match(text, /proxy_set_header Host \$http_host;/, `${file} forwards the Host header as the client sent it`);
    assert.doesNotMatch(text, /proxy_set_header Host \$host;/, `${file} drops the port from Host`);
  }
});

test('through nginx, the console loads, signs in, streams an answer and approves a tool', async (t) => {
  const context = await chromium.browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  page.setDefaultTimeout(WAIT);
  const g = guard(page, [proxy.url]);
  const refused = [];
  page.on('response', (r) => r.status() >= 400 && refused.push(`${r.status()} ${r.url()}`));
  t.after(async () => {
    await context.close();
    assert.deepEqual(g.problems, [], 'the browser saw problems');
  });
  const res = await page.goto(`${proxy.url}/`);
  assert.equal(res.status(), 200);
  await page.fill('#token', server.token);
  await page.keyboard.press('Enter');
  await page.waitForSelector('#who:not([hidden])');
  assert.equal(await page.textContent('#who'), 'dev · tenant default');

  await page.fill('#composer-input', 'Send a Feishu message saying "through nginx"');
  await page.press('#composer-input', 'Enter');
  const run = page.locator('#messages .run').last();
  const card = run.locator('.tool[data-status="awaiting_input"]');
  await card.locator('.approval').waitFor();
  await card.getByRole('button', { name: 'Approve' }).click();
  await run.locator('.tool[data-status="succeeded"]').waitFor();
  await run.locator('.run-foot a:not([hidden])').waitFor();
  assert.match(await run.locator('.answer').textContent(), /Done: the Feishu message was sent/);
  assert.ok(feishu.texts.includes('through nginx'), `the message was sent: ${feishu.texts}`);
  assert.deepEqual(refused, [], 'no request through nginx was refused');
  await shot(page, 'through-nginx');
});
