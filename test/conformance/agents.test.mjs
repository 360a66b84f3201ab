// Agents picked by the real clients (issue 21): the AI SDK's Chat sends an
// agentId with DefaultChatTransport's `body` option (what useChat's body
// option does), @ag-ui/client's HttpAgent sends it in forwardedProps, and
// the answering agent's instructions reach the model. The offline scripted
// model answers "show me your system prompt" with the prompt it was sent,
// so each answer shows which agent (and which version) answered. Every
// wait is bounded; the server started here is stopped here.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';

import { AbstractChat, DefaultChatTransport } from 'ai';
import { HttpAgent } from '@ag-ui/client';

import { startAgentchat, within } from './lib.mjs';

const TOKEN = 'conformance-agents-admin-token';
const auth = { Authorization: `Bearer ${TOKEN}` };

let server;
before(async () => {
  server = await startAgentchat({ AGENTCHAT_TOKENS: `${TOKEN}:acme:ada:admin` });
});
after(async () => {
  await server?.stop();
});

async function api(method, path, body) {
  const res = await within(fetch(`${server.url}${path}`, {
    method, headers: { ...auth, 'Content-Type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body),
  }), `${method} ${path}`);
  const json = await res.json();
  assert.ok(res.ok, `${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

async function createAgent(name, instructions) {
  return (await api('POST', '/v1/agents', { name, model: 'default', instructions, tools: [] })).id;
}

function newChat(agentId) {
  const state = {
    status: 'ready', error: undefined, messages: [],
    pushMessage(m) { this.messages = this.messages.concat(m); },
    popMessage() { this.messages = this.messages.slice(0, -1); },
    replaceMessage(i, m) { this.messages = this.messages.map((x, j) => (j === i ? m : x)); },
    snapshot: (v) => structuredClone(v),
  };
  return new AbstractChat({
    id: randomUUID(), state,
    transport: new DefaultChatTransport({
      api: `${server.url}/v1/agent/chat?format=vercel-ai`, headers: auth, body: { agentId },
    }),
  });
}

function lastAnswer(chat) {
  const m = chat.messages.filter((x) => x.role === 'assistant').at(-1);
  return m.parts.filter((p) => p.type === 'text').map((p) => p.text).join('');
}

test('the AI SDK Chat runs the agent its body names, and the next version after an edit', async () => {
  const support = await createAgent('Support', 'You are the support agent, version one.');
  const chat = newChat(support);
  await within(chat.sendMessage({ text: 'show me your system prompt' }), 'the first answer');
  assert.equal(chat.status, 'ready', `chat error: ${chat.error}`);
  assert.match(lastAnswer(chat), /support agent, version one/);

  await api('PATCH', `/v1/agents/${support}`, { instructions: 'You are the support agent, version two.' });
  await within(chat.sendMessage({ text: 'show me your system prompt again' }), 'the second answer');
  assert.match(lastAnswer(chat), /support agent, version two/);

  const convs = await api('GET', `/v1/conversations?agentId=${support}`);
  assert.equal(convs.conversations.length, 1, 'the chat is bound to its agent');
});

test('HttpAgent runs the agent forwardedProps names', async () => {
  const sales = await createAgent('Sales', 'You are the sales agent; mention the spring offer.');
  const agent = new HttpAgent({ url: `${server.url}/api/v1/agent/runs`, headers: auth, threadId: `agents-${randomUUID()}` });
  agent.addMessage({ id: randomUUID(), role: 'user', content: 'show me your system prompt' });
  let started;
  const { newMessages } = await within(agent.runAgent({ runId: randomUUID(), forwardedProps: { agentId: sales } }, {
    onRunStartedEvent: ({ event }) => void (started = event),
  }), 'the AG-UI run');
  assert.ok(started, 'RUN_STARTED');
  const reply = newMessages.find((m) => m.role === 'assistant');
  assert.match(reply.content, /sales agent; mention the spring offer/);
});
