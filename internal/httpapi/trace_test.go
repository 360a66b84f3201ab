package httpapi_test

import (
	"regexp"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentchat/agentchat/internal/tool/builtin"
)

const (
	callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	traceparent = "00-" + callerTrace + "-00f067aa0ba902b7-01"
)

var (
	traceIDRe   = regexp.MustCompile(`^[0-9a-f]{32}$`)
	traceUUIDRe = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
)

// envTrace is a chain envelope's trace_id as a W3C trace id: the seed's
// UUID shape without its dashes; empty when it has another shape.
func envTrace(env map[string]any) string {
	s, _ := env["trace_id"].(string)
	if !traceUUIDRe.MatchString(s) {
		return ""
	}
	return strings.ReplaceAll(s, "-", "")
}

// runTrace is the traceId GET /v1/agent/runs/{runId} shows.
func (e *env) runTrace(runID string) string {
	e.t.Helper()
	id, _ := e.call(req{method: "GET", path: "/v1/agent/runs/" + runID, token: alice}, 200)["traceId"].(string)
	return id
}

// Without tracing, a run takes the caller's traceparent's trace, or a fresh
// random one: every run has a trace id, and the API shows it.
func TestRunTraceIDWithoutTracing(t *testing.T) {
	t.Parallel()
	e := setup(t, options{})

	rd, resp := e.stream(req{method: "POST", path: "/v1/agent/chat", token: alice,
		header: map[string]string{"traceparent": traceparent}, body: map[string]any{"input": "hello"}})
	readNative(t, rd, "")
	resp.Body.Close()
	if got := e.runTrace(resp.Header.Get("X-Run-ID")); got != callerTrace {
		t.Fatalf("run with a traceparent: traceId %q, want the caller's %s", got, callerTrace)
	}

	seen := map[string]bool{}
	for range 2 {
		rd, resp := e.stream(req{method: "POST", path: "/v1/agent/chat", token: alice, body: map[string]any{"input": "hello"}})
		readNative(t, rd, "")
		resp.Body.Close()
		got := e.runTrace(resp.Header.Get("X-Run-ID"))
		if !traceIDRe.MatchString(got) || got == "00000000000000000000000000000000" || got == callerTrace || seen[got] {
			t.Fatalf("run without a traceparent: traceId %q (seen %v)", got, seen)
		}
		seen[got] = true
	}
}

// The chain stream's envelopes carry the run's trace id, the one the API
// shows; a rejection, which starts no run, carries the request's trace.
func TestChainTraceIDIsTheRuns(t *testing.T) {
	t.Parallel()
	e := chainSetup(t, options{})
	rd, resp := e.chain(chainPath("Please calculate 1+2", 0), map[string]string{"traceparent": traceparent})
	frames := rd.readAll(nil)
	resp.Body.Close()
	if got := e.runTrace(resp.Header.Get("X-Run-ID")); got != callerTrace {
		t.Fatalf("chain run traceId %q, want %s", got, callerTrace)
	}
	if len(frames) < 2 {
		t.Fatalf("%d frames", len(frames))
	}
	for _, f := range frames {
		if envTrace(f.Env) != callerTrace {
			t.Fatalf("%s frame: trace_id %v, want the run's %s", f.Event, f.Env["trace_id"], callerTrace)
		}
	}

	// Without a traceparent: still the run's, not its id.
	rd, resp = e.chain(chainPath("Please calculate 2+3", 0), nil)
	frames = rd.readAll(nil)
	resp.Body.Close()
	runID := resp.Header.Get("X-Run-ID")
	trace := e.runTrace(runID)
	if !traceIDRe.MatchString(trace) {
		t.Fatalf("chain run traceId %q", trace)
	}
	for _, f := range frames {
		if envTrace(f.Env) != trace {
			t.Fatalf("%s frame: trace_id %v, want the run's %s (run %s)", f.Event, f.Env["trace_id"], trace, runID)
		}
	}

	rd, resp = e.chain(chainPath("Please calculate 1+2", 1000), map[string]string{"traceparent": traceparent})
	frames = rd.readAll(nil)
	resp.Body.Close()
	if len(frames) != 1 || frames[0].Event != "final" || envTrace(frames[0].Env) != callerTrace {
		t.Fatalf("rejection %+v", frames)
	}
	rd, resp = e.chain(chainPath("Please calculate 1+2", 1000), nil)
	frames = rd.readAll(nil)
	resp.Body.Close()
	if len(frames) != 1 || !traceIDRe.MatchString(envTrace(frames[0].Env)) {
		t.Fatalf("rejection without a traceparent %+v", frames)
	}
}

// With tracing on, the run's trace id is its span's; a continuation after a
// person's decision joins that trace as a child of the run's first span,
// and links the request that decided.
func TestContinuationJoinsTheRunsTrace(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
	hook := newFeishu(t)
	e := setup(t, options{tracer: tp, builtin: builtin.Config{Feishu: builtin.FeishuConfig{WebhookURL: hook.srv.URL}}})

	frames, cid, rest, closeStream := awaitConfirmation(t, e, alice, "deploy done")
	defer closeStream()
	runID := frames[1].Data["runId"].(string)
	trace := e.runTrace(runID)
	runSpans := func() []sdktrace.ReadOnlySpan {
		var out []sdktrace.ReadOnlySpan
		for _, s := range exp.GetSpans().Snapshots() {
			if s.Name() == "invoke_agent agentchat" {
				out = append(out, s)
			}
		}
		return out
	}
	first := runSpans()
	if len(first) != 1 || first[0].SpanContext().TraceID().String() != trace {
		t.Fatalf("run spans %d; the run's traceId %s", len(first), trace)
	}

	e.call(req{method: "POST", path: "/v1/agent/confirmations/" + cid, token: alice, body: map[string]any{"decision": "approve"}}, 200)
	if end := last(rest()); end.Data["status"] != "succeeded" {
		t.Fatalf("continuation did not succeed")
	}
	if got := e.runTrace(runID); got != trace {
		t.Fatalf("traceId after the continuation %s, before %s", got, trace)
	}
	var decide sdktrace.ReadOnlySpan
	for _, s := range exp.GetSpans().Snapshots() {
		if s.Name() == "POST /v1/agent/confirmations/{id}" {
			decide = s
		}
	}
	if decide == nil {
		t.Fatal("no span of the deciding request")
	}
	all := runSpans()
	if len(all) != 2 {
		t.Fatalf("%d run spans after the continuation", len(all))
	}
	cont := all[1]
	if cont.SpanContext().TraceID().String() != trace || cont.Parent().SpanID() != first[0].SpanContext().SpanID() {
		t.Fatalf("continuation span in trace %s under %s; want trace %s under the run's first span %s",
			cont.SpanContext().TraceID(), cont.Parent().SpanID(), trace, first[0].SpanContext().SpanID())
	}
	if links := cont.Links(); len(links) != 1 || links[0].SpanContext.SpanID() != decide.SpanContext().SpanID() {
		t.Fatalf("continuation links %+v, want the deciding request's span %s", links, decide.SpanContext().SpanID())
	}
	// Its model and tool calls are in the run's trace too.
	for _, s := range exp.GetSpans().Snapshots() {
		if s.Name() == "execute_tool send_feishu_message" && s.SpanContext().TraceID().String() != trace {
			t.Fatalf("tool span in trace %s, want %s", s.SpanContext().TraceID(), trace)
		}
	}
}
