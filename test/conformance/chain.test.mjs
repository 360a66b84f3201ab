// Chain stream conformance (seed 003): the seed's own frontend example,
// seed003-frontend.js (copied verbatim from the seed), runs unchanged in
// Node against the agentchat binary, with the `eventsource` package as the
// browser's EventSource. The page's part is played by a subclass: it
// resolves the example's relative URL against the server (the page's
// origin) and adds ?access_token=, as a page without cookies must, since
// EventSource sends no headers. The example must see every event it listens
// for, with well-formed envelopes numbered 1, 2, 3…, and close on `final`.
//
// It runs twice: with the offline scripted model, and with an
// OpenAI-compatible model (a fake upstream here) that plans, calls a tool
// and checks. Every wait is bounded.

import { test, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { EventSource } from "eventsource";

import { startAgentchat } from "./lib.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const TOKEN = "conformance-token-0123456789";
const BOUND_MS = 15_000;
const EXAMPLE = readFileSync(path.join(here, "seed003-frontend.js"), "utf8");
const LISTENED = ["chain.step", "planner.plan", "call.end", "call.start", "check.summary", "final"];

const servers = [];
after(async () => {
  for (const s of servers) await s.stop();
});

// startServer starts agentchat with this suite's settings, extraEnv on top;
// it is stopped when the suite ends.
async function startServer(extraEnv = {}) {
  const s = await startAgentchat({
    AGENTCHAT_TOKENS: `${TOKEN}:default:tester`,
    AGENTCHAT_PING_INTERVAL: "100ms",
    ...extraEnv,
  });
  servers.push(s);
  return s;
}

// runExample runs the seed's example against base and resolves with what
// it saw once it closed its EventSource.
function runExample(base) {
  return new Promise((resolve, reject) => {
    const seen = { frames: [], ui: [], closed: 0, afterClose: 0 };
    const timer = setTimeout(() => reject(new Error(`the example did not close within ${BOUND_MS} ms: ${JSON.stringify(seen.frames.map((f) => f.type))}`)), BOUND_MS);
    class PageEventSource extends EventSource {
      constructor(url, init) {
        const u = new URL(url, base); // the page's origin
        u.searchParams.set("access_token", TOKEN);
        super(u, init);
        super.addEventListener("error", (e) => {
          clearTimeout(timer);
          reject(new Error(`EventSource error: ${e.message ?? e.code ?? "unknown"}`));
          super.close();
        });
      }
      addEventListener(type, listener, options) {
        super.addEventListener(type, (e) => {
          if (seen.closed) seen.afterClose++;
          seen.frames.push({ type, id: e.lastEventId, data: e.data });
          listener(e);
        }, options);
      }
      close() {
        super.close();
        seen.closed++;
        clearTimeout(timer);
        // Anything the stream still delivers would show up before the next turn.
        setImmediate(() => resolve(seen));
      }
    }
    const ui = (name) => (payload) => seen.ui.push([name, payload]);
    // The example is a browser script: it sees EventSource and the page's
    // render functions as globals.
    new Function("EventSource", "setActiveStep", "renderPlan", "appendToolCard", "renderCheck", "setResult", EXAMPLE)(
      PageEventSource, ui("setActiveStep"), ui("renderPlan"), ui("appendToolCard"), ui("renderCheck"), ui("setResult"));
  });
}

function checkEnvelopes(frames) {
  let trace;
  frames.forEach((f, i) => {
    const env = JSON.parse(f.data);
    // Seed 003's envelope; final adds the run's usage (when it used any).
    const keys = ["evt", "seq", "ts", "trace_id", "schema", "payload"];
    if (f.type === "final" && "usage" in env) keys.push("usage");
    assert.deepEqual(Object.keys(env), keys);
    assert.equal(env.evt, f.type);
    assert.equal(env.seq, i + 1, `frame ${i} is numbered ${env.seq}`);
    assert.equal(String(env.seq), f.id, "the SSE id is the envelope's seq");
    assert.equal(env.schema, "v1");
    assert.match(env.ts, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
    assert.match(env.trace_id, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    trace ??= env.trace_id;
    assert.equal(env.trace_id, trace, "one trace_id for the whole chain");
  });
}

test("the seed's frontend example with the offline model", async () => {
  const s = await startServer();
  const seen = await runExample(s.url);
  checkEnvelopes(seen.frames);
  const types = seen.frames.map((f) => f.type);
  assert.deepEqual(types, ["chain.step", "planner.plan", "chain.step", "chain.step", "check.summary", "final"]);
  assert.deepEqual(seen.ui.filter(([n]) => n === "setActiveStep").map(([, p]) => p), ["planner", "executor", "check"]);
  const plan = seen.ui.find(([n]) => n === "renderPlan")[1];
  assert.deepEqual(Object.keys(plan), ["execution_chain", "mcp_config", "instructions"]);
  const check = seen.ui.find(([n]) => n === "renderCheck")[1];
  assert.deepEqual(Object.keys(check), ["judge", "score", "reasoning", "tool_assessments"]);
  const [name, result] = seen.ui.at(-1);
  assert.equal(name, "setResult");
  assert.match(result, /你的输入/);
  assert.equal(seen.closed, 1);
  assert.equal(seen.afterClose, 0);
});

test("the seed's frontend example with an OpenAI-compatible model", async () => {
  const upstream = await fakeUpstream();
  try {
    const s = await startServer({ AGENTCHAT_LLM: "openai", OPENAI_BASE_URL: `${upstream.url}/v1`, OPENAI_API_KEY: "sk-fake", AGENTCHAT_MODEL: "fake", AGENTCHAT_LLM_RETRIES: "-1" });
    const seen = await runExample(s.url);
    checkEnvelopes(seen.frames);
    const types = seen.frames.map((f) => f.type);
    assert.deepEqual(types, ["chain.step", "planner.plan", "chain.step", "call.start", "call.end", "chain.step", "check.summary", "final"]);
    for (const t of LISTENED) assert.ok(types.includes(t), `the example saw ${t}`);
    const cards = seen.ui.filter(([n]) => n === "appendToolCard").map(([, p]) => p);
    assert.deepEqual(cards.map((c) => [c.name, c.status, c.server]), [["get_current_time", "start", "executor"], ["get_current_time", "success", "executor"]]);
    assert.equal(cards[0].input, '{"timezone":"UTC"}');
    assert.equal(cards[0].output, "");
    assert.ok(cards[1].output.length > 0);
    assert.deepEqual(seen.ui.at(-1), ["setResult", "It is noon somewhere."]);
    // The planner and the checker asked for JSON, with their schemas in the prompt.
    const structured = upstream.requests.filter((r) => r.response_format?.type === "json_object");
    assert.equal(structured.length, 2);
    assert.match(structured[0].messages[0].content, /WorkflowPlan/);
    assert.match(structured[1].messages[0].content, /CheckOutput/);
    // The executor was offered only what the plan selected.
    const executor = upstream.requests.find((r) => r.tools);
    assert.deepEqual(executor.tools.map((t) => t.function.name), ["get_current_time"]);
  } finally {
    await upstream.close();
  }
});

test("curl's way: headers, and the connection closes after final", async () => {
  const s = await startServer();
  const res = await fetch(`${s.url}/v1/chain/stream?user_input=${encodeURIComponent("写一个周报")}&max_steps=10`, {
    headers: { "X-Tenant-ID": "default", Authorization: `Bearer ${TOKEN}`, Accept: "text/event-stream" },
    signal: AbortSignal.timeout(BOUND_MS),
  });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("content-type"), "text/event-stream");
  const text = await res.text(); // ends only when the server closes
  const frames = text.split("\n\n").filter((b) => b.startsWith("event: "));
  assert.ok(frames.length >= 6);
  for (const f of frames) assert.match(f, /^event: [a-z.]+\nid: \d+\ndata: \{.*\}$/);
  assert.match(frames.at(-1), /^event: final\n/);
});

// fakeUpstream plays an OpenAI-compatible model: the planner's plan, the
// executor's tool call and answer, the checker's verdict.
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
      const text = (s) => {
        res.write(chunk({ role: "assistant", content: s.slice(0, 10) }));
        res.write(chunk({ content: s.slice(10) }));
        res.write(chunk({}, "stop"));
      };
      res.writeHead(200, { "Content-Type": "text/event-stream" });
      const system = r.messages[0]?.role === "system" ? r.messages[0].content : "";
      const last = r.messages.at(-1);
      if (system.includes("WorkflowPlan")) {
        text("```json\n" + JSON.stringify({ execution_chain: ["executor", "check"], mcp_config: ["get_current_time"], instructions: "Tell the user the time." }) + "\n```");
      } else if (system.includes("CheckOutput")) {
        text(JSON.stringify({ judge: true, score: 88, reasoning: "The time was given.", tool_assessments: [{ name: "get_current_time", status: "success" }] }));
      } else if (last.role === "tool") {
        text("It is noon somewhere.");
      } else {
        res.write(chunk({ role: "assistant", tool_calls: [{ index: 0, id: "call_time", type: "function", function: { name: "get_current_time", arguments: "" } }] }));
        res.write(chunk({ tool_calls: [{ index: 0, function: { arguments: '{"timezone":"UTC"}' } }] }));
        res.write(chunk({}, "tool_calls"));
      }
      res.end("data: [DONE]\n\n");
    });
  });
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${srv.address().port}`, requests, close: () => new Promise((r) => srv.close(r)) };
}
