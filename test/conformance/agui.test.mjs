// AG-UI conformance: agentchat against the real @ag-ui/client 1.0.0.
//
// The suite starts the agentchat binary (built by .ci/run into .bin/) on a
// free 127.0.0.1 port with a temporary data directory and the offline
// scripted model, and checks, with the client's own functions:
//   (a) HttpAgent.runAgent() against the single endpoint POST /api/v1/agent/runs;
//   (b) a seed-001 client: 202, then GET /api/v1/agent/runs/{threadId}/events
//       read through runHttpRequest + transformHttpEventStream + verifyEvents;
//   (c) reconnecting with Last-Event-ID (and ?after=) from every id: the
//       continuation, with what came before, passes verifyEvents;
//   (d) an interrupt and resume round trip through HttpAgent;
//   (e) the day history, and history + events merged without duplicates;
//   (f) a frontend tool round trip through HttpAgent, against a fake
//       OpenAI-compatible upstream (the scripted model calls no client tools);
//   (g) shared state: RunAgentInput.state kept per thread, STATE_SNAPSHOT at
//       the start of a run and with ?snapshot=messages, the agent's
//       update_state tool as STATE_DELTA that HttpAgent applies.
// Every event is also parsed with @ag-ui/core's schemas. Any warning or
// error the client logs fails the test, as does any dropped event. Every
// wait is bounded.

import { test, before, after, beforeEach, afterEach } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";

import { HttpAgent, runHttpRequest, transformHttpEventStream, verifyEvents } from "@ag-ui/client";
import { EventSchemas } from "@ag-ui/core/schemas";
import { from, lastValueFrom, tap, takeWhile, toArray } from "rxjs";

import { startAgentchat, within, fakeServer, listen, close } from "./lib.mjs";

const TOKEN = "conformance-token-0123456789";
const BOUND_MS = 15_000; // the longest any one request may take

let server; // from startAgentchat: { url, output, stop }

// ---------- the server under test ----------

// startServer starts agentchat with this suite's settings, extraEnv on top.
function startServer(extraEnv = {}) {
  return startAgentchat({
    AGENTCHAT_TOKENS: `${TOKEN}:conformance:tester`,
    AGENTCHAT_TOOL_CONFIRM: "get_current_time=always",
    AGENTCHAT_PING_INTERVAL: "100ms",
    AGENTCHAT_HISTORY_TIME_ZONE: "Asia/Shanghai",
    ...extraEnv,
  });
}

before(async () => {
  server = await startServer();
});
after(async () => {
  await server?.stop();
});

// ---------- warnings fail the test ----------

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

// ---------- helpers ----------

const auth = { Authorization: `Bearer ${TOKEN}` };

function schemaCheck(ev) {
  const r = EventSchemas.safeParse(ev);
  assert.ok(r.success, `schema error on ${ev.type}: ${r.error?.message}\n${JSON.stringify(ev)}`);
}

function isEnd(ev) {
  return ev.type === "RUN_FINISHED" || ev.type === "RUN_ERROR";
}

/**
 * Reads an AG-UI SSE GET stream with the client's own transport functions,
 * until `stop(event, id)` says so. It returns the events (verified by
 * verifyEvents unless verify is false) and the SSE id of each: the ids come
 * from the same bytes the client parses, and there must be one per event.
 */
async function readEvents(url, { headers = {}, stop, verify = true } = {}) {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(new Error(`no end within ${BOUND_MS} ms: ${url}`)), BOUND_MS);
  const ids = [];
  let text = "";
  const decoder = new TextDecoder();
  const http$ = runHttpRequest(() => fetch(url, { headers: { ...auth, Accept: "text/event-stream", ...headers }, signal: abort.signal })).pipe(
    tap((e) => {
      if (e.type !== "data" || !e.data) return;
      text += decoder.decode(e.data, { stream: true });
      const blocks = text.split("\n\n");
      text = blocks.pop();
      for (const block of blocks) {
        const lines = block.split("\n");
        if (!lines.some((l) => l.startsWith("data:"))) continue; // comments, retry hints
        const id = lines.find((l) => l.startsWith("id:"));
        ids.push(id ? id.slice(3).trim() : "");
      }
    }),
  );
  // The id of an event is parsed (above) from the chunk the client parses
  // the event from, so it is known when the event arrives.
  let n = 0;
  let events$ = transformHttpEventStream(http$).pipe(
    tap(schemaCheck),
    takeWhile((ev) => !stop(ev, ids[n++]), true),
  );
  if (verify) events$ = events$.pipe(verifyEvents());
  try {
    const events = await lastValueFrom(events$.pipe(toArray()));
    assert.ok(ids.length >= events.length, `${events.length} events but ${ids.length} data frames`);
    return { events, ids: ids.slice(0, events.length) };
  } finally {
    clearTimeout(timer);
    abort.abort();
  }
}

/**
 * Whether SSE id a comes before b in a stream: ids are "<seq>" or
 * "<seq>.<k>", compared as (seq, k) with the bare seq after its ".k" frames
 * (it completes the event). Never compare them as decimal numbers.
 */
function idBefore(a, b) {
  const pos = (id) => {
    const [seq, k] = id.split(".");
    return [Number(seq), k === undefined ? Infinity : Number(k)];
  };
  const [as, ak] = pos(a);
  const [bs, bk] = pos(b);
  return as < bs || (as === bs && ak < bk);
}

/** Runs a list of events through the client's verifier. */
async function verifyAll(events) {
  return lastValueFrom(from(events).pipe(verifyEvents(), toArray()));
}

async function postRun(input) {
  const res = await fetch(`${server.url}/api/v1/agent/runs`, {
    method: "POST",
    headers: { ...auth, "Content-Type": "application/json" },
    body: JSON.stringify(input),
    signal: AbortSignal.timeout(BOUND_MS),
  });
  const body = await res.json();
  assert.equal(res.status, 202, JSON.stringify(body));
  return body;
}

async function getJSON(pathAndQuery) {
  const res = await fetch(`${server.url}${pathAndQuery}`, { headers: auth, signal: AbortSignal.timeout(BOUND_MS) });
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  return body;
}

function agent(threadId) {
  return new HttpAgent({ url: `${server.url}/api/v1/agent/runs`, headers: auth, threadId });
}

/** runAgent, collecting every event the client applied. */
async function run(a, params) {
  const events = [];
  const result = await a.runAgent(params, { onEvent: ({ event }) => void events.push(event) });
  return { ...result, events };
}

function types(events) {
  return events.map((e) => e.type);
}

// ---------- (a) the single endpoint ----------

test("HttpAgent chats through the single endpoint", async () => {
  const a = agent("conf-a");
  a.addMessage({ id: "conf-a-u1", role: "user", content: "Hello from the AG-UI client" });
  const { events, result, newMessages } = await run(a, { runId: "conf-a-r1" });
  assert.equal(events[0].type, "RUN_STARTED");
  assert.equal(events[0].threadId, "conf-a");
  assert.equal(events[0].runId, "conf-a-r1");
  assert.equal(events.at(-1).type, "RUN_FINISHED");
  const steps = events.filter((e) => e.type === "STEP_STARTED").map((e) => e.stepName);
  assert.deepEqual(steps, ["router", "worker"]);
  const reply = newMessages.find((m) => m.role === "assistant");
  assert.ok(reply && reply.content.includes("Hello from the AG-UI client"), JSON.stringify(newMessages));
  assert.equal(result.answer, reply.content, "RUN_FINISHED.result carries the structured answer");
  assert.ok(result.ui_schema && Array.isArray(result.ui_schema.blocks));

  // A second turn on the same agent continues the thread.
  a.addMessage({ id: "conf-a-u2", role: "user", content: "And a second message" });
  const second = await run(a, { runId: "conf-a-r2" });
  assert.equal(second.events[0].runId, "conf-a-r2");
  assert.ok(second.newMessages.some((m) => m.role === "assistant" && m.content.includes("And a second message")));
});

// ---------- (d) interrupt and resume ----------

test("HttpAgent approves a confirmation through resume", async () => {
  const a = agent("conf-d");
  a.addMessage({ id: "conf-d-u1", role: "user", content: "What time is it in Tokyo?" });
  const first = await run(a, { runId: "conf-d-r1" });
  const end = first.events.at(-1);
  assert.equal(end.type, "RUN_FINISHED");
  assert.equal(end.outcome?.type, "interrupt", JSON.stringify(end));
  assert.equal(a.pendingInterrupts.length, 1);
  const interrupt = a.pendingInterrupts[0];
  assert.equal(interrupt.reason, "confirmation");
  const call = first.events.find((e) => e.type === "TOOL_CALL_START");
  assert.equal(call.toolCallName, "get_current_time");
  assert.equal(interrupt.toolCallId, call.toolCallId);
  assert.ok(interrupt.responseSchema && interrupt.expiresAt && interrupt.message);

  // The client refuses a run that leaves the interrupt unanswered.
  await assert.rejects(a.runAgent({ runId: "conf-d-bad" }), /pending interrupt/);
  complaints = complaints.filter((c) => !c.includes("pending interrupt")); // that refusal is the client's own log

  const second = await run(a, {
    runId: "conf-d-r2",
    resume: [{ interruptId: interrupt.id, status: "resolved", payload: { approved: true } }],
  });
  assert.equal(second.events[0].type, "RUN_STARTED");
  assert.equal(second.events[0].runId, "conf-d-r2");
  const result = second.events.find((e) => e.type === "TOOL_CALL_RESULT");
  assert.equal(result.toolCallId, call.toolCallId);
  assert.match(result.content, /Asia\/Tokyo/);
  assert.equal(second.events.at(-1).type, "RUN_FINISHED");
  assert.equal(second.events.at(-1).outcome, undefined);
  assert.equal(a.pendingInterrupts.length, 0);
  const reply = second.newMessages.find((m) => m.role === "assistant" && m.content);
  assert.match(reply.content, /current time in Asia\/Tokyo/i);

  // The seed stream of the thread shows both AG-UI runs under the same ids.
  const { events } = await readEvents(`${server.url}/api/v1/agent/runs/conf-d/events`, { stop: (ev) => ev.type === "RUN_FINISHED" && ev.runId === "conf-d-r2" });
  assert.deepEqual(events.filter((e) => e.type === "RUN_STARTED").map((e) => e.runId), ["conf-d-r1", "conf-d-r2"]);
});

// ---------- (b), (c) and (e): a seed-001 client ----------

test("seed 001: 202, thread events, Last-Event-ID from every id, day history", async () => {
  const accepted = await postRun({
    threadId: "conf-b", runId: "conf-b-r1", tools: [], context: [], state: {}, forwardedProps: {},
    messages: [{ id: "conf-b-u1", role: "user", content: "Think first, then calculate (3+4)*5" }],
  });
  assert.deepEqual(Object.keys(accepted).sort(), ["created", "runId", "taskId", "threadId"]);
  assert.equal(accepted.threadId, "conf-b");
  assert.equal(accepted.runId, "conf-b-r1");
  assert.equal(accepted.created, true);

  const url = `${server.url}/api/v1/agent/runs/conf-b/events`;
  const full = await readEvents(url, { stop: isEnd });
  assert.equal(full.events[0].type, "RUN_STARTED");
  assert.equal(full.events.at(-1).type, "RUN_FINISHED");
  // Every frame has its own id, "<seq>" or "<seq>.<k>" (the frames one
  // canonical event becomes, before its last, which carries the bare seq),
  // increasing in the stream.
  for (const [i, id] of full.ids.entries()) assert.match(id, /^\d+(\.[1-9]\d*)?$/, `event ${i} (${full.events[i].type}) has no id`);
  for (let i = 1; i < full.ids.length; i++) {
    assert.ok(idBefore(full.ids[i - 1], full.ids[i]), `id ${full.ids[i]} of event ${i} (${full.events[i].type}) is not after ${full.ids[i - 1]}`);
  }
  assert.ok(full.ids.some((id) => id.includes(".")), `no event became several frames: ${full.ids}`);
  for (const t of ["REASONING_MESSAGE_CONTENT", "TOOL_CALL_ARGS", "TOOL_CALL_RESULT", "TEXT_MESSAGE_END", "STEP_FINISHED"]) {
    assert.ok(types(full.events).includes(t), `no ${t} in ${types(full.events)}`);
  }
  // Seed 004's fields ride along.
  const toolResult = full.events.find((e) => e.type === "TOOL_CALL_RESULT");
  assert.equal(toolResult.tool_name, "calculator");
  assert.equal(toolResult.tool_call_id, toolResult.toolCallId);
  assert.equal(toolResult.status, "success");
  const answer = full.events.filter((e) => e.type === "TEXT_MESSAGE_END").at(-1);
  assert.ok(answer.ui_schema && answer.result_type && Array.isArray(answer.key_points), JSON.stringify(answer));

  // (c) Reconnect after every id: the rest is exactly what followed, and
  // together with what came before it passes the verifier.
  const lastID = full.ids.at(-1);
  for (const [i, id] of full.ids.slice(0, -1).entries()) {
    const headers = i % 2 === 0 ? { "Last-Event-ID": id } : {};
    const from_ = i % 2 === 0 ? url : `${url}?after=${id}`;
    const rest = await readEvents(from_, { headers, verify: false, stop: (ev, evID) => isEnd(ev) && evID === lastID });
    const before = full.events.slice(0, i + 1);
    assert.deepEqual(rest.events, full.events.slice(i + 1), `continuation after ${id}`);
    await verifyAll([...before, ...rest.events]);
  }

  // (e) The day history, then the events from its lastEventId.
  const day = await getJSON(`/api/v1/agent/history?threadId=conf-b`);
  assert.equal(day.scope, "history_day");
  assert.equal(day.threadId, "conf-b");
  assert.equal(day.timeZone, "Asia/Shanghai");
  assert.equal(day.hasMore, false);
  assert.equal(day.lastEventId, lastID);
  assert.deepEqual(day.messages.map((m) => m.role), ["user", "assistant", "tool", "assistant"]);
  const tool = day.messages.find((m) => m.role === "tool");
  assert.equal(tool.content, tool.metadata.result);
  assert.ok(tool.metadata.tool_agent_output !== undefined);
  const final = day.messages.at(-1);
  assert.deepEqual(final.ui_schema, answer.ui_schema, "one compiler for events and history");
  const earlier = await getJSON(`/api/v1/agent/history?threadId=conf-b&before=${day.day}`);
  assert.deepEqual(earlier.messages, []);
  assert.equal(earlier.hasMore, false);

  // A later run, followed from the snapshot's lastEventId and merged by key.
  const second = await postRun({ threadId: "conf-b", runId: "conf-b-r2", messages: [{ id: "conf-b-u2", role: "user", content: "thanks" }] });
  assert.equal(second.created, false);
  const later = await readEvents(`${url}?after=${day.lastEventId}`, { stop: isEnd });
  assert.equal(later.events[0].runId, "conf-b-r2");
  const key = (runId, id) => `${runId}/${id}`;
  const merged = new Map(day.messages.map((m) => [key(m.runId, m.messageId), 1]));
  for (const ev of later.events) {
    if (ev.type === "TEXT_MESSAGE_START" || ev.type === "TOOL_CALL_RESULT") {
      const k = key(ev.runId, ev.messageId);
      assert.ok(!merged.has(k) || ev.runId !== "conf-b-r2", `duplicate ${k}`);
      merged.set(k, 1);
    }
  }
  const after_ = await getJSON(`/api/v1/agent/history?threadId=conf-b`);
  const want = after_.messages.filter((m) => m.role !== "user").map((m) => key(m.runId, m.messageId));
  for (const k of want) assert.ok(merged.has(k), `history + events lost ${k}`);
  assert.equal(after_.messages.length, day.messages.length + 2);
});

// ---------- (f) frontend tools ----------

/**
 * A fake OpenAI-compatible upstream: asked with the client's tool offered and
 * no tool result yet, it calls pick_colour; given the result, it answers.
 */
async function fakeUpstream() {
  const requests = [];
  const srv = createServer((req, res) => {
    let body = "";
    req.on("data", (b) => (body += b));
    req.on("end", () => {
      const r = JSON.parse(body);
      requests.push(r);
      const chunk = (delta, finish = null) =>
        `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 0, model: "fake", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
      res.writeHead(200, { "Content-Type": "text/event-stream" });
      const last = r.messages.at(-1);
      if (last.role === "tool") {
        const answer = JSON.stringify({ answer: `You picked ${last.content}.`, key_points: [last.content], result_type: "execution_report", status: "success" });
        res.write(chunk({ role: "assistant", content: answer.slice(0, 12) }));
        res.write(chunk({ content: answer.slice(12) }));
        res.write(chunk({}, "stop"));
      } else {
        assert.ok(r.tools.some((t) => t.function.name === "pick_colour"), "the client's tool is offered");
        res.write(chunk({ role: "assistant", tool_calls: [{ index: 0, id: "call_pick", type: "function", function: { name: "pick_colour", arguments: "" } }] }));
        res.write(chunk({ tool_calls: [{ index: 0, function: { arguments: '{"palette":"warm"}' } }] }));
        res.write(chunk({}, "tool_calls"));
      }
      res.end("data: [DONE]\n\n");
    });
  });
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${srv.address().port}`, requests, close: () => new Promise((r) => srv.close(r)) };
}

test("HttpAgent answers a frontend tool and the run continues", async () => {
  const upstream = await fakeUpstream();
  const own = await startServer({ AGENTCHAT_LLM: "openai", OPENAI_BASE_URL: `${upstream.url}/v1`, OPENAI_API_KEY: "sk-fake", AGENTCHAT_MODEL: "fake", AGENTCHAT_LLM_RETRIES: "-1" });
  try {
    const a = new HttpAgent({ url: `${own.url}/api/v1/agent/runs`, headers: auth, threadId: "conf-f" });
    const tools = [{ name: "pick_colour", description: "Ask the user to pick a colour.", parameters: { type: "object", properties: { palette: { type: "string" } } } }];
    a.addMessage({ id: "conf-f-u1", role: "user", content: "Pick a colour for me" });
    let pending;
    const first = await a.runAgent({ runId: "conf-f-r1", tools }, { onRunFinishedEvent: (p) => void (pending = p.pendingToolCallIds) });
    assert.deepEqual(pending, ["call_pick"]);
    const call = a.messages.flatMap((m) => m.toolCalls ?? []).find((c) => c.id === "call_pick");
    assert.equal(call.function.name, "pick_colour");
    assert.deepEqual(JSON.parse(call.function.arguments), { palette: "warm" });
    assert.equal(first.newMessages.filter((m) => m.role === "tool").length, 0, "nobody answered the call but the client");

    a.addMessage({ id: "conf-f-t1", role: "tool", toolCallId: "call_pick", content: "red" });
    const second = await a.runAgent({ runId: "conf-f-r2", tools });
    const reply = second.newMessages.find((m) => m.role === "assistant");
    assert.equal(reply.content, "You picked red.");
    assert.equal(second.result.answer, "You picked red.");
    const sent = upstream.requests[1].messages.at(-1);
    assert.deepEqual([sent.role, sent.tool_call_id, sent.content], ["tool", "call_pick", "red"]);
  } finally {
    await own.stop();
    await upstream.close();
  }
});

// ---------- (g) shared state ----------

test("HttpAgent shares state: STATE_SNAPSHOT, update_state as STATE_DELTA, ?snapshot=messages", async () => {
  const a = new HttpAgent({ url: `${server.url}/api/v1/agent/runs`, headers: auth, threadId: "conf-s", initialState: { colour: "red", items: [] } });
  const patch = '[{"op":"replace","path":"/colour","value":"teal"},{"op":"add","path":"/items/-","value":"pen"}]';
  a.addMessage({ id: "conf-s-u1", role: "user", content: `call update_state with “${patch}”` });
  const first = await run(a, { runId: "conf-s-r1" });
  assert.equal(first.events[1].type, "STATE_SNAPSHOT", `${types(first.events)}`);
  assert.deepEqual(first.events[1].snapshot, { colour: "red", items: [] }, "the run starts from the state the client sent");
  const deltas = first.events.filter((e) => e.type === "STATE_DELTA");
  assert.equal(deltas.length, 1, `${types(first.events)}`);
  assert.deepEqual(deltas[0].delta, JSON.parse(patch));
  assert.deepEqual(a.state, { colour: "teal", items: ["pen"] }, "HttpAgent applied the agent's change");
  const result = first.events.find((e) => e.type === "TOOL_CALL_RESULT");
  assert.match(result.content, /"colour":"teal"/);

  // A reader loading the thread gets its state beside its messages.
  const loaded = await readEvents(`${server.url}/api/v1/agent/runs/conf-s/events?snapshot=messages`, {
    stop: (ev) => ev.type === "STATE_SNAPSHOT",
    verify: false,
  });
  assert.deepEqual(types(loaded.events), ["MESSAGES_SNAPSHOT", "STATE_SNAPSHOT"]);
  assert.deepEqual(loaded.events[1].snapshot, { colour: "teal", items: ["pen"] });

  // A patch that does not apply changes nothing: the model is told why.
  a.addMessage({ id: "conf-s-u2", role: "user", content: 'call update_state with “[{"op":"remove","path":"/missing"}]”' });
  const second = await run(a, { runId: "conf-s-r2" });
  assert.deepEqual(second.events[1].snapshot, { colour: "teal", items: ["pen"] });
  assert.equal(second.events.filter((e) => e.type === "STATE_DELTA").length, 0, `${types(second.events)}`);
  assert.match(second.events.find((e) => e.type === "TOOL_CALL_RESULT").content, /^Error: invalid state patch/);
  assert.deepEqual(a.state, { colour: "teal", items: ["pen"] });
});

// ---------- (h) double-texting and the cancelled outcome ----------

test("HttpAgent: a second input with forwardedProps.multitaskStrategy interrupt ends the first run with the cancelled outcome", async () => {
  // An upstream model that holds the story after its first word until the
  // test ends, so the first run is still answering when the second input
  // comes however slow the machine (with paced tokens, a stall longer than
  // the story would let the first run succeed first); anything else it
  // answers at once.
  let release;
  const held = new Promise((ok) => (release = ok));
  const upstream = fakeServer(async (req, res) => {
    let raw = "";
    for await (const chunk of req) raw += chunk;
    if (req.method !== "POST" || req.url !== "/v1/chat/completions") return res.writeHead(404).end();
    const body = JSON.parse(raw);
    const send = (delta, finish = null) =>
      res.write(`data: ${JSON.stringify({ id: "chatcmpl-fake", object: "chat.completion.chunk", created: 1, model: body.model,
        choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`);
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    send({ role: "assistant", content: "" });
    if (/long story/.test(JSON.stringify(body.messages?.at(-1)?.content ?? ""))) {
      send({ content: "Once" });
      await held;
      if (res.destroyed) return;
      send({ content: " upon a time." });
    } else {
      send({ content: "Hi!" });
    }
    send({}, "stop");
    res.end("data: [DONE]\n\n");
  });
  const upstreamURL = await listen(upstream);
  const own = await startServer({ AGENTCHAT_LLM: "openai", OPENAI_BASE_URL: `${upstreamURL}/v1`, OPENAI_API_KEY: "sk-fake",
    AGENTCHAT_MODEL: "fake", AGENTCHAT_LLM_RETRIES: "-1" });
  try {
    const url = `${own.url}/api/v1/agent/runs`;
    const first = new HttpAgent({ url, headers: auth, threadId: "conf-m" });
    first.addMessage({ id: "conf-m-u1", role: "user", content: "Tell me a long story about the sea" });
    let streaming;
    const streamed = new Promise((ok) => (streaming = ok));
    const events = [];
    const firstRun = first
      .runAgent({ runId: "conf-m-r1" }, { onEvent: ({ event }) => void (events.push(event), event.type === "TEXT_MESSAGE_CONTENT" && streaming()) })
      .then((result) => ({ ...result, events }));
    await within(streamed, "the first run streams");

    const second = new HttpAgent({ url, headers: auth, threadId: "conf-m" });
    second.addMessage({ id: "conf-m-u1", role: "user", content: "Tell me a long story about the sea" });
    second.addMessage({ id: "conf-m-u2", role: "user", content: "Actually, just say hi" });
    const secondRun = await run(second, { runId: "conf-m-r2", forwardedProps: { multitaskStrategy: "interrupt" } });
    assert.equal(secondRun.events.at(-1).type, "RUN_FINISHED");
    assert.equal(secondRun.events.at(-1).outcome, undefined, "the new input's run succeeded");

    const ended = await within(firstRun, "the first run ends");
    const end = ended.events.at(-1);
    assert.equal(end.type, "RUN_FINISHED", `${types(ended.events)}`);
    assert.deepEqual(end.outcome, { type: "cancelled" });
    for (const ev of ended.events) schemaCheck(ev);
    assert.ok(ended.newMessages.some((m) => m.role === "assistant" && m.content === "Once"), "the partial answer stays");
  } finally {
    release();
    await own.stop();
    await close(upstream);
  }
});
