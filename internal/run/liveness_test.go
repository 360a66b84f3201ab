package run_test

import (
	"context"
	"encoding/json"

	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/bus"
	"github.com/agentchat/agentchat/internal/bus/membus"
	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/engine"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/run"
	"github.com/agentchat/agentchat/internal/store"
)

// follow reads a run-scoped stream to its end as an SSE handler does: it
// waits for events, and when it hears nothing for CheckAfter it asks the
// stream to look at the log. It fails the test if the end does not come
// within limit.
func follow(t *testing.T, st *run.Stream, limit time.Duration) []event.Event {
	t.Helper()
	defer st.Close()
	return readUntil(t, st, nil, func([]event.Event) bool { return st.Done() }, limit)
}

// readUntil reads st, appending to got, until stop says so.
func readUntil(t *testing.T, st *run.Stream, got []event.Event, stop func([]event.Event) bool, limit time.Duration) []event.Event {
	t.Helper()
	ctx := t.Context()
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	for !stop(got) {
		if !st.Pending() {
			var check <-chan time.Time
			if d := st.CheckAfter(); d > 0 {
				check = time.After(d)
			}
			select {
			case <-st.Ready():
			case <-check:
				if err := st.Check(ctx); err != nil {
					t.Fatalf("check: %v", err)
				}
			case <-deadline.C:
				t.Fatalf("no end after %s; last seq %d", limit, lastSeq(got))
			}
		}
		var err error
		if got, err = st.Next(ctx, got); err != nil {
			t.Fatalf("next: %v", err)
		}
	}
	for i := 1; i < len(got); i++ {
		if got[i].Seq <= got[i-1].Seq {
			t.Fatalf("seq %d after %d", got[i].Seq, got[i-1].Seq)
		}
	}
	return got
}

func lastSeq(evs []event.Event) int64 {
	if len(evs) == 0 {
		return 0
	}
	return evs[len(evs)-1].Seq
}

// stalling is a store whose writes can be made to hang, as a database
// whose locks or connections stall: nothing fails, nothing answers.
type stalling struct {
	store.Store
	stalled atomic.Bool
	release chan struct{}
}

func (s *stalling) wait(ctx context.Context) error {
	select {
	case <-s.release:
	case <-ctx.Done():
	}
	return errDown
}

func (s *stalling) RenewReplica(ctx context.Context, id string, epoch int64, now, until time.Time) error {
	if s.stalled.Load() {
		return s.wait(ctx)
	}
	return s.Store.RenewReplica(ctx, id, epoch, now, until)
}

func (s *stalling) AppendEvents(ctx context.Context, evs []event.Event) error {
	if s.stalled.Load() {
		return s.wait(ctx)
	}
	return s.Store.AppendEvents(ctx, evs)
}

// The stall of issue 10: an executor whose heartbeat and log writes hang is
// fenced after publishing events that never reach the log, and on a bus that
// keeps nothing (the in-process bus) the replica ending the run cannot learn
// their seqs. It continues after the run's reservation instead, so a client
// that saw those events still receives the end, and no seq names two events.
func TestStalledExecutorsClientGetsItsEnd(t *testing.T) {
	t.Parallel()
	shared := openStore(t)
	b := membus.New(0)
	t.Cleanup(func() { b.Close() })
	stall := &stalling{Store: shared, release: make(chan struct{})}
	a := replica(t, "a", stall, b, streaming(10_000))
	other := replica(t, "b", shared, b, streaming(0))
	started, err := a.Start(t.Context(), alice, run.StartRequest{Input: "go"}, true)
	if err != nil {
		t.Fatal(err)
	}
	// A client of a sees events a wrote, then the store stalls for a while
	// it goes on publishing: the client sees seqs the log never gets.
	seen := readUntil(t, started.Stream, nil, func(evs []event.Event) bool { return len(evs) >= 5 }, time.Minute)
	stall.stalled.Store(true)
	defer close(stall.release)
	seen = readUntil(t, started.Stream, seen, func(evs []event.Event) bool { return len(evs) >= 15 || started.Stream.Done() }, time.Minute)

	// That client, and one that attaches through the other replica, both
	// receive the run's end.
	late, err := other.Follow(t.Context(), alice, "", started.Run.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, got := range [][]event.Event{
		append(seen, follow(t, started.Stream, 10*leaseTTL)...),
		follow(t, late, 10*leaseTTL),
	} {
		checkEnd(t, shared, started.Run.ConversationID, got)
	}
}

// checkEnd fails unless got ends with the run failing as executor_lost and
// every seq in got names the same event as in the log.
func checkEnd(t *testing.T, st store.Store, thread string, got []event.Event) {
	t.Helper()
	for i := 1; i < len(got); i++ {
		if got[i].Seq <= got[i-1].Seq {
			t.Fatalf("seq %d after %d", got[i].Seq, got[i-1].Seq)
		}
	}
	end, ok := got[len(got)-1].Payload.(event.RunFinishedData)
	if !ok {
		t.Fatalf("last event %s", got[len(got)-1].Type)
	}
	if end.Status != event.StatusFailed || end.Error == nil || end.Error.Code != "executor_lost" {
		t.Fatalf("end %+v", end)
	}
	// Every seq the bus carried names one event: the log agrees with what
	// a client saw, and the end comes after all of it.
	logged, err := st.ListEvents(t.Context(), alice, store.ListEventsParams{Thread: thread})
	if err != nil {
		t.Fatal(err)
	}
	bySeq := map[int64]event.Type{}
	for _, ev := range logged {
		bySeq[ev.Seq] = ev.Type
	}
	for _, ev := range got {
		if typ, ok := bySeq[ev.Seq]; ok && typ != ev.Type {
			t.Fatalf("seq %d is %s in the log and %s on the stream", ev.Seq, typ, ev.Type)
		}
	}
}

// lossyBus loses the publishes of runs' ends, as a bus may in an outage.
type lossyBus struct {
	*membus.Bus
	lost atomic.Int32
}

// Lossless is false: this bus loses publishes (see bus.Lossless).
func (b *lossyBus) Lossless() bool { return false }

func (b *lossyBus) Publish(ctx context.Context, ev event.Event) error {
	if ev.Terminal() {
		b.lost.Add(1)
		return nil
	}
	return b.Bus.Publish(ctx, ev)
}

// A run's end whose publish was lost still reaches its streams: a stream
// that hears nothing while its run is in progress looks at the log.
func TestLostEndStillReachesTheStream(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	b := &lossyBus{Bus: membus.New(0)}
	t.Cleanup(func() { b.Close() })
	s := run.New(run.Config{Store: st, Bus: b, Engine: streaming(20), Sole: true})
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	started, err := s.Start(t.Context(), alice, run.StartRequest{Input: "go"}, true)
	if err != nil {
		t.Fatal(err)
	}
	got := follow(t, started.Stream, time.Minute)
	if end, ok := got[len(got)-1].Payload.(event.RunFinishedData); !ok || end.Status != event.StatusSucceeded {
		t.Fatalf("last event %+v", got[len(got)-1])
	}
	if b.lost.Load() == 0 {
		t.Fatal("the bus lost nothing: the test tests nothing")
	}
}

// A sole replica (the embedded default) writes no heartbeat and is never
// fenced, however slow its store: a store that stalls every write for
// longer than the TTL slows the run, and the run still succeeds.
func TestSoleReplicaIsNeverFenced(t *testing.T) {
	t.Parallel()
	shared := openStore(t)
	slow := &slowStore{Store: shared, delay: 2 * leaseTTL}
	b := membus.New(0)
	t.Cleanup(func() { b.Close() })
	s := run.New(run.Config{Store: slow, Bus: b, Engine: streaming(30), Sole: true, LeaseTTL: leaseTTL})
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	started, err := s.Start(t.Context(), alice, run.StartRequest{Input: "go"}, true)
	if err != nil {
		t.Fatal(err)
	}
	got := follow(t, started.Stream, time.Minute)
	if end, ok := got[len(got)-1].Payload.(event.RunFinishedData); !ok || end.Status != event.StatusSucceeded {
		t.Fatalf("last event %+v", got[len(got)-1])
	}
	if n := slow.renewals.Load(); n != 0 {
		t.Fatalf("a sole replica renewed its heartbeat %d times", n)
	}
}

// slowStore delays every event write, and counts heartbeats.
type slowStore struct {
	store.Store
	delay    time.Duration
	renewals atomic.Int32
	mu       sync.Mutex
}

func (s *slowStore) AppendEvents(ctx context.Context, evs []event.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-time.After(s.delay): // a slow disk: nothing to synchronise with
	case <-ctx.Done():
		return ctx.Err()
	}
	return s.Store.AppendEvents(ctx, evs)
}

func (s *slowStore) RenewReplica(ctx context.Context, id string, epoch int64, now, until time.Time) error {
	s.renewals.Add(1)
	return s.Store.RenewReplica(ctx, id, epoch, now, until)
}

var _ bus.Bus = (*lossyBus)(nil)

// A cancel that arrives while the run pauses for a person (the engine had
// already decided to wait) is not lost: the wait ends, cancelled, and its
// confirmation with it.
func TestCancelAsTheRunPauses(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	b := membus.New(0)
	t.Cleanup(func() { b.Close() })
	asked := make(chan struct{})
	eng := engineFunc(func(ctx context.Context, task engine.Task, h engine.Host) engine.Outcome {
		if _, err := h.RequestConfirmation(ctx, chat.Confirmation{ToolCallID: "call_1", ToolName: "send", Args: json.RawMessage(`{}`)}); err != nil {
			return engine.Outcome{Status: engine.StatusFailed}
		}
		close(asked)
		<-ctx.Done() // the cancel comes in while the engine returns its pause
		return engine.Outcome{Status: engine.StatusAwaiting, State: json.RawMessage(`{}`), Awaiting: []string{"call_1"}}
	})
	s := run.New(run.Config{Store: st, Bus: b, Engine: eng, Sole: true})
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	started, err := s.Start(t.Context(), alice, run.StartRequest{Input: "go"}, false)
	if err != nil {
		t.Fatal(err)
	}
	<-asked
	if _, err := s.Cancel(t.Context(), alice, started.Run.ID); err != nil {
		t.Fatal(err)
	}
	got := waitRun(t, st, started.Run.ID, ended)
	if got.Status != chat.RunCancelled {
		t.Fatalf("run %+v", got)
	}
	list, err := st.ListConfirmations(t.Context(), alice, "")
	if err != nil || len(list) != 1 || list[0].Status != chat.ConfirmCancelled {
		t.Fatalf("confirmations %+v (%v)", list, err)
	}
}

// A tool call interrupted by its executor's death ends failed, with a
// readable reason, before the run's failed end (issue 11): no call stays
// "running" in the timeline after its run ended.
func TestTakeoverEndsTheCallsItFindsRunning(t *testing.T) {
	t.Parallel()
	st, b := openStore(t), newRetainingBus(t)
	ctx := context.Background()
	c, err := st.CreateConversation(ctx, alice, chat.Conversation{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := st.CreateRun(ctx, alice, chat.Run{ConversationID: c.ID, Input: "x", Status: chat.RunRunning, LeaseOwner: "dead", LeaseEpoch: 1})
	if err != nil {
		t.Fatal(err)
	}
	args := json.RawMessage(`{"url":"https://example.com"}`)
	var evs []event.Event
	for i, p := range []event.Payload{
		event.ToolCallStartedData{ToolCallID: "call_1", Name: "http_get"},
		event.ToolCallReadyData{ToolCallID: "call_1", Name: "http_get", Args: args},
		event.ToolRunningData{ToolCallID: "call_1", Name: "http_get", Args: args},
		event.ToolCallStartedData{ToolCallID: "call_2", Name: "calculator"},
		event.ToolResultData{ToolCallID: "call_2", Name: "calculator", Status: event.ToolSuccess, Args: json.RawMessage(`{}`)},
	} {
		ev := event.New(p)
		ev.Tenant, ev.Thread, ev.Run, ev.Seq, ev.Time, ev.Turn = "acme", c.ID, r.ID, int64(i+1), time.Now().UTC(), r.TurnID
		evs = append(evs, ev)
	}
	if err := st.AppendEvents(ctx, evs); err != nil {
		t.Fatal(err)
	}
	replica(t, "b", st, b, streaming(0))
	if got := waitRun(t, st, r.ID, ended); got.Status != chat.RunFailed {
		t.Fatalf("run %+v", got)
	}
	_, timeline, err := replica(t, "c", st, b, streaming(0)).Timeline(ctx, alice, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	var results []event.ToolResultData
	for _, ev := range timeline {
		if p, ok := ev.Payload.(event.ToolResultData); ok {
			results = append(results, p)
		}
	}
	if len(results) != 2 || results[1].ToolCallID != "call_1" || results[1].Status != event.ToolFailure || results[1].Error == "" || string(results[1].Args) != string(args) {
		t.Fatalf("tool results %+v", results)
	}
	if n := len(timeline); timeline[n-2].Type != event.Error || !timeline[n-1].Terminal() {
		t.Fatalf("timeline ends %s, %s", timeline[n-2].Type, timeline[n-1].Type)
	}
}

// lapsing is a store that is away for heartbeats until told otherwise,
// and holds the registration of a new term until released.
type lapsing struct {
	store.Store
	away        atomic.Bool
	registering chan struct{} // closed when a new term is being registered
	release     chan struct{}
	once        sync.Once
}

func (s *lapsing) RenewReplica(ctx context.Context, id string, epoch int64, now, until time.Time) error {
	if s.away.Load() {
		return errDown
	}
	return s.Store.RenewReplica(ctx, id, epoch, now, until)
}

func (s *lapsing) RegisterReplica(ctx context.Context, id string, until time.Time, sole bool) (int64, error) {
	if s.away.Load() {
		s.once.Do(func() { close(s.registering) })
		select {
		case <-s.release:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	return s.Store.RegisterReplica(ctx, id, until, sole)
}

// A start in the gap between a term fenced by a store outage and its
// successor waits for the successor rather than answer unavailable: right
// after the store is back, requests succeed.
func TestStartWaitsForTheNextTerm(t *testing.T) {
	t.Parallel()
	st := &lapsing{Store: openStore(t), registering: make(chan struct{}), release: make(chan struct{})}
	b := membus.New(0)
	t.Cleanup(func() { b.Close() })
	s := replica(t, "a", st, b, streaming(1))
	if err := s.Ready(t.Context()); err != nil {
		t.Fatal(err)
	}
	st.away.Store(true)
	<-st.registering // the term was fenced; its successor waits for the store
	done := make(chan error, 1)
	go func() {
		_, err := s.Start(context.Background(), alice, run.StartRequest{Input: "go"}, false)
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("a start in the gap did not wait for the next term: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	st.away.Store(false)
	close(st.release)
	if err := <-done; err != nil {
		t.Fatalf("start once the store is back: %v", err)
	}
}

// On the embedded default (the only process, the in-process bus) no publish
// can be lost, so a stream never polls the log while its run goes on: a
// thousand streams polling every second each held a read connection
// (issue 25). Where a publish can be lost (a bus that may drop one, or
// other replicas writing the thread) a stream still looks.
func TestStreamLooksAtTheLogOnlyWhereAPublishCanBeLost(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		sole  bool
		lossy bool
		looks bool
	}{
		{name: "sole, in-process bus", sole: true},
		{name: "sole, a bus that may lose a publish", sole: true, lossy: true, looks: true},
		{name: "replicas, in-process bus", looks: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			mem := membus.New(0)
			t.Cleanup(func() { mem.Close() })
			var b bus.Bus = mem
			if tc.lossy {
				b = &lossyBus{Bus: mem}
			}
			release := make(chan struct{})
			eng := engineFunc(func(ctx context.Context, task engine.Task, h engine.Host) engine.Outcome {
				h.Emit(ctx, event.New(event.TextDeltaData{MessageID: "m", Delta: "hi"}))
				select {
				case <-release:
				case <-ctx.Done():
				}
				return engine.Outcome{Status: engine.StatusSucceeded}
			})
			var s *run.Service
			if tc.sole {
				s = run.New(run.Config{Store: openStore(t), Bus: b, Engine: eng, Sole: true})
				t.Cleanup(func() { s.Shutdown(context.Background()) })
			} else {
				s = replica(t, "a", openStore(t), b, eng)
			}
			started, err := s.Start(t.Context(), alice, run.StartRequest{Input: "go"}, true)
			if err != nil {
				t.Fatal(err)
			}
			thread, err := s.Follow(t.Context(), alice, started.Run.ConversationID, "", 0)
			if err != nil {
				t.Fatal(err)
			}
			defer thread.Close()
			// The run's first event is out: both streams are in the run.
			readUntil(t, started.Stream, nil, func(evs []event.Event) bool { return len(evs) > 0 && evs[len(evs)-1].Type == event.TextDelta }, time.Minute)
			readUntil(t, thread, nil, func(evs []event.Event) bool { return len(evs) > 0 && evs[len(evs)-1].Type == event.TextDelta }, time.Minute)
			for name, st := range map[string]*run.Stream{"run": started.Stream, "thread": thread} {
				if looks := st.CheckAfter() > 0; looks != tc.looks {
					t.Errorf("%s stream: looks at the log after %s, want looking %v", name, st.CheckAfter(), tc.looks)
				}
			}
			close(release)
			follow(t, started.Stream, time.Minute)
		})
	}
}
