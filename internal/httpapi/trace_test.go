package httpapi_test

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

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
	spans := newEndedSpans()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
	hook := newFeishu(t)
	e := setup(t, options{tracer: tp, builtin: builtin.Config{Feishu: builtin.FeishuConfig{WebhookURL: hook.srv.URL}}})

	frames, cid, rest, closeStream := awaitConfirmation(t, e, alice, "deploy done")
	defer closeStream()
	runID := frames[1].Data["runId"].(string)
	trace := e.runTrace(runID)
	// The first execution's span ends when its engine has returned, after
	// it emitted tool.awaiting_input: wait for the span, not the event.
	first := spans.await(t, "invoke_agent agentchat", 1)
	if len(first) != 1 || first[0].SpanContext().TraceID().String() != trace {
		t.Fatalf("run spans %d, the first in trace %s; the run's traceId %s", len(first), first[0].SpanContext().TraceID(), trace)
	}

	e.call(req{method: "POST", path: "/v1/agent/confirmations/" + cid, token: alice, body: map[string]any{"decision": "approve"}}, 200)
	if end := last(rest()); end.Data["status"] != "succeeded" {
		t.Fatalf("continuation did not succeed")
	}
	if got := e.runTrace(runID); got != trace {
		t.Fatalf("traceId after the continuation %s, before %s", got, trace)
	}
	// The deciding request's server span ends as its handler returns,
	// which the client may see after the response.
	decide := spans.await(t, "POST /v1/agent/confirmations/{id}", 1)[0]
	all := spans.await(t, "invoke_agent agentchat", 2)
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
	for _, s := range spans.all() {
		if s.Name() == "execute_tool send_feishu_message" && s.SpanContext().TraceID().String() != trace {
			t.Fatalf("tool span in trace %s, want %s", s.SpanContext().TraceID(), trace)
		}
	}
}

// endedSpans is a span processor that keeps the spans as they end and wakes
// whoever waits for one: a span may end after the event or response a test
// saw (a run's execution ends after its last event; a server span after its
// response is on its way).
type endedSpans struct {
	mu      sync.Mutex
	spans   []sdktrace.ReadOnlySpan
	changed chan struct{} // closed and replaced at each end
}

func newEndedSpans() *endedSpans { return &endedSpans{changed: make(chan struct{})} }

func (p *endedSpans) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (p *endedSpans) Shutdown(context.Context) error                  { return nil }
func (p *endedSpans) ForceFlush(context.Context) error                { return nil }

func (p *endedSpans) OnEnd(s sdktrace.ReadOnlySpan) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.spans = append(p.spans, s)
	close(p.changed)
	p.changed = make(chan struct{})
}

// all returns the spans ended so far, in the order they ended.
func (p *endedSpans) all() []sdktrace.ReadOnlySpan {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.spans)
}

// await waits until at least n spans named name have ended and returns
// them all, in the order they ended; it fails the test after 10s.
func (p *endedSpans) await(t *testing.T, name string, n int) []sdktrace.ReadOnlySpan {
	t.Helper()
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for {
		p.mu.Lock()
		var named []sdktrace.ReadOnlySpan
		for _, s := range p.spans {
			if s.Name() == name {
				named = append(named, s)
			}
		}
		changed := p.changed
		p.mu.Unlock()
		if len(named) >= n {
			return named
		}
		select {
		case <-changed:
		case <-timeout.C:
			t.Fatalf("%d %q spans ended within 10s, want %d", len(named), name, n)
		}
	}
}
