// Shared pieces of the browser tests: the server under test, fake upstreams,
// Debian's chromium driven by playwright-core (never a downloaded browser),
// and a guard that fails a test on any browser console error, uncaught page
// error, or request to a host the test did not name.

import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import http from 'node:http';
import { chromium } from 'playwright-core';

const here = dirname(fileURLToPath(import.meta.url));
export const BIN = process.env.AGENTCHAT_BIN || join(here, '.bin', 'agentchat');
export const SHOTS = join(here, 'screenshots');
export const WAIT = 20_000;

/** CHROMIUM is the system browser; CHROMIUM_PATH overrides it. */
export const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

export function within(promise, what, ms = WAIT) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms}ms: ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export function listen(server, host = '127.0.0.1') {
  return new Promise((ok, fail) => {
    server.once('error', fail);
    server.listen(0, host, () => ok(`http://${host}:${server.address().port}`));
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
 * startAgentchat runs the binary (built when missing) on a free port with a
 * fresh data directory and returns its URL, the console URL and token it
 * printed, and stop().
 */
export async function startAgentchat(env = {}) {
  if (!existsSync(BIN)) {
    execFileSync('go', ['build', '-o', BIN, './cmd/agentchat'], { cwd: resolve(here, '../..'), stdio: 'inherit' });
  }
  const dataDir = mkdtempSync(join(tmpdir(), 'agentchat-browser-'));
  const child = spawn(BIN, ['serve'], {
    env: {
      PATH: process.env.PATH,
      HOME: dataDir,
      AGENTCHAT_ADDR: '127.0.0.1:0',
      AGENTCHAT_DATA_DIR: dataDir,
      AGENTCHAT_LLM: 'scripted',
      AGENTCHAT_LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const started = new Promise((ok, fail) => {
    child.stdout.on('data', (b) => {
      output += b;
      const url = /listening on (http:\/\/[0-9.:]+)/.exec(output)?.[1];
      const consoleURL = /Open the console in a browser: (http:\/\/\S+)/.exec(output)?.[1];
      if (url && consoleURL) ok({ url, consoleURL, token: /export TOKEN=(\S+)/.exec(output)?.[1] });
    });
    child.stderr.on('data', (b) => (output += b));
    child.once('exit', (code) => fail(new Error(`agentchat exited (${code}):\n${output}`)));
  });
  const info = await within(started, 'agentchat to start');
  const exited = new Promise((ok) => child.once('exit', ok));
  return {
    ...info,
    output: () => output,
    async stop() {
      child.kill('SIGTERM');
      await within(exited, 'agentchat to stop', 10_000).catch(() => child.kill('SIGKILL'));
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** fakeFeishu is a Feishu custom-bot webhook that records the texts it was sent. */
export async function fakeFeishu() {
  const hook = { texts: [] };
  const server = fakeServer(async (req, res) => {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    hook.texts.push(JSON.parse(raw).content?.text);
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"code":0,"msg":"success","data":{}}');
  });
  hook.url = await listen(server);
  hook.close = () => close(server);
  return hook;
}

/**
 * launch starts chromium headless with no background traffic. playwright
 * gives every launch a fresh temporary profile (user-data-dir) and removes it
 * on close.
 */
export async function launch() {
  if (!existsSync(CHROMIUM)) throw new Error(`no browser at ${CHROMIUM}: apt-get install -y chromium (or set CHROMIUM_PATH)`);
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-quic', '--no-first-run',
      '--disable-component-update', '--disable-sync'],
  });
  return {
    browser,
    async close() {
      await browser.close();
    },
  };
}

/**
 * guard watches a page: every console error, uncaught exception, failed
 * request, and request to an origin outside allowed becomes a problem.
 * expectErrors(fn) runs fn while console errors matching a pattern are
 * expected (a refused cross-origin request, say).
 */
export function guard(page, allowed) {
  const problems = [];
  let expected = null;
  page.on('console', (m) => {
    if (m.type() !== 'error') return;
    if (expected && expected.test(m.text())) return;
    problems.push(`console error: ${m.text()} (${m.location()?.url ?? ''})`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('request', (r) => {
    const url = r.url();
    if (!allowed.some((origin) => url === origin || url.startsWith(`${origin}/`))) problems.push(`request to another host: ${url}`);
  });
  return {
    problems,
    async expectErrors(pattern, fn) {
      expected = pattern;
      try {
        return await fn();
      } finally {
        expected = null;
      }
    },
  };
}

/**
 * orExplain awaits wait and, if it fails, adds what explain() returns (the
 * server's side of the story, say) to its error: a wait that times out
 * once in CI then says which side stopped.
 */
export async function orExplain(wait, explain) {
  try {
    return await wait;
  } catch (e) {
    let more;
    try {
      more = await explain();
    } catch (e2) {
      more = `(explain failed: ${e2.message})`;
    }
    e.message += `\n${typeof more === 'string' ? more : JSON.stringify(more, null, 2)}`;
    throw e;
  }
}

export async function shot(page, name) {
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

/** json calls the API from the test (not the browser). */
export async function json(base, token, path, init = {}) {
  const res = await fetch(base + path, {
    ...init,
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', ...(init.headers ?? {}) },
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${init.method ?? 'GET'} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

/**
 * fakeModel is an OpenAI-compatible upstream (POST /v1/chat/completions,
 * streamed). An input containing "slow" gets an answer that stops after
 * its first words until release() — whenGated() resolves once an answer
 * waits there — so a test can act mid-stream without racing the model.
 * "markdown" and "word by word" get answers that go on part by part, each
 * part once step() is called.
 */
export async function fakeModel() {
  const fake = {};
  let gate = null;
  let waiters = [];
  fake.whenGated = () => (gate ? Promise.resolve() : new Promise((ok) => waiters.push(ok)));
  fake.release = () => {
    gate?.open();
    gate = null;
  };
  // step() lets a stepped answer go on to its next part; steps taken before
  // the answer reaches a part are kept, so the order of the two never
  // matters. Each answer counts its steps from its own start.
  let steps = 0;
  let stepWaiters = [];
  fake.step = () => {
    steps++;
    stepWaiters.splice(0).forEach((ok) => ok());
  };
  const stepped = async (n) => {
    while (steps < n) await new Promise((ok) => stepWaiters.push(ok));
  };
  const server = fakeServer(async (req, res) => {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    if (req.method !== 'POST' || req.url !== '/v1/chat/completions') return res.writeHead(404).end();
    const body = JSON.parse(raw);
    const last = (body.messages ?? []).at(-1) ?? {};
    const text = typeof last.content === 'string' ? last.content : JSON.stringify(last.content ?? '');
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const send = (delta, finish = null) =>
      res.write(`data: ${JSON.stringify({ id: 'chatcmpl-fake', object: 'chat.completion.chunk', created: 1, model: body.model,
        choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`);
    send({ role: 'assistant', content: '' });
    if (text.includes('markdown')) {
      // Markdown in small pieces, as a real model streams it, in parts: each
      // part after the first waits for step(), which a test calls once the
      // page shows the part before, so the answer grows over several frames
      // however slow the machine.
      const from = steps;
      for (const [i, part] of MARKDOWN_PARTS.entries()) {
        if (i > 0) await stepped(from + i);
        for (const piece of part.match(/[\s\S]{1,12}/g)) {
          if (res.destroyed) return;
          send({ content: piece });
          await new Promise((ok) => setTimeout(ok, 20));
        }
      }
      send({}, 'stop');
      return res.end('data: [DONE]\n\n');
    }
    if (text.includes('word by word')) {
      // One word at a time, each after the first once step() is called: a
      // test steps when the page shows the words before, so the answer is
      // drawn in as many steps as it has words however slow the machine.
      // Steps are counted from this answer's start.
      const from = steps;
      for (const [i, word] of WORD_BY_WORD_ANSWER.split(/(?= )/).entries()) {
        if (i > 0) await stepped(from + i);
        if (res.destroyed) return;
        send({ content: word });
      }
      send({}, 'stop');
      return res.end('data: [DONE]\n\n');
    }
    const slow = text.includes('slow');
    const parts = (slow ? SLOW_ANSWER : 'Hello from the fake model.').split(/(?= )/);
    for (let i = 0; i < parts.length; i++) {
      if (slow && i === SLOW_GATE_AFTER) {
        const opened = new Promise((open) => (gate = { open }));
        waiters.splice(0).forEach((ok) => ok());
        await opened;
      }
      if (res.destroyed) return;
      send({ content: parts[i] });
    }
    send({}, 'stop');
    res.end('data: [DONE]\n\n');
  });
  fake.url = await listen(server);
  fake.close = () => {
    fake.release();
    return close(server);
  };
  return fake;
}

/** WORD_BY_WORD_ANSWER is what fakeModel answers to "word by word", a word per step(). */
export const WORD_BY_WORD_ANSWER = 'Each word of this answer comes once the page shows the one before.';

/** SLOW_ANSWER is what fakeModel answers to "slow"; it pauses after SLOW_GATE_AFTER words. */
export const SLOW_ANSWER = 'These first words arrive at once, and after the gate opens the rest of this answer follows, word by word.';
export const SLOW_GATE_AFTER = 5;
export const SLOW_BEFORE_GATE = SLOW_ANSWER.split(/(?= )/).slice(0, SLOW_GATE_AFTER).join('');

/**
 * MARKDOWN_ANSWER is what fakeModel answers to "markdown": GitHub-flavoured
 * Markdown with a code fence, a table and a task list, and the ways model
 * output could try to run script or load another host's content.
 */
export const MARKDOWN_ANSWER = [
  '# Release notes',
  '',
  'Here is **bold**, *italic*, ~~struck~~ and `inline code`.',
  '',
  '- [x] shipped',
  '- [ ] still open',
  '',
  '| fruit | qty |',
  '| --- | ---: |',
  '| apples | 3 |',
  '| pears | 12 |',
  '',
  '```go',
  'func main() { fmt.Println("hi") }',
  '```',
  '',
  'Raw HTML is text: <script>window.__xss = 1</script><img src=x onerror="window.__xss = 2">',
  '',
  '<iframe src="https://example.com/"></iframe>',
  '',
  '[a bad link](javascript:window.__xss=3) and [a good one](https://example.com/docs)',
  '',
  '![a picture](https://example.com/cat.png)',
].join('\n');

/**
 * MARKDOWN_PARTS are the three parts fakeModel streams MARKDOWN_ANSWER in:
 * up to the task list, up to the table, the rest.
 */
export const MARKDOWN_PARTS = (() => {
  const afterList = MARKDOWN_ANSWER.indexOf('| fruit');
  const afterTable = MARKDOWN_ANSWER.indexOf('```go');
  return [MARKDOWN_ANSWER.slice(0, afterList), MARKDOWN_ANSWER.slice(afterList, afterTable), MARKDOWN_ANSWER.slice(afterTable)];
})();

/** MARKDOWN_CODE is the code block of MARKDOWN_ANSWER. */
export const MARKDOWN_CODE = 'func main() { fmt.Println("hi") }';

/**
 * axe scans the page with axe-core (from npm, put into the page by the test
 * through the DevTools protocol, so the console's CSP stays as strict as it
 * is) and returns its serious and critical violations.
 */
export async function axe(page) {
  if (!(await page.evaluate(() => typeof window.axe === 'object'))) {
    await page.evaluate(readFileSync(join(here, 'node_modules/axe-core/axe.min.js'), 'utf8'));
  }
  return page.evaluate(async () => {
    const r = await window.axe.run(document, { resultTypes: ['violations'] });
    return r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.impact} ${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).slice(0, 5).join(', ')})`);
  });
}

/**
 * chatAPI starts a native chat through the API (not the browser) and reads
 * its stream until until (an event name) or its end; it returns the ids and
 * the frames' text.
 */
export async function chatAPI(srv, body, until = '') {
  const res = await fetch(`${srv.url}/v1/agent/chat`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${srv.token}`, 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`chat: ${res.status} ${await res.text()}`);
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let text = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    text += dec.decode(value, { stream: true });
    if (until && text.includes(`event: ${until}`)) {
      await reader.cancel();
      break;
    }
  }
  return { conversationId: res.headers.get('x-conversation-id'), runId: res.headers.get('x-run-id'), text };
}

// countingModel answers "Answer <n>: <last user message>" and keeps each
// request's context (its non-system messages' contents, joined by "|").
export async function countingModel() {
  const fake = { contexts: [] };
  // gate() makes the next answer stop after its first word until the
  // promise it returns is given the go: {waiting, open}.
  let gate = null;
  fake.gate = () => {
    let open;
    let arrived;
    const opened = new Promise((ok) => (open = ok));
    const waiting = new Promise((ok) => (arrived = ok));
    gate = { opened, arrived };
    return { waiting, open };
  };
  const srv = fakeServer(async (req, res) => {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    if (req.method !== 'POST' || req.url !== '/v1/chat/completions') return res.writeHead(404).end();
    const body = JSON.parse(raw);
    const msgs = (body.messages ?? []).filter((m) => m.role !== 'system');
    const text = (m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content ?? ''));
    fake.contexts.push(msgs.map(text).join('|'));
    const answer = `Answer ${fake.contexts.length}: ${text(msgs.at(-1) ?? {})}`;
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const send = (delta, finish = null) =>
      res.write(`data: ${JSON.stringify({ id: 'chatcmpl-fake', object: 'chat.completion.chunk', created: 1, model: body.model,
        choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`);
    send({ role: 'assistant', content: '' });
    const held = gate;
    gate = null;
    const pieces = answer.split(/(?= )/);
    for (let i = 0; i < pieces.length; i++) {
      if (held && i === 1) {
        held.arrived();
        await held.opened;
      }
      if (res.destroyed) return;
      send({ content: pieces[i] });
    }
    send({}, 'stop');
    res.end('data: [DONE]\n\n');
  });
  fake.url = await listen(srv);
  fake.close = () => close(srv);
  return fake;
}
