// A person steers a conversation through the real client libraries (issue
// 22): edits and regenerates through the AI SDK's Chat (AbstractChat, the
// class useChat wraps, with DefaultChatTransport) and through AG-UI's
// HttpAgent (whose messages leave the stored branch, or end at a question
// whose answer they dropped). Every branch stays in the server's tree (?branch=all), the
// history shows the active branch, PUT …/active switches back, and the model
// is sent the active branch only: the fake model numbers its answers and
// records the context of each request.
//
// Every wait is bounded; every process and server started here is stopped here.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { AbstractChat, DefaultChatTransport } from 'ai';
import { HttpAgent } from '@ag-ui/client';

import { close, fakeServer, listen, startAgentchat, within } from './lib.mjs';

const TOKEN = 'conformance-steering-token';
const auth = { Authorization: `Bearer ${TOKEN}` };

let server;
let model;

// countingModel is an OpenAI-compatible upstream that answers "Answer <n>."
// (n counts its requests) and keeps each request's context: the contents
// of its messages, the system prompt left out, joined by "|".
async function countingModel() {
  const fake = { contexts: [] };
  const srv = fakeServer(async (req, res) => {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    if (req.method !== 'POST' || req.url !== '/v1/chat/completions') return res.writeHead(404).end();
    const body = JSON.parse(raw);
    const text = (m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content ?? ''));
    fake.contexts.push((body.messages ?? []).filter((m) => m.role !== 'system').map(text).join('|'));
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const send = (delta, finish = null) =>
      res.write(`data: ${JSON.stringify({ id: 'chatcmpl-fake', object: 'chat.completion.chunk', created: 1, model: body.model,
        choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`);
    send({ role: 'assistant', content: '' });
    send({ content: `Answer ${fake.contexts.length}.` });
    send({}, 'stop');
    res.end('data: [DONE]\n\n');
  });
  fake.url = await listen(srv);
  fake.close = () => close(srv);
  return fake;
}

before(async () => {
  model = await countingModel();
  server = await startAgentchat({
    AGENTCHAT_TOKENS: `${TOKEN}:acme:alice`,
    AGENTCHAT_LLM: 'openai', OPENAI_BASE_URL: `${model.url}/v1`, OPENAI_API_KEY: 'sk-conformance',
    AGENTCHAT_MODEL: 'fake-model', AGENTCHAT_LLM_RETRIES: '-1', AGENTCHAT_RETRIEVAL: 'off',
  });
});

after(async () => {
  await server?.stop();
  await model?.close();
});

async function api(path, init = {}) {
  const res = await fetch(`${server.url}${path}`, {
    ...init,
    headers: { ...auth, 'Content-Type': 'application/json' },
    signal: AbortSignal.timeout(15_000),
  });
  const body = await res.json();
  assert.equal(res.status, 200, `${init.method ?? 'GET'} ${path}: ${JSON.stringify(body)}`);
  return body;
}

const messages = async (conv, all = false) => (await api(`/v1/conversations/${conv}/messages?limit=100${all ? '&branch=all' : ''}`)).messages;
const contents = (msgs) => msgs.map((m) => m.content).join('|');

// conversationTitled finds the conversation a client started, by its title
// (the first message).
async function conversationTitled(title) {
  const { conversations } = await api('/v1/conversations?limit=100');
  const found = conversations.filter((c) => c.title === title);
  assert.equal(found.length, 1, `one conversation titled ${title}`);
  return found[0].id;
}

// newChat is a real AI SDK Chat: AbstractChat with a plain state, as
// @ai-sdk/react's Chat is with React state.
function newChat() {
  const state = {
    status: 'ready',
    error: undefined,
    messages: [],
    pushMessage(m) { this.messages = this.messages.concat(m); },
    popMessage() { this.messages = this.messages.slice(0, -1); },
    replaceMessage(i, m) { this.messages = this.messages.map((x, j) => (j === i ? m : x)); },
    snapshot: (v) => structuredClone(v),
  };
  return new AbstractChat({
    id: randomUUID(),
    state,
    transport: new DefaultChatTransport({ api: `${server.url}/v1/agent/chat?format=vercel-ai`, headers: auth }),
  });
}

const textOf = (m) => m.parts.filter((p) => p.type === 'text').map((p) => p.text).join('');

test('AI SDK Chat: regenerate and edit keep every branch; the history and the model follow the active one', async () => {
  const chat = newChat();
  const first = `first question ${randomUUID()}`;
  const ask = async (what, p) => {
    await within(p, what);
    assert.equal(chat.status, 'ready', `${what}: ${chat.error}`);
  };
  const asked = model.contexts.length;
  await ask('the first turn', chat.sendMessage({ text: first }));
  await ask('the second turn', chat.sendMessage({ text: 'second question' }));
  const conv = await conversationTitled(first);
  const [, a1] = chat.messages;

  // Regenerate the last answer: the Chat drops it and gets another.
  await ask('regenerate', chat.regenerate());
  assert.equal(chat.messages.length, 4);
  assert.equal(textOf(chat.messages[3]), `Answer ${asked + 3}.`);
  let active = await messages(conv);
  assert.equal(contents(active), `${first}|${textOf(a1)}|second question|Answer ${asked + 3}.`);
  const [, , u2, a3] = active;
  assert.equal(a3.parentId, u2.id);
  assert.equal(a3.siblingIds.length, 2, 'the old answer is the new one\'s sibling');
  assert.equal(active.filter((m) => m.role === 'user').length, 2, 'no repeated question');

  // Edit the second question: sendMessage with its id replaces it in the Chat.
  await ask('edit', chat.sendMessage({ text: 'second question, edited', messageId: chat.messages[2].id }));
  assert.deepEqual(chat.messages.map(textOf), [first, textOf(a1), 'second question, edited', `Answer ${asked + 4}.`]);
  active = await messages(conv);
  assert.equal(contents(active), chat.messages.map(textOf).join('|'), 'the history is the branch the Chat shows');
  assert.deepEqual(active[2].siblingIds, [u2.id, active[2].id], 'the edit is the second version of the question');

  // Every branch is kept.
  const all = await messages(conv, true);
  assert.deepEqual(all.filter((m) => m.role === 'user').map((m) => m.content), [first, 'second question', 'second question, edited']);
  assert.equal(all.filter((m) => m.role === 'assistant').length, 4, 'every answer is kept');
  assert.deepEqual(all.filter((m) => m.parentId === u2.id).map((m) => m.content), [`Answer ${asked + 2}.`, `Answer ${asked + 3}.`]);

  // The model was sent the active branch each time.
  assert.deepEqual(model.contexts.slice(asked), [
    first,
    `${first}|${textOf(a1)}|second question`,
    `${first}|${textOf(a1)}|second question`,
    `${first}|${textOf(a1)}|second question, edited`,
  ]);

  // Back to the first version of the question: its latest answer comes with it.
  await api(`/v1/conversations/${conv}/active`, { method: 'PUT', body: JSON.stringify({ messageId: u2.id }) });
  assert.equal(contents(await messages(conv)), `${first}|${textOf(a1)}|second question|Answer ${asked + 3}.`);
});

test('AG-UI HttpAgent: messages that leave the stored branch edit it, messages that drop the last answer regenerate it; every branch is kept, the model sees the active one', async () => {
  const a = new HttpAgent({ url: `${server.url}/api/v1/agent/runs`, headers: auth, threadId: `steer-${randomUUID()}` });
  const first = `first question ${randomUUID()}`;
  const turn = async (what) => {
    const { newMessages } = await within(a.runAgent({ runId: randomUUID() }), what);
    const reply = newMessages.find((m) => m.role === 'assistant');
    assert.ok(reply, `${what}: an answer in ${JSON.stringify(newMessages)}`);
    return reply.content;
  };
  const asked = model.contexts.length;
  a.addMessage({ id: randomUUID(), role: 'user', content: first });
  const a1 = await turn('the first turn');
  a.addMessage({ id: randomUUID(), role: 'user', content: 'second question' });
  await turn('the second turn');
  const conv = await conversationTitled(first);
  const before = await messages(conv);
  assert.equal(contents(before), `${first}|${a1}|second question|Answer ${asked + 2}.`);

  // The person edits the second message: the client's history now holds
  // its new text and nothing after it. (A history of one message is a new
  // turn: a client that sends only its new message looks the same.)
  a.setMessages([...a.messages.slice(0, 2), { ...a.messages[2], content: 'second question, edited' }]);
  const a3 = await turn('the edit');
  let active = await messages(conv);
  assert.equal(contents(active), `${first}|${a1}|second question, edited|${a3}`);
  assert.equal(active[2].parentId, before[1].id);
  assert.deepEqual(active[2].siblingIds, [before[2].id, active[2].id], 'the edit is the second message\'s second version');

  // The next turn carries the edited history and continues the edited branch.
  a.addMessage({ id: randomUUID(), role: 'user', content: 'third question' });
  const a4 = await turn('the turn after the edit');
  active = await messages(conv);
  assert.equal(contents(active), `${first}|${a1}|second question, edited|${a3}|third question|${a4}`);

  // Regenerate: the person drops the last answer and runs again.
  a.setMessages(a.messages.slice(0, -1));
  const a5 = await turn('the regenerate');
  assert.notEqual(a5, a4);
  active = await messages(conv);
  assert.equal(contents(active), `${first}|${a1}|second question, edited|${a3}|third question|${a5}`, 'no repeated question');
  assert.equal(active[5].siblingIds.length, 2, 'the dropped answer is the new one\'s sibling');

  const all = await messages(conv, true);
  assert.equal(all.length, 9, 'every message of every branch is kept');
  assert.equal(contents(all.filter((m) => m.role === 'user')), `${first}|second question|second question, edited|third question`);
  assert.deepEqual(model.contexts.slice(asked), [
    first,
    `${first}|${a1}|second question`,
    `${first}|${a1}|second question, edited`,
    `${first}|${a1}|second question, edited|${a3}|third question`,
    `${first}|${a1}|second question, edited|${a3}|third question`,
  ]);

  // The old branch is a PUT away.
  await api(`/v1/conversations/${conv}/active`, { method: 'PUT', body: JSON.stringify({ messageId: before[2].id }) });
  assert.equal(contents(await messages(conv)), contents(before));
});
