// Limits through the real clients (issue 24): the AI SDK's Chat
// (AbstractChat with DefaultChatTransport) and AG-UI's HttpAgent surface a
// start refused with 429 rate_limited or quota_exceeded as a readable error
// (its status, code and message, which names the limit and when it
// resets), and a run that spends its budget between model calls as the
// format's in-stream error. The refusals carry Retry-After and the IETF
// RateLimit-Policy and RateLimit headers.
//
// Two servers: one with a tenant limit of one run a minute (the refusal
// comes right after the admitted run, well inside its minute), one with a
// budget of one token a month per user (the first run of each user spends
// it during its first model call and stops before its second; every later
// start is refused). Every wait is bounded.

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { AbstractChat, DefaultChatTransport } from 'ai';
import { HttpAgent } from '@ag-ui/client';

import { startAgentchat, within } from './lib.mjs';

const ALICE = 'limits-alice-token';
const BOB = 'limits-bob-token';

// recorder wraps fetch and keeps each response's status and headers.
function recorder() {
  const responses = [];
  return {
    responses,
    fetch: async (url, init) => {
      const res = await fetch(url, init);
      responses.push({ status: res.status, headers: res.headers });
      return res;
    },
  };
}

// newChat is a real AI SDK Chat over a plain state, as in vercel.test.mjs.
function newChat(base, token, fetch) {
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
    transport: new DefaultChatTransport({ api: `${base}/v1/agent/chat?format=vercel-ai`, headers: { Authorization: `Bearer ${token}` }, fetch }),
  });
}

/**
 * runAgent runs an HttpAgent turn as an app would: failures reach its
 * onRunFailed subscriber (which handles them: stopPropagation), RUN_ERROR
 * its onRunErrorEvent.
 */
async function runAgent(base, token, text, fetchRec) {
  const agent = new HttpAgent({ url: `${base}/api/v1/agent/runs`, headers: { Authorization: `Bearer ${token}` }, threadId: randomUUID(),
    ...(fetchRec ? { fetch: fetchRec } : {}) });
  agent.messages = [{ id: randomUUID(), role: 'user', content: text }];
  const seen = { failed: null, runError: null, types: [] };
  await within(agent.runAgent({ runId: randomUUID() }, {
    onEvent: ({ event }) => void seen.types.push(event.type),
    onRunErrorEvent: ({ event }) => void (seen.runError = event),
    onRunFailed: ({ error }) => {
      seen.failed = error;
      return { stopPropagation: true };
    },
  }), 'the AG-UI run');
  seen.messages = agent.messages;
  return seen;
}

/** checkHeaders checks a 429's Retry-After and RateLimit headers for the named policy. */
function checkHeaders(status, headers, policy) {
  assert.equal(status, 429);
  const retry = Number(headers.get('retry-after'));
  assert.ok(Number.isInteger(retry) && retry >= 1, `Retry-After ${headers.get('retry-after')}`);
  assert.match(headers.get('ratelimit-policy') ?? '', new RegExp(`^"${policy}";q=\\d+;w=\\d+$`));
  assert.equal(headers.get('ratelimit'), `"${policy}";r=0;t=${retry}`);
}

describe('a start refused by runs per minute', { timeout: 60_000 }, () => {
  let server;
  before(async () => {
    server = await startAgentchat({ AGENTCHAT_TOKENS: `${ALICE}:acme:alice`, AGENTCHAT_RUNS_PER_MINUTE: '1' });
  });
  after(async () => {
    await server?.stop();
  });

  test('the AI SDK Chat shows the 429 rate_limited; so does HttpAgent', async () => {
    const rec = recorder();
    const chat = newChat(server.url, ALICE, rec.fetch);
    await within(chat.sendMessage({ text: 'hello' }), 'the admitted turn');
    assert.equal(chat.status, 'ready', String(chat.error));

    await within(chat.sendMessage({ text: 'hello again' }), 'the refused turn');
    assert.equal(chat.status, 'error');
    assert.equal(chat.error.statusCode, 429);
    const body = JSON.parse(chat.error.responseBody);
    assert.equal(body.error.code, 'rate_limited');
    assert.match(body.error.message, /1 runs per minute is reached; it resets at \d{4}-\d\d-\d\dT/);
    assert.equal(body.error.limit.kind, 'runs_per_minute');
    assert.match(chat.error.message, /runs per minute/, 'the error the app gets names the limit');
    checkHeaders(rec.responses[1].status, rec.responses[1].headers, 'tenant-runs_per_minute');

    const agentRec = recorder();
    const seen = await runAgent(server.url, ALICE, 'hi', agentRec.fetch);
    assert.ok(seen.failed, 'HttpAgent failed the run');
    assert.equal(seen.failed.status, 429);
    assert.equal(seen.failed.payload.error.code, 'rate_limited');
    assert.match(seen.failed.message, /^HTTP 429: .*runs per minute is reached/);
    checkHeaders(agentRec.responses[0].status, agentRec.responses[0].headers, 'tenant-runs_per_minute');
  });
});

describe('a budget spent: between model calls, then at the start', { timeout: 60_000 }, () => {
  let server;
  let dir;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'agentchat-limits-'));
    const engines = join(dir, 'engines.json');
    // Every user of every tenant: one token a month.
    writeFileSync(engines, JSON.stringify({ limits: { tenants: { '*': { users: { '*': { tokensPerMonth: 1 } } } } } }));
    server = await startAgentchat({ AGENTCHAT_TOKENS: `${ALICE}:acme:alice,${BOB}:acme:bob`, AGENTCHAT_ENGINE_CONFIG: engines });
  });
  after(async () => {
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('HttpAgent: RUN_ERROR quota_exceeded after the first model call, then a 429', async () => {
    // The scripted model answers this with a tool call first: the run stops
    // before its second call, its tool call kept.
    const seen = await runAgent(server.url, ALICE, 'what time is it in Tokyo?');
    assert.equal(seen.failed, null, String(seen.failed));
    assert.ok(seen.runError, `a RUN_ERROR: ${seen.types}`);
    assert.equal(seen.runError.code, 'quota_exceeded');
    assert.match(seen.runError.message, /your limit of 1 tokens per month is reached; it resets at /);
    assert.ok(seen.types.includes('TOOL_CALL_RESULT'), `the first call's tool call ran: ${seen.types}`);
    assert.ok(seen.messages.some((m) => m.role === 'tool'), 'the partial answer is in the agent\'s messages');

    const rec = recorder();
    const refused = await runAgent(server.url, ALICE, 'hi', rec.fetch);
    assert.equal(refused.failed?.status, 429);
    assert.equal(refused.failed.payload.error.code, 'quota_exceeded');
    assert.match(refused.failed.payload.error.message, /your limit of 1 tokens per month is reached/);
    checkHeaders(rec.responses[0].status, rec.responses[0].headers, 'user-tokens_per_month');
  });

  test('AI SDK Chat: an error chunk after the first model call, then a 429', async () => {
    const rec = recorder();
    const chat = newChat(server.url, BOB, rec.fetch);
    await within(chat.sendMessage({ text: 'what time is it in Tokyo?' }), 'the turn over budget');
    assert.equal(chat.status, 'error');
    assert.match(chat.error.message, /your limit of 1 tokens per month is reached/);
    const parts = chat.messages.at(-1).parts;
    assert.ok(parts.some((p) => p.type.startsWith('tool-') && p.state === 'output-available'), `the partial answer kept: ${JSON.stringify(parts)}`);

    await within(chat.sendMessage({ text: 'hi' }), 'the refused turn');
    assert.equal(chat.status, 'error');
    assert.equal(chat.error.statusCode, 429);
    assert.equal(JSON.parse(chat.error.responseBody).error.code, 'quota_exceeded');
    checkHeaders(rec.responses[1].status, rec.responses[1].headers, 'user-tokens_per_month');
  });
});
