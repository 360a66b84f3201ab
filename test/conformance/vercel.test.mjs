// agentchat against the Vercel AI SDK's own client: a real Chat (the SDK's
// framework-free AbstractChat, the class useChat wraps) with
// DefaultChatTransport, against the real binary, once on the local engine and
// once on the openclaw engine with a fake OpenClaw Gateway. Both legs run the
// same client script. Every response is also read raw and checked with the
// SDK's own chunk schema (uiMessageChunkSchema) and message builder
// (readUIMessageStream), for what the SDK tolerates but apps need: the
// header, `finish` last, `data: [DONE]`, no unfinished part, one assistant
// message per turn.
//
// The fake model and gateway live in this process and gate the "slow"
// answer on a promise, so the dropped-connection tests are synchronised, not
// timed. Every wait is bounded; every process and server started here is
// stopped here.

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import {
  AbstractChat,
  DefaultChatTransport,
  isToolUIPart,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  parseJsonEventStream,
  readUIMessageStream,
  uiMessageChunkSchema,
  validateUIMessages,
} from 'ai';

import { close, fakeServer, listen, startAgentchat, within } from './lib.mjs';

const TOKEN = 'conformance-alice-token';
const GATEWAY_TOKEN = 'conformance-gateway-root-token';

// --- bounded waits -----------------------------------------------------------

function deferred() {
  let resolve;
  const promise = new Promise((r) => (resolve = r));
  return { promise, resolve };
}

// --- the fake upstream: an OpenAI-compatible model, or an OpenClaw Gateway ----

// fakeUpstream answers POST /v1/chat/completions with chat.completion.chunk
// streams. As a gateway it checks the OpenClaw headers of every request.
async function fakeUpstream({ gateway }) {
  const fake = { violations: [], requests: 0 };
  // A "slow" answer stops after two words until release; whenGated resolves
  // once an answer waits there.
  let gated = null;
  let waiters = [];
  fake.whenGated = () => (gated ? Promise.resolve() : new Promise((ok) => waiters.push(ok)));
  fake.release = () => {
    gated?.resolve();
    gated = null;
  };
  const server = fakeServer(async (req, res) => {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
      res.writeHead(404).end();
      return;
    }
    fake.requests++;
    const body = JSON.parse(raw);
    const shown = { ...req.headers, authorization: req.headers.authorization ? '(redacted)' : undefined };
    const check = (ok, what) => ok || fake.violations.push(`${what}: ${JSON.stringify({ headers: shown, model: body.model })}`);
    check(body.stream === true, 'stream is not true');
    if (gateway) {
      check(req.headers.authorization === `Bearer ${GATEWAY_TOKEN}`, 'authorization');
      check(/^agentchat:acme:[0-9a-f-]{36}$/.test(req.headers['x-openclaw-session-key'] ?? ''), 'x-openclaw-session-key');
      check(req.headers['x-openclaw-agent-id'] === 'main', 'x-openclaw-agent-id');
      check(body.model === 'openclaw/main', 'model');
    } else {
      check(req.headers.authorization === 'Bearer sk-conformance', 'authorization');
    }
    const messages = body.messages ?? [];
    const last = messages[messages.length - 1] ?? {};
    const text = typeof last.content === 'string' ? last.content : JSON.stringify(last.content ?? '');
    if (last.role === 'user' && text.includes('fail please')) {
      res.writeHead(502, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'the upstream agent is down', type: 'server_error' } }));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const send = (delta, finish = null) =>
      res.write(`data: ${JSON.stringify({ id: 'chatcmpl-fake', object: 'chat.completion.chunk', created: 1, model: body.model,
        choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`);
    const words = async (sentence, gateAfter = -1) => {
      const parts = sentence.split(/(?= )/);
      for (let i = 0; i < parts.length; i++) {
        if (i === gateAfter) {
          const gate = (gated = deferred());
          waiters.splice(0).forEach((ok) => ok());
          await gate.promise;
        }
        send({ content: parts[i] });
      }
    };
    send({ role: 'assistant', content: '' });
    if (last.role === 'tool') {
      await words(text.includes('declined') ? 'Okay, I did not send it.' : 'Done: the Feishu message was sent.');
      send({}, 'stop');
    } else if (/feishu/i.test(text)) {
      const quoted = /"([^"]+)"/.exec(text)?.[1] ?? text;
      send({ tool_calls: [{ index: 0, id: `call_${randomUUID().slice(0, 8)}`, type: 'function', function: { name: 'send_feishu_message', arguments: '' } }] });
      send({ tool_calls: [{ index: 0, function: { arguments: JSON.stringify({ text: quoted }) } }] });
      send({}, 'tool_calls');
    } else if (text.includes('slow')) {
      await words('Hello from behind the gate.', 2);
      send({}, 'stop');
    } else {
      await words('Hello from the fake model.');
      send({}, 'stop');
    }
    res.end('data: [DONE]\n\n');
  });
  fake.url = await listen(server);
  fake.close = () => close(server);
  return fake;
}

// fakeFeishu is a Feishu custom-bot webhook that records the texts it was sent.
async function fakeFeishu() {
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

// --- the server under test ----------------------------------------------------

// startServer starts agentchat with this suite's settings, env on top.
function startServer(env) {
  return startAgentchat({ AGENTCHAT_TOKENS: `${TOKEN}:acme:alice`, AGENTCHAT_PING_INTERVAL: '1s', ...env });
}

// --- raw response checks ------------------------------------------------------

// recorder wraps fetch: each response is teed, one copy for the Chat, one
// read raw here; afterRequest runs once the response headers are in.
function recorder({ afterHeaders, dropAfterTextDelta } = {}) {
  const responses = [];
  const doFetch = async (url, init = {}) => {
    const drop = dropAfterTextDelta && init.method === 'POST';
    const abort = new AbortController();
    const res = await fetch(url, drop ? { ...init, signal: abort.signal } : init);
    const entry = { url: String(url), method: init.method ?? 'GET', status: res.status, headers: res.headers };
    responses.push(entry);
    await afterHeaders?.(entry);
    if (!res.body) {
      entry.done = Promise.resolve('');
      return res;
    }
    if (drop) {
      entry.done = Promise.resolve('');
      return new Response(dropping(res.body, () => abort.abort()), { status: res.status, statusText: res.statusText, headers: res.headers });
    }
    const [forChat, forCheck] = res.body.tee();
    entry.done = new Response(forCheck).text().then((t) => (entry.raw = t), () => (entry.raw = ''));
    return new Response(forChat, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
  return { fetch: doFetch, responses };
}

// dropping passes a body through until its first text-delta, then closes
// the connection and fails the body the way a dropped connection does (a
// TypeError from fetch).
function dropping(body, closeConnection) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let seen = '';
  return new ReadableStream({
    async pull(controller) {
      const { value, done } = await reader.read();
      if (done) return controller.close();
      seen += decoder.decode(value, { stream: true });
      if (seen.includes('"text-delta"')) {
        controller.error(new TypeError('network error'));
        closeConnection();
        reader.cancel().catch(() => {});
        return;
      }
      controller.enqueue(value);
    },
    cancel: (reason) => reader.cancel(reason),
  });
}

// checkResponse checks one raw UI message stream response and returns its
// chunks: the header, every chunk valid by the SDK's own schema, `finish` the
// last chunk, `data: [DONE]` the last frame, and the SDK's message builder
// accepting the sequence (starting from `message` for a continuation).
async function checkResponse(entry, { message, errorExpected = false } = {}) {
  await within(entry.done, `the response body of ${entry.method} ${entry.url}`);
  assert.equal(entry.status, 200, `${entry.method} ${entry.url}`);
  assert.equal(entry.headers.get('x-vercel-ai-ui-message-stream'), 'v1');
  assert.match(entry.headers.get('content-type'), /^text\/event-stream/);
  assert.equal(entry.headers.get('x-accel-buffering'), 'no');
  const datas = entry.raw.split(/\r?\n\r?\n/).flatMap((frame) => {
    const lines = frame.split(/\r?\n/).filter((l) => l.startsWith('data:'));
    return lines.length ? [lines.map((l) => l.replace(/^data: ?/, '')).join('\n')] : [];
  });
  assert.equal(datas.at(-1), '[DONE]', 'the last frame is data: [DONE]');
  assert.equal(datas.filter((d) => d === '[DONE]').length, 1, 'one [DONE]');

  const chunks = [];
  const parsed = parseJsonEventStream({ stream: new Response(entry.raw).body, schema: uiMessageChunkSchema });
  for await (const result of parsed) {
    assert.ok(result.success, `a chunk the SDK's schema refuses: ${result.error?.message}`);
    chunks.push(result.value);
  }
  const types = chunks.map((c) => c.type);
  assert.equal(types[0], 'start', `first chunk: ${types}`);
  assert.equal(types.at(-1), 'finish', `last chunk: ${types}`);
  assert.equal(types.indexOf('finish'), types.length - 1, `one finish, last: ${types}`);

  const errors = [];
  let built;
  const stream = new ReadableStream({
    start(controller) {
      chunks.forEach((c) => controller.enqueue(c));
      controller.close();
    },
  });
  for await (const snapshot of readUIMessageStream({ stream, message, onError: (e) => errors.push(e) })) built = snapshot;
  if (errorExpected) {
    assert.ok(errors.length > 0 && types.includes('error'), `an error chunk: ${types}`);
  } else {
    assert.deepEqual(errors.map(String), [], 'the message builder accepted every chunk');
    assertFinished(built);
  }
  return { chunks, types, built };
}

// assertFinished: no text or reasoning still streaming, no tool call without an outcome.
function assertFinished(message) {
  for (const part of message.parts) {
    if (part.type === 'text' || part.type === 'reasoning') assert.equal(part.state, 'done', `unfinished ${part.type} part`);
    if (isToolUIPart(part)) {
      assert.ok(['output-available', 'output-error', 'output-denied', 'approval-requested'].includes(part.state),
        `tool part left in state ${part.state}`);
    }
  }
}

// --- the Chat under test --------------------------------------------------------

// newChat is a real AI SDK Chat: AbstractChat with a plain state, as
// @ai-sdk/react's Chat is with React state.
function newChat(base, { id = randomUUID(), messages = [], fetch } = {}) {
  const state = {
    status: 'ready',
    error: undefined,
    messages,
    pushMessage(m) { this.messages = this.messages.concat(m); },
    popMessage() { this.messages = this.messages.slice(0, -1); },
    replaceMessage(i, m) { this.messages = this.messages.map((x, j) => (j === i ? m : x)); },
    snapshot: (v) => structuredClone(v),
  };
  const finishes = [];
  let waiter;
  const chat = new AbstractChat({
    id,
    state,
    transport: new DefaultChatTransport({
      api: `${base}/v1/agent/chat?format=vercel-ai`,
      headers: { Authorization: `Bearer ${TOKEN}` },
      fetch,
    }),
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
    onFinish: (event) => {
      finishes.push(event);
      waiter?.resolve(event);
    },
  });
  chat.finishes = finishes;
  // nextFinish resolves at the next onFinish: requests the Chat sends by itself.
  chat.nextFinish = () => {
    waiter = deferred();
    return waiter.promise;
  };
  return chat;
}

function assistants(chat) {
  return chat.messages.filter((m) => m.role === 'assistant');
}

function textOf(message) {
  return message.parts.filter((p) => p.type === 'text').map((p) => p.text).join('');
}

// --- the client script, run against each engine ----------------------------------

const legs = [
  {
    name: 'local engine',
    async start(ctx) {
      ctx.upstream = await fakeUpstream({ gateway: false });
      return {
        AGENTCHAT_LLM: 'openai', OPENAI_BASE_URL: `${ctx.upstream.url}/v1`, OPENAI_API_KEY: 'sk-conformance',
        AGENTCHAT_MODEL: 'fake-model', AGENTCHAT_LLM_RETRIES: '-1',
      };
    },
  },
  {
    name: 'openclaw engine',
    async start(ctx) {
      ctx.upstream = await fakeUpstream({ gateway: true });
      return {
        AGENTCHAT_ENGINE: 'openclaw', OPENCLAW_GATEWAY_URL: ctx.upstream.url, OPENCLAW_GATEWAY_TOKEN: GATEWAY_TOKEN, OPENCLAW_AGENT_ID: 'main',
      };
    },
  },
];

for (const leg of legs) {
  describe(`AI SDK Chat against agentchat (${leg.name})`, { timeout: 120_000 }, () => {
    const ctx = {};

    before(async () => {
      ctx.feishu = await fakeFeishu();
      const env = await leg.start(ctx);
      ctx.server = await startServer({ ...env, AGENTCHAT_FEISHU_WEBHOOK_URL: ctx.feishu.url });
    });

    after(async () => {
      await ctx.server?.stop();
      await ctx.upstream?.close();
      await ctx.feishu?.close();
      assert.deepEqual(ctx.upstream?.violations ?? [], [], 'every upstream request carried the expected headers');
    });

    test('a turn streams one assistant message, finish last, then [DONE]', async () => {
      const rec = recorder();
      const chat = newChat(ctx.server.url, { fetch: rec.fetch });
      await within(chat.sendMessage({ text: 'hello' }), 'first turn');
      assert.equal(chat.status, 'ready', String(chat.error));
      assert.equal(assistants(chat).length, 1);
      const [answer] = assistants(chat);
      assert.equal(textOf(answer), 'Hello from the fake model.');
      assert.equal(chat.finishes.at(-1).finishReason, 'stop');
      const { types, chunks, built } = await checkResponse(rec.responses[0]);
      assert.ok(types.includes('data-conversation.created'));
      assert.equal(built.id, answer.id, 'the start messageId names the message');
      const conversationId = chunks.find((c) => c.type === 'data-conversation.created').data.conversationId;
      assert.ok(conversationId);
      assertFinished(answer);

      await within(chat.sendMessage({ text: 'and again' }), 'second turn');
      assert.equal(chat.messages.length, 4);
      assert.equal(assistants(chat).length, 2, 'one assistant message per turn');
      const second = await checkResponse(rec.responses[1]);
      assert.ok(!second.types.includes('data-conversation.created'), 'the chat id names the same conversation');
      await validateUIMessages({ messages: chat.messages });
    });

    if (leg.name === 'local engine') {
      test('retrieval hits arrive as data-retrieval and source-document parts before the answer', async () => {
        const up = await fetch(`${ctx.server.url}/v1/knowledge/documents`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' },
          body: JSON.stringify({ source: '退货政策.md', text: '# 退货政策\n\n商品在签收后七天内可以无理由退货，运费由买家承担。' }),
        });
        assert.equal(up.status, 201);
        const doc = await up.json();
        const rec = recorder();
        const chat = newChat(ctx.server.url, { fetch: rec.fetch });
        await within(chat.sendMessage({ text: '几天内可以退货？' }), 'the retrieval turn');
        assert.equal(chat.status, 'ready', String(chat.error));
        const { types, built } = await checkResponse(rec.responses[0]);
        assert.ok(types.indexOf('data-retrieval') >= 0 && types.indexOf('data-retrieval') < types.indexOf('text-delta'), `retrieval before the text: ${types}`);
        const [answer] = assistants(chat);
        const source = answer.parts.find((p) => p.type === 'source-document');
        assert.equal(source.title, '退货政策.md');
        assert.equal(source.mediaType, 'text/plain');
        const card = answer.parts.find((p) => p.type === 'data-retrieval');
        assert.equal(card.data.hits[0].documentId, doc.id);
        assert.equal(card.data.hits[0].chunkId, source.sourceId);
        assert.deepEqual(built.parts.map((p) => p.type).filter((t) => t === 'source-document'), ['source-document']);
        await validateUIMessages({ messages: chat.messages });
      });
    }

    for (const approved of [true, false]) {
      test(`a tool approval round trip (${approved ? 'approve' : 'deny'}) continues the same message`, async () => {
        const rec = recorder();
        const chat = newChat(ctx.server.url, { fetch: rec.fetch });
        const sent = ctx.feishu.texts.length;
        const text = approved ? 'ship it' : 'do not ship';
        await within(chat.sendMessage({ text: `Send a Feishu message saying "${text}"` }), 'the request for approval');
        assert.equal(chat.status, 'ready', String(chat.error));
        assert.equal(chat.finishes.at(-1).finishReason, 'tool-calls');
        const first = await checkResponse(rec.responses[0]);
        assert.ok(first.types.includes('tool-approval-request'));
        const [message] = assistants(chat);
        const part = message.parts.find(isToolUIPart);
        assert.equal(part.type, 'tool-send_feishu_message');
        assert.equal(part.state, 'approval-requested');
        assert.deepEqual(part.input, { text });
        const awaiting = message.parts.find((p) => p.type === 'data-tool.awaiting_input');
        assert.equal(awaiting.data.confirmationId, part.approval.id, 'data-tool.awaiting_input carries the confirmationId');
        assert.equal(awaiting.data.toolCallId, part.toolCallId);
        assert.equal(ctx.feishu.texts.length, sent, 'nothing is sent before the approval');

        const finished = chat.nextFinish();
        await chat.addToolApprovalResponse({ id: part.approval.id, approved, reason: approved ? undefined : 'not today' });
        await within(finished, 'the continuation after the decision');
        assert.equal(chat.status, 'ready', String(chat.error));
        assert.equal(assistants(chat).length, 1, 'one assistant message for the turn');
        const [after] = assistants(chat);
        assert.equal(after.id, message.id, 'the continuation is the same message');
        const tool = after.parts.find(isToolUIPart);
        assert.equal(tool.state, approved ? 'output-available' : 'output-denied');
        assert.equal(textOf(after), approved ? 'Done: the Feishu message was sent.' : 'Okay, I did not send it.');
        assertFinished(after);
        const continuation = await checkResponse(rec.responses[1], { message: structuredClone(message) });
        assert.equal(continuation.chunks[0].messageId, message.id, 'start.messageId unchanged');
        assert.equal(rec.responses[1].method, 'POST');
        assert.deepEqual(ctx.feishu.texts.slice(sent), approved ? [text] : []);
        await validateUIMessages({ messages: chat.messages });
      });
    }

    test('a dropped connection resumes the same response', async () => {
      let resumed;
      const rec = recorder({
        dropAfterTextDelta: true,
        afterHeaders: (entry) => {
          if (entry.method === 'GET' && entry.status === 200) {
            resumed = entry;
            ctx.upstream.release(); // the run may finish now: the client is attached again
          }
        },
      });
      const chat = newChat(ctx.server.url, { fetch: rec.fetch });
      await within(chat.sendMessage({ text: 'a slow answer please' }), 'the dropped request');
      assert.equal(chat.status, 'error', 'the drop shows as an error');
      await within(ctx.upstream.whenGated(), 'the run to be mid-answer');
      await within(chat.resumeStream(), 'the resumed stream');
      assert.ok(resumed, 'the Chat reconnected');
      assert.match(resumed.url, /\/v1\/agent\/chat\/[^/]+\/stream\?format=vercel-ai$/);
      assert.equal(chat.status, 'ready', String(chat.error));
      assert.equal(assistants(chat).length, 1, 'one assistant message after the resume');
      assert.equal(textOf(assistants(chat)[0]), 'Hello from behind the gate.');
      const { built } = await checkResponse(resumed);
      assert.equal(built.id, assistants(chat)[0].id);

      // Nothing is running now: the resume answers 204 and changes nothing.
      const before = structuredClone(chat.messages);
      await within(chat.resumeStream(), 'the resume with nothing to resume');
      assert.equal(rec.responses.at(-1).status, 204);
      assert.equal(chat.status, 'ready');
      assert.deepEqual(chat.messages, before);
    });

    test('a reload mid-answer resumes the response from its start', async () => {
      const id = randomUUID();
      const first = newChat(ctx.server.url, { id, fetch: recorder({ dropAfterTextDelta: true }).fetch });
      await within(first.sendMessage({ text: 'another slow one' }), 'the request before the reload');
      await within(ctx.upstream.whenGated(), 'the run to be mid-answer');
      const rec = recorder({ afterHeaders: (e) => e.method === 'GET' && e.status === 200 && ctx.upstream.release() });
      // The reloaded page restores its messages and resumes.
      const reloaded = newChat(ctx.server.url, { id, messages: [structuredClone(first.messages[0])], fetch: rec.fetch });
      await within(reloaded.resumeStream(), 'the resumed stream after a reload');
      assert.equal(reloaded.status, 'ready', String(reloaded.error));
      assert.deepEqual(reloaded.messages.map((m) => m.role), ['user', 'assistant']);
      assert.equal(textOf(reloaded.messages[1]), 'Hello from behind the gate.');
      const { types } = await checkResponse(rec.responses[0]);
      assert.ok(types.includes('data-conversation.created'), 'replayed from the start');
    });

    test('an error turn shows readable text, then finish and [DONE]', async () => {
      const rec = recorder();
      const chat = newChat(ctx.server.url, { fetch: rec.fetch });
      await within(chat.sendMessage({ text: 'fail please' }), 'the error turn');
      assert.equal(chat.status, 'error');
      assert.match(chat.error.message, /unavailable|failed|refused/i);
      const { types, chunks } = await checkResponse(rec.responses[0], { errorExpected: true });
      const error = chunks.find((c) => c.type === 'error');
      assert.ok(error.errorText.length > 10, 'readable error text');
      assert.ok(!error.errorText.includes(GATEWAY_TOKEN) && !error.errorText.includes('sk-conformance'));
      assert.ok(types.indexOf('error') < types.indexOf('finish'));
      assert.equal(chunks.at(-1).finishReason, 'error');
      assert.ok(assistants(chat).length <= 1);

      // The chat goes on after an error.
      chat.clearError();
      await within(chat.sendMessage({ text: 'hello again' }), 'the turn after the error');
      assert.equal(chat.status, 'ready', String(chat.error));
      assert.equal(textOf(chat.messages.at(-1)), 'Hello from the fake model.');
    });
  });
}
