// Browser apps on another origin against agentchat with CORS configured: a
// page served from a second port runs the AI SDK's useChat (@ai-sdk/react)
// and another runs @ag-ui/client's HttpAgent, each completing a chat with a
// tool approval in Debian's chromium. The pages are bundled here with
// esbuild (from node_modules; nothing is downloaded). A page on an origin
// that is not listed is refused and learns nothing.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { startAgentchat, fakeFeishu, launch, guard, shot, listen, close, json, WAIT } from './lib.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const TOKEN = 'browser-cors-token';

let app; // the static server of the pages: {url, close}
let server;
let feishu;
let chromium;

async function bundle(entry) {
  const out = await build({
    entryPoints: [join(here, 'pages', entry)],
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    jsx: 'automatic',
    minify: true,
    define: { 'process.env.NODE_ENV': '"production"' },
    logLevel: 'silent',
  });
  return out.outputFiles[0].text;
}

const page = (script) => `<!doctype html><html><head><meta charset="utf-8"><title>${script}</title>
<script type="module" src="/${script}"></script></head><body>
<div id="root"></div>
<form id="form"><input id="input" aria-label="Message"><button>Send</button></form>
<p id="status"></p><p id="answer"></p><button id="approve" hidden>Approve</button><ol id="events"></ol>
</body></html>`;

before(async () => {
  const [usechat, agui] = await Promise.all([bundle('usechat.jsx'), bundle('agui.js')]);
  const files = {
    '/usechat.html': ['text/html', page('usechat.js').replace(/<form.*<\/ol>/s, '')],
    '/usechat.js': ['text/javascript', usechat],
    '/agui.html': ['text/html', page('agui.js').replace('<div id="root"></div>', '')],
    '/agui.js': ['text/javascript', agui],
    '/favicon.ico': ['image/x-icon', ''],
  };
  const statics = http.createServer((req, res) => {
    const f = files[new URL(req.url, 'http://x').pathname];
    if (!f) return res.writeHead(404).end();
    res.writeHead(200, { 'content-type': f[0] }).end(f[1]);
  });
  // Listening on every loopback name, the same page is reachable as the
  // allowed origin (127.0.0.1) and as one that is not (localhost).
  const url = await listen(statics, '127.0.0.1');
  app = { url, other: url.replace('127.0.0.1', 'localhost'), close: () => close(statics) };
  feishu = await fakeFeishu();
  server = await startAgentchat({
    AGENTCHAT_TOKENS: `${TOKEN}:acme:alice`,
    AGENTCHAT_CORS_ORIGINS: app.url,
    AGENTCHAT_FEISHU_WEBHOOK_URL: feishu.url,
    AGENTCHAT_SCRIPTED_TOKEN_DELAY: '1ms',
  });
  chromium = await launch();
});

after(async () => {
  await chromium?.close();
  await server?.stop();
  await feishu?.close();
  await app?.close();
});

async function open(t, path, config, origin = app.url) {
  const context = await chromium.browser.newContext();
  const p = await context.newPage();
  p.setDefaultTimeout(WAIT);
  const g = guard(p, [origin, new URL(server.url).origin]);
  t.after(async () => {
    await context.close();
    assert.deepEqual(g.problems, [], 'the browser saw problems');
  });
  await p.addInitScript((c) => (window.AGENTCHAT = c), { url: server.url, token: TOKEN, ...config });
  await p.goto(origin + path);
  return { page: p, g };
}

test('useChat (@ai-sdk/react) on another origin chats and approves a tool', async (t) => {
  const { page: p } = await open(t, '/usechat.html', { chatId: 'browser-usechat' });
  await p.locator('#status', { hasText: 'ready' }).waitFor();
  await p.fill('#input', 'Send a Feishu message saying "from useChat"');
  await p.press('#input', 'Enter');
  const tool = p.locator('.tool[data-state="approval-requested"]');
  await tool.waitFor();
  await shot(p, 'usechat-approval');
  await tool.getByRole('button', { name: 'Approve' }).click();
  await p.locator('.tool[data-state="output-available"]').waitFor();
  await p.locator('.message.assistant .text', { hasText: 'Done: the Feishu message was sent.' }).waitFor();
  await p.locator('#status', { hasText: 'ready' }).waitFor();
  assert.equal(await p.locator('#error').count(), 0);
  assert.equal(await p.locator('.message.assistant').count(), 1, 'the continuation is the same assistant message');
  assert.ok(feishu.texts.includes('from useChat'));
  await shot(p, 'usechat-done');
});

// The "every surface attaches", from the AI SDK's own hook: the
// files of a file input go as file parts with data: URLs; agentchat stores
// each as a file on arrival, and the model receives an image and a document.
test('useChat (@ai-sdk/react) on another origin sends an image and a PDF', async (t) => {
  const { page: p } = await open(t, '/usechat.html', { chatId: 'browser-usechat-files' });
  await p.locator('#status', { hasText: 'ready' }).waitFor();
  await p.setInputFiles('#files', [
    { name: 'cat.png', mimeType: 'image/png', buffer: Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64') },
    { name: 'handbook.pdf', mimeType: 'application/pdf', buffer: Buffer.from('%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n') },
  ]);
  await p.fill('#input', 'what are these?');
  await p.press('#input', 'Enter');
  await p.locator('.message.assistant .text', { hasText: 'with 1 image and 1 document' }).waitFor();
  await p.locator('#status', { hasText: 'ready' }).waitFor();
  assert.equal(await p.locator('#error').count(), 0);
  assert.deepEqual(await p.locator('.message.user .file').allTextContents(), ['cat.png', 'handbook.pdf']);
  // Each data: URL was stored as a file of the caller's on arrival.
  const { files } = await json(server.url, TOKEN, '/v1/files?limit=100');
  assert.deepEqual(files.map((f) => f.mediaType).sort(), ['application/pdf', 'image/png']);
  await shot(p, 'usechat-files');
});

test('HttpAgent (@ag-ui/client) on another origin chats and approves a tool', async (t) => {
  const { page: p } = await open(t, '/agui.html', { threadId: 'browser-agui' });
  await p.fill('#input', 'Send a Feishu message saying "from HttpAgent"');
  await p.press('#input', 'Enter');
  await p.locator('#status', { hasText: 'interrupted' }).waitFor();
  await shot(p, 'agui-interrupt');
  await p.getByRole('button', { name: 'Approve' }).click();
  await p.locator('#status', { hasText: 'done' }).waitFor();
  assert.match(await p.textContent('#answer'), /Done: the Feishu message was sent/);
  const events = await p.locator('#events li').allTextContents();
  assert.ok(events.includes('TOOL_CALL_RESULT') && events.at(-1) === 'RUN_FINISHED', events.join(' '));
  assert.ok(feishu.texts.includes('from HttpAgent'));
  await shot(p, 'agui-done');
});

test('a page on an origin that is not listed is refused and learns nothing', async (t) => {
  await json(server.url, TOKEN, '/v1/conversations', { method: 'POST', body: JSON.stringify({ title: 'secret title' }) });
  const { page: p, g } = await open(t, '/agui.html', { threadId: 'browser-refused' }, app.other);
  const outcome = await g.expectErrors(/CORS|Failed to load resource|ERR_FAILED|Failed to fetch/, () =>
    p.evaluate(async ({ url, token }) => {
      try {
        const res = await fetch(`${url}/v1/conversations`, { headers: { Authorization: `Bearer ${token}` } });
        return `read ${res.status}: ${await res.text()}`;
      } catch (e) {
        return `refused: ${e.name}`;
      }
    }, { url: server.url, token: TOKEN }));
  assert.equal(outcome, 'refused: TypeError');
  const before = (await json(server.url, TOKEN, '/v1/conversations')).conversations.length;
  await g.expectErrors(/CORS|Failed to load resource|ERR_FAILED|Failed to fetch/, async () => {
    await p.fill('#input', 'Hello from a page that is not allowed');
    await p.press('#input', 'Enter');
    await p.locator('#status', { hasText: 'error' }).waitFor();
  });
  const after = (await json(server.url, TOKEN, '/v1/conversations')).conversations.length;
  assert.equal(after, before, 'the refused page started nothing');
});
