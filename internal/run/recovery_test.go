package run_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
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
	"github.com/agentchat/agentchat/internal/store/sqlitestore"
	"github.com/agentchat/agentchat/internal/store/sqlitestore/sqlitetest"
)

// These tests play several replicas in one process: services sharing one
// store and one bus, each with its own replica id, against faults injected
// into the store (unavailable) and the bus (retained history, lost control
// messages).

var alice = chat.Scope{Tenant: "acme", User: "alice"}

const leaseTTL = 2 * time.Second

func openStore(t *testing.T) store.Store {
	t.Helper()
	st, err := sqlitestore.Open(context.Background(), sqlitetest.Path(t)) // migrated and empty
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// engineFunc is an engine made of one function.
type engineFunc func(ctx context.Context, t engine.Task, h engine.Host) engine.Outcome

func (f engineFunc) Execute(ctx context.Context, t engine.Task, h engine.Host) engine.Outcome {
	return f(ctx, t, h)
}

// streaming emits a text delta every 10ms until cancelled or n are out.
func streaming(n int) engineFunc {
	return func(ctx context.Context, t engine.Task, h engine.Host) engine.Outcome {
		for i := range n {
			select {
			case <-ctx.Done():
				return engine.Outcome{Status: engine.StatusSucceeded}
			case <-time.After(10 * time.Millisecond):
			}
			h.Emit(ctx, event.New(event.TextDeltaData{MessageID: "m", Delta: fmt.Sprintf("t%d ", i)}))
		}
		return engine.Outcome{Status: engine.StatusSucceeded}
	}
}

func replica(t *testing.T, name string, st store.Store, b bus.Bus, eng engine.Engine) *run.Service {
	t.Helper()
	return replicaWithLease(t, name, st, b, eng, leaseTTL)
}

// steadyLease is the lease of a replica that must keep its runs: on a
// loaded box (CI at load 15) a stall of about a second fenced a replica
// with the 2 s leaseTTL, and its run ended executor_lost in a test that
// meant no lapse.
const steadyLease = 10 * time.Second

// replicaWithLease is replica with a lease of its own.
func replicaWithLease(t *testing.T, name string, st store.Store, b bus.Bus, eng engine.Engine, lease time.Duration) *run.Service {
	t.Helper()
	s := run.New(run.Config{Store: st, Bus: b, Engine: eng, ReplicaID: name, LeaseTTL: lease, SweepInterval: 20 * time.Millisecond})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		s.Shutdown(ctx)
	})
	return s
}

// retainingBus is an in-process bus that also keeps what was published, as
// Redis does, and can lose control messages, as Pub/Sub may.
type retainingBus struct {
	*membus.Bus
	mu           sync.Mutex
	kept         map[string][]event.Event // by thread
	changed      chan struct{}            // closed and replaced when kept grows
	dropControls atomic.Bool
}

func newRetainingBus(t *testing.T) *retainingBus {
	b := &retainingBus{Bus: membus.New(0), kept: map[string][]event.Event{}, changed: make(chan struct{})}
	t.Cleanup(func() { b.Close() })
	return b
}

func (b *retainingBus) Publish(ctx context.Context, ev event.Event) error {
	b.mu.Lock()
	kept := b.kept[ev.Thread]
	if n := len(kept); n > 0 && kept[n-1].Seq >= ev.Seq {
		b.mu.Unlock()
		return nil // Redis keeps the first copy of a seq
	}
	b.kept[ev.Thread] = append(kept, ev)
	close(b.changed)
	b.changed = make(chan struct{})
	b.mu.Unlock()
	return b.Bus.Publish(ctx, ev)
}

// awaitPublished waits until at least n events of thread were published.
func (b *retainingBus) awaitPublished(t *testing.T, thread string, n int) {
	t.Helper()
	b.await(t, thread, fmt.Sprintf("%d events", n), func(kept []event.Event) bool { return len(kept) >= n })
}

// awaitEnd waits until thread's run end (a terminal event) was published
// and returns its seq. A run's end is stored before it is published, so a
// run read as ended may not have reached the bus yet.
func (b *retainingBus) awaitEnd(t *testing.T, thread string) int64 {
	t.Helper()
	var end int64
	b.await(t, thread, "the run's end", func(kept []event.Event) bool {
		for _, ev := range kept {
			if ev.Terminal() {
				end = ev.Seq
			}
		}
		return end != 0
	})
	return end
}

// await waits until done holds for thread's published events.
func (b *retainingBus) await(t *testing.T, thread, what string, done func([]event.Event) bool) {
	t.Helper()
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	for {
		b.mu.Lock()
		ok, changed := done(b.kept[thread]), b.changed
		b.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-changed:
		case <-timeout.C:
			t.Fatalf("%s of %s not published within 30s", what, thread)
		}
	}
}

func (b *retainingBus) Retained(_ context.Context, _, thread string, after int64) ([]event.Event, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []event.Event
	for _, ev := range b.kept[thread] {
		if ev.Seq > after {
			out = append(out, ev)
		}
	}
	return out, nil
}

func (b *retainingBus) PublishControl(ctx context.Context, c bus.Control) error {
	if b.dropControls.Load() {
		return nil
	}
	return b.Bus.PublishControl(ctx, c)
}

func (b *retainingBus) published(thread string) []event.Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]event.Event(nil), b.kept[thread]...)
}

// waitBound bounds waitRun: long enough for a takeover after a lease
// (steadyLease's, even) on a loaded machine, where bounds of a few seconds
// failed tests whose run ended only late (CI runs the packages side by
// side on two cores). It only stops a test that would hang; no test waits
// it out when it passes.
const waitBound = 45 * time.Second

// waitRun polls the run until done says so, at most waitBound.
func waitRun(t *testing.T, st store.Store, id string, done func(chat.Run) bool) chat.Run {
	t.Helper()
	within := waitBound
	deadline := time.Now().Add(within)
	for {
		r, err := st.GetRun(context.Background(), alice, id)
		if err == nil && done(r) {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s: %+v (%v) after %s", id, r, err, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func ended(r chat.Run) bool { return !chat.Active(r.Status) }

// checkLog fails unless the thread's log is seqs 1..n without holes (but the
// ones a SeqSkipped event accounts for), each the same as what the bus
// published under that seq. It returns the events clients see.
func checkLog(t *testing.T, st store.Store, b *retainingBus, thread string) []event.Event {
	t.Helper()
	evs, err := st.ListEvents(context.Background(), alice, store.ListEventsParams{Thread: thread})
	if err != nil {
		t.Fatal(err)
	}
	pub := map[int64]event.Event{}
	for _, ev := range b.published(thread) {
		pub[ev.Seq] = ev
	}
	next := int64(1)
	for i, ev := range evs {
		if ev.FirstSeq() != next {
			t.Fatalf("log seq %d (from %d) at position %d, where %d was due", ev.Seq, ev.FirstSeq(), i, next)
		}
		next = ev.Seq + 1
		if p, ok := pub[ev.Seq]; ok {
			a, _ := json.Marshal(p.Payload)
			c, _ := json.Marshal(ev.Payload)
			if p.Type != ev.Type || string(a) != string(c) {
				t.Fatalf("seq %d: published %s %s, logged %s %s", ev.Seq, p.Type, a, ev.Type, c)
			}
		}
	}
	for seq := range pub {
		if seq >= next {
			t.Fatalf("the bus published seq %d, the log ends at %d", seq, next-1)
		}
	}
	return slices.DeleteFunc(evs, func(ev event.Event) bool { return ev.Type == event.SeqSkipped })
}

// abandoned makes a run that a dead replica was executing: running, its
// term over, events 1..logged in the log and 1..published on the bus.
func abandoned(t *testing.T, st store.Store, b *retainingBus, logged, published int, endPublished bool) chat.Run {
	t.Helper()
	ctx := context.Background()
	c, err := st.CreateConversation(ctx, alice, chat.Conversation{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := st.CreateRun(ctx, alice, chat.Run{ConversationID: c.ID, Input: "x", Status: chat.RunRunning,
		LeaseOwner: "dead", LeaseEpoch: 1}) // a term never registered: over

	if err != nil {
		t.Fatal(err)
	}
	var evs []event.Event
	for i := 1; i <= published; i++ {
		ev := event.New(event.TextDeltaData{MessageID: "m", Delta: fmt.Sprintf("t%d", i)})
		if endPublished && i == published {
			ev = event.New(event.RunFinishedData{Status: event.StatusSucceeded})
		}
		ev.Tenant, ev.Thread, ev.Run, ev.Seq, ev.Time, ev.Turn = "acme", c.ID, r.ID, int64(i), time.Now().UTC().Truncate(time.Millisecond), r.TurnID
		evs = append(evs, ev)
		if err := b.Publish(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.AppendEvents(ctx, evs[:logged]); err != nil {
		t.Fatal(err)
	}
	return r
}

// The dead executor published 8 events and wrote 5: the replica taking over
// copies 6..8 into the log and ends the run after them, so no seq a client
// saw is reused and the log holds everything published.
func TestTakeoverContinuesAfterWhatWasPublished(t *testing.T) {
	t.Parallel()
	st, b := openStore(t), newRetainingBus(t)
	r := abandoned(t, st, b, 5, 8, false)
	q, err := b.Subscribe(t.Context(), "acme", r.ConversationID, 8)
	if err != nil {
		t.Fatal(err)
	}
	replica(t, "b", st, b, streaming(0))
	got := waitRun(t, st, r.ID, ended)
	if got.Status != chat.RunFailed || got.Error == nil || got.Error.Code != "executor_lost" || got.EndedAt == nil {
		t.Fatalf("run %+v", got)
	}
	// The takeover records the end before it publishes it: wait for it there.
	for seen := []event.Event(nil); !slices.ContainsFunc(seen, event.Event.Terminal); {
		select {
		case <-q.Ready():
		case <-time.After(5 * time.Second):
			t.Fatalf("the end was not published; the bus got %v", seen)
		}
		if seen, err = q.Drain(seen); err != nil {
			t.Fatal(err)
		}
	}
	evs := checkLog(t, st, b, r.ConversationID)
	if len(evs) != 10 || evs[8].Type != event.Error || !evs[9].Terminal() {
		t.Fatalf("log %v", evs)
	}
	if pub := b.published(r.ConversationID); len(pub) != 10 {
		t.Fatalf("bus has %d events", len(pub))
	}
}

// The dead executor published its run's end but died before recording it:
// the takeover records that end rather than inventing another.
func TestTakeoverRecordsAnEndAlreadyPublished(t *testing.T) {
	t.Parallel()
	st, b := openStore(t), newRetainingBus(t)
	r := abandoned(t, st, b, 3, 6, true)
	replica(t, "b", st, b, streaming(0))
	got := waitRun(t, st, r.ID, ended)
	if got.Status != chat.RunSucceeded {
		t.Fatalf("run %+v", got)
	}
	if evs := checkLog(t, st, b, r.ConversationID); len(evs) != 6 {
		t.Fatalf("log has %d events", len(evs))
	}
}

// A cancel requested while its run ran elsewhere ends it cancelled, even
// when the executor is gone.
func TestTakeoverHonoursACancelRequest(t *testing.T) {
	t.Parallel()
	st, b := openStore(t), newRetainingBus(t)
	r := abandoned(t, st, b, 2, 2, false)
	if _, err := st.UpdateRun(context.Background(), "acme", r.ID, store.RunUpdate{CancelRequested: true}); err != nil {
		t.Fatal(err)
	}
	replica(t, "b", st, b, streaming(0))
	if got := waitRun(t, st, r.ID, ended); got.Status != chat.RunCancelled {
		t.Fatalf("run %+v", got)
	}
	if evs := checkLog(t, st, b, r.ConversationID); len(evs) != 3 || !evs[2].Terminal() {
		t.Fatalf("log %v", evs)
	}
}

// A cancel whose message is lost still reaches the executor, through the
// stored request its replica reads at each heartbeat: a ends the run
// itself, cancelled, on its own term. (Had the cancel not reached it, the
// run would have gone on to succeed, or, had a's lease lapsed, b would have
// taken it over: neither is a cancel that reached its executor. a's lease
// is steadyLease so that no stall of a loaded machine lapses it.)
func TestCancelWithoutTheMessage(t *testing.T) {
	t.Parallel()
	st, b := openStore(t), newRetainingBus(t)
	a := replicaWithLease(t, "a", st, b, streaming(10_000), steadyLease)
	other := replica(t, "b", st, b, streaming(0))
	started, err := a.Start(context.Background(), alice, run.StartRequest{Input: "go"}, false)
	if err != nil {
		t.Fatal(err)
	}
	b.dropControls.Store(true)
	if _, err := other.Cancel(context.Background(), alice, started.Run.ID); err != nil {
		t.Fatal(err)
	}
	got := waitRun(t, st, started.Run.ID, ended)
	if got.Status != chat.RunCancelled || got.LeaseOwner != "a" || got.LeaseEpoch != started.Run.LeaseEpoch {
		t.Fatalf("run %+v: want cancelled by its executor a (epoch %d), not taken over", got, started.Run.LeaseEpoch)
	}
	checkLog(t, st, b, started.Run.ConversationID)
}

// unavailable is a store that can be cut off, as a replica cut off from
// PostgreSQL: every call fails with store.ErrUnavailable.
type unavailable struct {
	store.Store
	down atomic.Bool

	mu            sync.Mutex
	appendRefused int           // AppendEvents calls refused while down
	refusedAppend chan struct{} // closed and replaced at each
}

var errDown = fmt.Errorf("%w: connection refused", store.ErrUnavailable)

func newUnavailable(st store.Store) *unavailable {
	return &unavailable{Store: st, refusedAppend: make(chan struct{})}
}

func (u *unavailable) AppendEvents(ctx context.Context, evs []event.Event) error {
	if u.down.Load() {
		u.mu.Lock()
		u.appendRefused++
		close(u.refusedAppend)
		u.refusedAppend = make(chan struct{})
		u.mu.Unlock()
		return errDown
	}
	return u.Store.AppendEvents(ctx, evs)
}

func (u *unavailable) RenewReplica(ctx context.Context, id string, epoch int64, now, until time.Time) error {
	if u.down.Load() {
		return errDown
	}
	return u.Store.RenewReplica(ctx, id, epoch, now, until)
}

func (u *unavailable) RegisterReplica(ctx context.Context, id string, until time.Time, sole bool) (int64, error) {
	if u.down.Load() {
		return 0, errDown
	}
	return u.Store.RegisterReplica(ctx, id, until, sole)
}

func (u *unavailable) TakeOverRun(ctx context.Context, p store.TakeOverRunParams) (bool, error) {
	if u.down.Load() {
		return false, errDown
	}
	return u.Store.TakeOverRun(ctx, p)
}

func (u *unavailable) UpdateRun(ctx context.Context, tenant, id string, up store.RunUpdate) (chat.Run, error) {
	if u.down.Load() {
		return chat.Run{}, errDown
	}
	return u.Store.UpdateRun(ctx, tenant, id, up)
}

func (u *unavailable) GetRunAnyOwner(ctx context.Context, tenant, id string) (chat.Run, error) {
	if u.down.Load() {
		return chat.Run{}, errDown
	}
	return u.Store.GetRunAnyOwner(ctx, tenant, id)
}

func (u *unavailable) OrphanedRuns(ctx context.Context, now time.Time, limit int) ([]chat.Run, error) {
	if u.down.Load() {
		return nil, errDown
	}
	return u.Store.OrphanedRuns(ctx, now, limit)
}

func (u *unavailable) CancelRequests(ctx context.Context, owner string, epoch int64) ([]string, error) {
	if u.down.Load() {
		return nil, errDown
	}
	return u.Store.CancelRequests(ctx, owner, epoch)
}

// logWatch is a slog.Handler that keeps the messages logged, for a test to
// wait for one.
type logWatch struct {
	mu      sync.Mutex
	msgs    []string
	changed chan struct{} // closed and replaced at each message
}

func newLogWatch() *logWatch { return &logWatch{changed: make(chan struct{})} }

func (w *logWatch) Enabled(context.Context, slog.Level) bool { return true }
func (w *logWatch) WithAttrs([]slog.Attr) slog.Handler       { return w }
func (w *logWatch) WithGroup(string) slog.Handler            { return w }

func (w *logWatch) Handle(_ context.Context, r slog.Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, r.Message)
	close(w.changed)
	w.changed = make(chan struct{})
	return nil
}

// await waits until a message starting with prefix was logged.
func (w *logWatch) await(t *testing.T, prefix string) {
	t.Helper()
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	for seen := 0; ; {
		w.mu.Lock()
		msgs, changed := w.msgs[seen:], w.changed
		seen = len(w.msgs)
		w.mu.Unlock()
		for _, m := range msgs {
			if strings.HasPrefix(m, prefix) {
				return
			}
		}
		select {
		case <-changed:
		case <-timeout.C:
			t.Fatalf("no %q logged within 30s", prefix)
		}
	}
}

// awaitAppendRefused waits until the event log has had a write refused
// since the store went down: the outage has been felt.
func (u *unavailable) awaitAppendRefused(t *testing.T) {
	t.Helper()
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	for {
		u.mu.Lock()
		n, changed := u.appendRefused, u.refusedAppend
		u.mu.Unlock()
		if n > 0 {
			return
		}
		select {
		case <-changed:
		case <-timeout.C:
			t.Fatal("the event log wrote nothing within 30s of the store going down")
		}
	}
}

// A replica cut off from the store stops acting for its run before its term
// ends; another replica ends the run after what was published; when the
// store comes back, the cut-off replica's held events do not overwrite or
// follow that end.
func TestCutOffExecutorIsFenced(t *testing.T) {
	t.Parallel()
	shared, b := openStore(t), newRetainingBus(t)
	cut := newUnavailable(shared)
	logs := newLogWatch()
	a := run.New(run.Config{Store: cut, Bus: b, Engine: streaming(10_000), ReplicaID: "a", LeaseTTL: leaseTTL,
		SweepInterval: 20 * time.Millisecond, Logger: slog.New(logs)})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		a.Shutdown(ctx)
	})
	replica(t, "b", shared, b, streaming(0))
	started, err := a.Start(context.Background(), alice, run.StartRequest{Input: "go"}, false)
	if err != nil {
		t.Fatal(err)
	}
	b.awaitPublished(t, started.Run.ConversationID, 5) // some events out
	cut.down.Store(true)
	got := waitRun(t, shared, started.Run.ID, ended)
	if got.Status != chat.RunFailed || got.Error == nil || got.Error.Code != "executor_lost" {
		t.Fatalf("run %+v", got)
	}
	endSeq := b.awaitEnd(t, started.Run.ConversationID)
	cut.down.Store(false)
	// a's writer drops what it held for the fenced execution, rather than
	// write it after the end.
	logs.await(t, "event log: dropped events of executions that stopped acting")
	evs := checkLog(t, shared, b, started.Run.ConversationID)
	if last := evs[len(evs)-1]; !last.Terminal() || last.Seq != endSeq {
		t.Fatalf("the log ends with %d %s, the run's end is %d", last.Seq, last.Type, endSeq)
	}
	if pub := b.published(started.Run.ConversationID); pub[len(pub)-1].Seq != endSeq {
		t.Fatalf("the bus got seq %d after the end %d", pub[len(pub)-1].Seq, endSeq)
	}
}

// A store outage shorter than the lease costs nothing: the executor holds its
// events, retries, and finishes normally.
func TestShortStoreOutage(t *testing.T) {
	t.Parallel()
	shared, b := openStore(t), newRetainingBus(t)
	cut := newUnavailable(shared)
	a := replicaWithLease(t, "a", cut, b, streaming(40), steadyLease) // the outage must not fence it
	replica(t, "b", shared, b, streaming(0))
	started, err := a.Start(context.Background(), alice, run.StartRequest{Input: "go"}, false)
	if err != nil {
		t.Fatal(err)
	}
	// Mid-stream, the store goes away until the executor's event log has
	// felt it (a write refused), then comes back. Waiting for that, rather
	// than sleeping leaseTTL/3, keeps the outage well inside the lease on a
	// loaded machine too: a sleep of a third of the lease, stretched by the
	// scheduler, outlasted the margin between heartbeats and fenced the run.
	b.awaitPublished(t, started.Run.ConversationID, 5)
	cut.down.Store(true)
	cut.awaitAppendRefused(t)
	cut.down.Store(false)
	got := waitRun(t, shared, started.Run.ID, ended)
	if got.Status != chat.RunSucceeded {
		t.Fatalf("run %+v", got)
	}
	evs := checkLog(t, shared, b, started.Run.ConversationID)
	deltas := 0
	for _, ev := range evs {
		if ev.Type == event.TextDelta {
			deltas++
		}
	}
	if deltas != 40 || !evs[len(evs)-1].Terminal() {
		t.Fatalf("%d deltas, last %s", deltas, evs[len(evs)-1].Type)
	}
}

// awaitingEngine pauses on its first execution and succeeds on a resume.
var awaitingEngine = engineFunc(func(ctx context.Context, t engine.Task, h engine.Host) engine.Outcome {
	if t.Resume != nil {
		h.Emit(ctx, event.New(event.RunResumedData{ConfirmationID: t.Resume.Confirmation.ID, Decision: "approve"}))
		return engine.Outcome{Status: engine.StatusSucceeded}
	}
	if _, err := h.RequestConfirmation(ctx, chat.Confirmation{ToolCallID: "call_1", ToolName: "send", Args: json.RawMessage(`{}`)}); err != nil {
		return engine.Outcome{Status: engine.StatusFailed}
	}
	return engine.Outcome{Status: engine.StatusAwaiting, State: json.RawMessage(`{}`), Awaiting: []string{"call_1"}}
})

// A decision recorded but never acted on (the deciding replica died between
// the two) is applied by the sweep, once.
func TestUnappliedDecisionIsApplied(t *testing.T) {
	t.Parallel()
	st, b := openStore(t), newRetainingBus(t)
	// No lease lapses here (the dead decider is simulated below): with
	// leaseTTL a stall on a loaded box fenced the resumed run (CI, load 15).
	a := replicaWithLease(t, "a", st, b, awaitingEngine, steadyLease)
	started, err := a.Start(context.Background(), alice, run.StartRequest{Input: "go"}, false)
	if err != nil {
		t.Fatal(err)
	}
	waitRun(t, st, started.Run.ID, func(r chat.Run) bool { return r.Status == chat.RunAwaitingInput })
	list, err := st.ListConfirmations(context.Background(), alice, chat.ConfirmPending)
	if err != nil || len(list) != 1 {
		t.Fatalf("confirmations %v (%v)", list, err)
	}
	// Decided in the store only, as by a replica that died at once.
	if _, err := st.DecideConfirmation(context.Background(), alice, list[0].ID, chat.Decision{Status: chat.ConfirmApproved, At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	replicaWithLease(t, "b", st, b, awaitingEngine, steadyLease)
	got := waitRun(t, st, started.Run.ID, ended)
	if got.Status != chat.RunSucceeded {
		t.Fatalf("run %+v", got)
	}
	evs := checkLog(t, st, b, started.Run.ConversationID)
	resumed := 0
	for _, ev := range evs {
		if ev.Type == event.RunResumed {
			resumed++
		}
	}
	if resumed != 1 {
		t.Fatalf("resumed %d times", resumed)
	}
	c, err := st.GetConfirmation(context.Background(), alice, list[0].ID)
	if err != nil || c.AppliedAt == nil {
		t.Fatalf("confirmation %+v (%v)", c, err)
	}
}

// A stream whose subscription starts far after its position (a Redis
// subscription replays at most half a queue of history) fills the gap from
// the log: exactly the missing events, in order, once.
func TestStreamFillsAGapFromTheLog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openStore(t)
	b := membus.New(0)
	t.Cleanup(func() { b.Close() })
	s := replica(t, "a", st, b, streaming(0))
	for _, after := range []int64{0, 5, 10} {
		c, err := st.CreateConversation(ctx, alice, chat.Conversation{})
		if err != nil {
			t.Fatal(err)
		}
		mk := func(from, to int64) []event.Event {
			var out []event.Event
			for i := from; i <= to; i++ {
				ev := event.New(event.TextDeltaData{MessageID: "m", Delta: fmt.Sprintf("t%d", i)})
				ev.Tenant, ev.Thread, ev.Run, ev.Seq, ev.Time = "acme", c.ID, "r", i, time.Now().UTC()
				out = append(out, ev)
			}
			return out
		}
		if err := st.AppendEvents(ctx, mk(1, 10)); err != nil {
			t.Fatal(err)
		}
		stream, err := s.Follow(ctx, alice, c.ID, "", after)
		if err != nil {
			t.Fatal(err)
		}
		// Written by another replica after the stream read the log, and
		// reaching the stream only from seq 590 on.
		if err := st.AppendEvents(ctx, mk(11, 600)); err != nil {
			t.Fatal(err)
		}
		for _, ev := range mk(590, 600) {
			if err := b.Publish(ctx, ev); err != nil {
				t.Fatal(err)
			}
		}
		var got []event.Event
		deadline := time.After(5 * time.Second)
		for int64(len(got)) < 600-after {
			if !stream.Pending() {
				select {
				case <-stream.Ready():
				case <-deadline:
					t.Fatalf("after %d: got %d events", after, len(got))
				}
			}
			if got, err = stream.Next(ctx, got); err != nil {
				t.Fatal(err)
			}
		}
		stream.Close()
		for i, ev := range got {
			if want := after + 1 + int64(i); ev.Seq != want {
				t.Fatalf("after %d: seq %d where %d was due", after, ev.Seq, want)
			}
		}
	}
}
