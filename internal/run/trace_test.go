package run_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentchat/agentchat/internal/bus/membus"
	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/engine"
	"github.com/agentchat/agentchat/internal/run"
	"github.com/agentchat/agentchat/internal/store"
	"github.com/agentchat/agentchat/internal/telemetry"
)

var traceIDRe = regexp.MustCompile(`^[0-9a-f]{32}$`)

// logCapture keeps JSON log lines.
type logCapture struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	written chan struct{} // closed and replaced at each write
}

func (c *logCapture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.written != nil {
		close(c.written)
		c.written = nil
	}
	return c.buf.Write(p)
}

// waitFor waits until ok holds of the lines so far, or fails the test
// after limit: a line is written after the state change a test can see
// (a run's end is logged after its status is), so a test that counts lines
// waits for them.
func (c *logCapture) waitFor(t *testing.T, limit time.Duration, ok func([]string) bool) {
	t.Helper()
	deadline := time.After(limit)
	for {
		c.mu.Lock()
		if c.written == nil {
			c.written = make(chan struct{})
		}
		next := c.written
		c.mu.Unlock()
		if ok(c.lines()) {
			return
		}
		select {
		case <-next:
		case <-deadline:
			t.Fatalf("after %s the log still lacks what the test waits for: %q", limit, c.lines())
		}
	}
}

func (c *logCapture) lines() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Split(strings.TrimSpace(c.buf.String()), "\n")
}

// Every line the run service writes about a run (and an engine logging with
// the run's context) carries the run's run_id and trace_id, once: its
// start and end, its continuation on another replica after a decision, and
// a takeover of a run whose executor died. Tracing is off, as by default.
func TestRunLogLinesCarryTraceID(t *testing.T) {
	t.Parallel()
	st, b := openStore(t), newRetainingBus(t)
	var logs logCapture
	log := slog.New(telemetry.LogHandler(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	eng := engineFunc(func(ctx context.Context, t engine.Task, h engine.Host) engine.Outcome {
		log.InfoContext(ctx, "engine line", "run_id", t.Run.ID) // a logger without the run's attributes
		return awaitingEngine(ctx, t, h)
	})
	replica := func(name string) *run.Service {
		// No lease here may lapse (steadyLease): the run taken over is one
		// whose term was never registered, over at once whatever the
		// lease. With leaseTTL a stall on a loaded box fenced the replica
		// holding the continued run, which was then ended as abandoned.
		s := run.New(run.Config{Store: st, Bus: b, Engine: eng, ReplicaID: name, LeaseTTL: steadyLease, SweepInterval: 20 * time.Millisecond, Logger: log})
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			s.Shutdown(ctx)
		})
		return s
	}
	a, other := replica("a"), replica("b")

	started, err := a.Start(context.Background(), alice, run.StartRequest{Input: "go"}, false)
	if err != nil {
		t.Fatal(err)
	}
	waitRun(t, st, started.Run.ID, func(r chat.Run) bool { return r.Status == chat.RunAwaitingInput })
	list, err := st.ListConfirmations(context.Background(), alice, chat.ConfirmPending)
	if err != nil || len(list) != 1 {
		t.Fatalf("confirmations %v (%v)", list, err)
	}
	if _, err := other.Decide(context.Background(), alice, list[0].ID, chat.Decision{Status: chat.ConfirmApproved}); err != nil {
		t.Fatal(err)
	}
	waitRun(t, st, started.Run.ID, ended)
	lost := abandoned(t, st, b, 1, 1, false)
	waitRun(t, st, lost.ID, ended)

	traces := map[string]string{}
	for _, id := range []string{started.Run.ID, lost.ID} {
		r, err := st.GetRun(context.Background(), alice, id)
		if err != nil || !traceIDRe.MatchString(r.TraceID) {
			t.Fatalf("run %s: trace %q (%v)", id, r.TraceID, err)
		}
		traces[id] = r.TraceID
	}
	want := map[string]int{
		"engine line":                         2, // the start and the continuation
		"run ended":                           2, // the continuation's, and the takeover's
		"ending a run whose executor stopped": 1,
	}
	logs.waitFor(t, 5*time.Second, func(lines []string) bool {
		n := 0
		for _, line := range lines {
			if strings.Contains(line, `"msg":"run ended"`) {
				n++
			}
		}
		return n >= want["run ended"]
	})
	counts := map[string]int{}
	for _, line := range logs.lines() {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		id, _ := rec["run_id"].(string)
		if id == "" {
			continue
		}
		if n := strings.Count(line, `"trace_id"`); n != 1 || rec["trace_id"] != traces[id] {
			t.Errorf("line about run %s has trace_id %v (%d times), want %s: %s", id, rec["trace_id"], n, traces[id], line)
		}
		counts[rec["msg"].(string)]++
	}
	for msg, want := range want {
		if counts[msg] < want {
			t.Errorf("%d lines %q, want %d (lines: %v)", counts[msg], msg, want, counts)
		}
	}
}

// pauseHolding holds the update that records a run as awaiting input until
// released: the pause's announcement is out, its status not yet.
type pauseHolding struct {
	store.Store
	held    chan struct{}
	release chan struct{}
	once    sync.Once
}

func (p *pauseHolding) UpdateRun(ctx context.Context, tenant, id string, u store.RunUpdate) (chat.Run, error) {
	if u.Status == chat.RunAwaitingInput {
		p.once.Do(func() { close(p.held) })
		<-p.release
	}
	return p.Store.UpdateRun(ctx, tenant, id, u)
}

// A decision that arrives while its run is still pausing (its client saw
// the announcement, the status is not recorded yet) is applied by the
// pausing execution once it has recorded the wait; the continuation's span
// still links the deciding request's, as when the request's own resume
// continues the run.
func TestDecisionWhilePausingLinksTheDecidingRequest(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	st := &pauseHolding{Store: openStore(t), held: make(chan struct{}), release: make(chan struct{})}
	b := membus.New(0)
	t.Cleanup(func() { b.Close() })
	eng := &confirmingEngine{}
	s := run.New(run.Config{Store: st, Bus: b, Engine: eng, Sole: true, Telemetry: telemetry.New(telemetry.Config{TracerProvider: tp})})
	t.Cleanup(func() { shutdown(s) })
	ready(t, s)
	started, err := s.Start(context.Background(), alice, run.StartRequest{Input: "tell the deploy hook"}, false)
	if err != nil {
		t.Fatal(err)
	}
	<-st.held
	ctx, decide := tp.Tracer("test").Start(context.Background(), "POST /v1/agent/confirmations/{id}")
	if _, err := s.Decide(ctx, alice, eng.requested.Load().(string), chat.Decision{Status: chat.ConfirmApproved}); err != nil {
		t.Fatal(err)
	}
	decide.End()
	close(st.release)
	if got := waitRun(t, st, started.Run.ID, ended); got.Status != chat.RunSucceeded || eng.sent.Load() != 1 {
		t.Fatalf("run %s %+v, the tool ran %d times", got.Status, got.Error, eng.sent.Load())
	}
	var runs []sdktrace.ReadOnlySpan
	for _, sp := range exp.GetSpans().Snapshots() {
		if sp.Name() == "invoke_agent agentchat" {
			runs = append(runs, sp)
		}
	}
	if len(runs) != 2 {
		t.Fatalf("%d run spans", len(runs))
	}
	if links := runs[1].Links(); len(links) != 1 || links[0].SpanContext.SpanID() != decide.SpanContext().SpanID() {
		t.Fatalf("the continuation links %+v, want the deciding request's span %s", links, decide.SpanContext().SpanID())
	}
}
