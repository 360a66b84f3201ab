// AG-UI conformance across client generations: every canonical scenario
// through @ag-ui/client 1.0.0 and through 0.0.59, the client CopilotKit
// 1.7x ships (pinned here under the npm alias @ag-ui/client-0.0.59):
// text, a server tool call and its result, reasoning, a frontend tool, a
// confirmation (shown by the on_interrupt CUSTOM event CopilotKit listens
// for, answered with forwardedProps.command.resume as CopilotKit answers
// it), a failure, a cancel, and the thread stream resumed with
// Last-Event-ID. Each generation's own HttpAgent, transport functions and
// verifyEvents read the streams, and its own schemas parse every event. Any
// warning or error either client logs fails the test. Every wait is bounded.

import { test, before, after, beforeEach, afterEach } from "node:test";
import assert from "node:assert/strict";

import * as v1 from "@ag-ui/client";
import * as v0 from "@ag-ui/client-0.0.59";
import { EventSchemas as schemas1 } from "@ag-ui/core/schemas";
import { EventSchemas as schemas0 } from "@ag-ui/core-0.0.59";
import { from, lastValueFrom, tap, takeWhile, toArray } from "rxjs";

import { startAgentchat } from "./lib.mjs";

const TOKEN = "generations-token-0123456789";
const BOUND_MS = 15_000;
const auth = { Authorization: `Bearer ${TOKEN}` };

// protocolVersion is what each generation's HttpAgent declares in its
// RunAgentInput (0.0.59 declares none), and what the thread stream is told
// with ?protocolVersion=: a client before 1.0 gets RUN_ERROR for a cancel
// and a RUN_FINISHED without outcome fields, which its schemas accept.
const generations = [
  { name: "1.0.0", client: v1, schemas: schemas1, protocolVersion: "1.0.0" },
  { name: "0.0.59", client: v0, schemas: schemas0, protocolVersion: "0.0.59" },
];

let server;
before(async () => {
  server = await startAgentchat({
    AGENTCHAT_TOKENS: `${TOKEN}:conformance:tester`,
    AGENTCHAT_TOOL_CONFIRM: "get_current_time=always",
    AGENTCHAT_PING_INTERVAL: "100ms",
  });
});
after(async () => {
  await server?.stop();
});

let complaints = [];
const originals = { warn: console.warn, error: console.error };
beforeEach(() => {
  complaints = [];
  console.warn = (...a) => complaints.push(["warn", ...a].join(" "));
  console.error = (...a) => complaints.push(["error", ...a].join(" "));
});
afterEach(() => {
  console.warn = originals.warn;
  console.error = originals.error;
  assert.deepEqual(complaints, [], "the AG-UI client logged warnings or errors");
});

function check(gen, ev) {
  const r = gen.schemas.safeParse(ev);
  assert.ok(r.success, `${gen.name}: schema error on ${ev.type}: ${r.error?.message}\n${JSON.stringify(ev)}`);
}

function agent(gen, threadId) {
  return new gen.client.HttpAgent({ url: `${server.url}/api/v1/agent/runs`, headers: auth, threadId });
}

/** runAgent, collecting (and schema-checking) every event the client applied. */
async function run(gen, a, params = {}) {
  const events = [];
  const result = await a.runAgent(params, {
    onEvent: ({ event }) => {
      check(gen, event);
      events.push(event);
    },
  });
  return { ...result, events };
}

const types = (events) => events.map((e) => e.type);

/**
 * Reads the thread's seed stream with the generation's transport functions
 * until stop(event) says so; returns events (passed through its
 * verifyEvents unless verify is false) and each event's SSE id.
 */
async function readThread(gen, threadId, { headers = {}, stop, verify = true }) {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(new Error(`no end within ${BOUND_MS} ms`)), BOUND_MS);
  const ids = [];
  let text = "";
  const decoder = new TextDecoder();
  const url = `${server.url}/api/v1/agent/runs/${threadId}/events?protocolVersion=${gen.protocolVersion}`;
  const http$ = gen.client.runHttpRequest(() => fetch(url, { headers: { ...auth, Accept: "text/event-stream", ...headers }, signal: abort.signal })).pipe(
    tap((e) => {
      if (e.type !== "data" || !e.data) return;
      text += decoder.decode(e.data, { stream: true });
      const blocks = text.split("\n\n");
      text = blocks.pop();
      for (const block of blocks) {
        const lines = block.split("\n");
        if (!lines.some((l) => l.startsWith("data:"))) continue;
        ids.push(lines.find((l) => l.startsWith("id:"))?.slice(3).trim() ?? "");
      }
    }),
  );
  let n = 0;
  let events$ = gen.client.transformHttpEventStream(http$).pipe(
    tap((ev) => check(gen, ev)),
    takeWhile((ev) => !stop(ev, ids[n++]), true),
  );
  if (verify) events$ = events$.pipe(gen.client.verifyEvents());
  try {
    const events = await lastValueFrom(events$.pipe(toArray()));
    return { events, ids: ids.slice(0, events.length) };
  } finally {
    clearTimeout(timer);
    abort.abort();
  }
}

async function post(path, body) {
  const res = await fetch(`${server.url}${path}`, {
    method: "POST",
    headers: { ...auth, "Content-Type": "application/json" },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(BOUND_MS),
  });
  return { status: res.status, body: await res.json() };
}

for (const gen of generations) {
  const id = (s) => `gen-${gen.name.replaceAll(".", "")}-${s}`;

  test(`${gen.name}: text`, async () => {
    const a = agent(gen, id("text"));
    a.addMessage({ id: id("text-u1"), role: "user", content: "Hello from an older client" });
    const { events, newMessages } = await run(gen, a, { runId: id("text-r1") });
    assert.equal(events[0].type, "RUN_STARTED");
    assert.equal(events.at(-1).type, "RUN_FINISHED");
    for (const t of ["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END"]) assert.ok(types(events).includes(t), `no ${t}`);
    const reply = newMessages.find((m) => m.role === "assistant");
    assert.match(reply.content, /Hello from an older client/);
  });

  test(`${gen.name}: a server tool call and its result`, async () => {
    const a = agent(gen, id("tool"));
    a.addMessage({ id: id("tool-u1"), role: "user", content: "calculate (3+4)*5" });
    const { events, newMessages } = await run(gen, a, { runId: id("tool-r1") });
    for (const t of ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT"]) assert.ok(types(events).includes(t), `no ${t}: ${types(events)}`);
    const start = events.find((e) => e.type === "TOOL_CALL_START");
    assert.equal(start.toolCallName, "calculator");
    const call = a.messages.flatMap((m) => m.toolCalls ?? []).find((c) => c.id === start.toolCallId);
    assert.deepEqual(JSON.parse(call.function.arguments), { expression: "(3+4)*5" });
    assert.ok(a.messages.some((m) => m.role === "tool" && m.toolCallId === start.toolCallId && /35/.test(m.content)));
    assert.ok(newMessages.some((m) => m.role === "assistant" && /35/.test(m.content ?? "")), JSON.stringify(newMessages));
  });

  test(`${gen.name}: reasoning`, async () => {
    const a = agent(gen, id("think"));
    a.addMessage({ id: id("think-u1"), role: "user", content: "think about it, then answer" });
    const { events } = await run(gen, a, { runId: id("think-r1") });
    for (const t of ["REASONING_START", "REASONING_MESSAGE_CONTENT", "REASONING_END", "TEXT_MESSAGE_CONTENT"]) assert.ok(types(events).includes(t), `no ${t}: ${types(events)}`);
    assert.equal(events.at(-1).type, "RUN_FINISHED");
  });

  // (an AG-UI 1.0 field); the server must leave it out for older clients.
  test(`${gen.name}: a frontend tool answered by the client continues the run`, async () => {
    const a = agent(gen, id("front"));
    const tools = [{ name: "pick_colour", description: "Pick a colour.", parameters: { type: "object", properties: { colour: { type: "string" } }, required: ["colour"] } }];
    a.addMessage({ id: id("front-u1"), role: "user", content: 'call pick_colour with "teal"' });
    const first = await run(gen, a, { runId: id("front-r1"), tools });
    const start = first.events.find((e) => e.type === "TOOL_CALL_START");
    assert.equal(start?.toolCallName, "pick_colour", `${types(first.events)}`);
    assert.equal(first.events.at(-1).type, "RUN_FINISHED");
    assert.equal(first.newMessages.filter((m) => m.role === "tool").length, 0, "nobody answered the call but the client");
    const call = a.messages.flatMap((m) => m.toolCalls ?? []).find((c) => c.id === start.toolCallId);
    assert.deepEqual(JSON.parse(call.function.arguments), { colour: "teal" });

    a.addMessage({ id: id("front-t1"), role: "tool", toolCallId: start.toolCallId, content: "picked teal" });
    const second = await run(gen, a, { runId: id("front-r2"), tools });
    const reply = second.newMessages.find((m) => m.role === "assistant");
    assert.equal(reply.content, "The pick_colour tool returned: picked teal");
  });

  test(`${gen.name}: a confirmation through on_interrupt and forwardedProps.command.resume`, async () => {
    const a = agent(gen, id("confirm"));
    a.addMessage({ id: id("confirm-u1"), role: "user", content: "What time is it in Tokyo?" });
    const first = await run(gen, a, { runId: id("confirm-r1") });
    const custom = first.events.filter((e) => e.type === "CUSTOM" && e.name === "on_interrupt");
    assert.equal(custom.length, 1, `${types(first.events)}`);
    const value = custom[0].value;
    const call = first.events.find((e) => e.type === "TOOL_CALL_START");
    assert.equal(value.toolCallId, call.toolCallId);
    assert.equal(value.toolName, "get_current_time");
    assert.deepEqual(value.args, { timezone: "Asia/Tokyo" });
    assert.ok(value.id && value.message && value.expiresAt, JSON.stringify(value));
    assert.equal(first.events.at(-1).type, "RUN_FINISHED");
    assert.equal(first.events.at(-2), custom[0], "on_interrupt comes just before RUN_FINISHED");
    assert.ok(!first.events.some((e) => e.type === "TOOL_CALL_RESULT"), "nothing ran before the decision");

    // CopilotKit's resume: the same run id, the decision and the event.
    // (A bare HttpAgent that read the outcome holds the interrupt and
    // insists on AG-UI 1.0's resume; CopilotKit's on_interrupt path answers
    // with forwardedProps.command instead, as here.)
    a.pendingInterrupts = [];
    const second = await run(gen, a, { runId: id("confirm-r1"), forwardedProps: { command: { resume: { approved: true }, interruptEvent: value } } });
    assert.equal(second.events[0].type, "RUN_STARTED");
    const results = second.events.filter((e) => e.type === "TOOL_CALL_RESULT");
    assert.equal(results.length, 1);
    assert.equal(results[0].toolCallId, call.toolCallId);
    assert.match(results[0].content, /Asia\/Tokyo/);
    assert.equal(second.events.at(-1).type, "RUN_FINISHED");
    assert.ok(second.newMessages.some((m) => m.role === "assistant" && /current time in Asia\/Tokyo/i.test(m.content ?? "")));

    // The same confirmation cannot be decided again, and a resume that
    // names no open confirmation is refused: neither starts a run.
    const again = await post("/api/v1/agent/runs", { threadId: id("confirm"), runId: id("confirm-r3"), messages: [], forwardedProps: { command: { resume: "reject", interruptEvent: value } } });
    assert.equal(again.status, 409, JSON.stringify(again.body));
    assert.equal(again.body.error.code, "interrupt_already_resolved");
    const none = await post("/api/v1/agent/runs", { threadId: id("confirm"), runId: id("confirm-r4"), messages: [], forwardedProps: { command: { resume: "approve" } } });
    assert.equal(none.status, 404, JSON.stringify(none.body));
    assert.equal(none.body.error.code, "interrupt_not_found");
  });

  test(`${gen.name}: a failure is RUN_ERROR`, async () => {
    const a = agent(gen, id("fail"));
    a.addMessage({ id: id("fail-u1"), role: "user", content: "fail please" });
    const events = [];
    let failure;
    await a.runAgent({ runId: id("fail-r1") }, { onEvent: ({ event }) => void events.push(event) }).catch((err) => (failure = err));
    const end = events.at(-1);
    assert.equal(end?.type, "RUN_ERROR", `${types(events)}`);
    assert.ok(end.message, JSON.stringify(end));
    for (const ev of events) check(gen, ev);
    // Whether runAgent rejects on RUN_ERROR is the client's business; if it
    // does, it names the run's error.
    if (failure) assert.match(String(failure.message ?? failure), /fail|error/i);
    complaints = complaints.filter((c) => !/fail please|offline demo model|RUN_ERROR|Agent execution failed/i.test(c));
  });

  test(`${gen.name}: a cancel, and the thread stream resumed from every Last-Event-ID`, async () => {
    const thread = id("cancel");
    const accepted = await post("/api/v1/agent/runs", { threadId: thread, runId: id("cancel-r1"), messages: [{ id: id("cancel-u1"), role: "user", content: "What time is it in London?" }] });
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
    // The run waits for a confirmation; cancel it there.
    await readThread(gen, thread, { stop: (ev) => ev.type === "RUN_FINISHED" });
    const cancelled = await post(`/v1/agent/runs/${accepted.body.taskId}/cancel`, {});
    assert.ok(cancelled.status < 300, JSON.stringify(cancelled.body));
    // AG-UI 1.0 ends a cancelled run with RUN_FINISHED's cancelled outcome;
    // before 1.0 (no such outcome in the schema) it is RUN_ERROR "cancelled".
    const v1 = gen.protocolVersion === "1.0.0";
    const isEnd = v1 ? (ev) => ev.type === "RUN_FINISHED" && ev.outcome?.type === "cancelled" : (ev) => ev.type === "RUN_ERROR";
    const full = await readThread(gen, thread, { stop: isEnd });
    const end = full.events.at(-1);
    if (v1) {
      assert.equal(end.type, "RUN_FINISHED");
      assert.deepEqual(end.outcome, { type: "cancelled" });
    } else {
      assert.equal(end.type, "RUN_ERROR");
      assert.equal(end.code, "cancelled");
    }
    assert.ok(full.events.some((e) => e.type === "CUSTOM" && e.name === "on_interrupt"));

    const lastID = full.ids.at(-1);
    for (const [i, evID] of full.ids.slice(0, -1).entries()) {
      const rest = await readThread(gen, thread, { headers: { "Last-Event-ID": evID }, verify: false, stop: (ev, at) => isEnd(ev) && at === lastID });
      assert.deepEqual(rest.events, full.events.slice(i + 1), `continuation after ${evID}`);
      await lastValueFrom(from([...full.events.slice(0, i + 1), ...rest.events]).pipe(gen.client.verifyEvents(), toArray()));
    }
  });
}
