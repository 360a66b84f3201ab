package run_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentchat/agentchat/internal/bus"
	"github.com/agentchat/agentchat/internal/bus/membus"
	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/engine"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/run"
	"github.com/agentchat/agentchat/internal/store"
	"github.com/agentchat/agentchat/internal/store/pgstore"
	"github.com/agentchat/agentchat/internal/testenv"
)

// Crash tests: a process killed (as by kill -9) at a chosen point of a run's
// pause for a confirmation, then a new process, or another replica, going on
// with the same database. The kill is deterministic: the dead process's
// store and bus are wrappers that refuse every write and publish from the
// kill point on, and the point is chosen by what was written or published.
//
// The contract: a wait a client has seen (on the bus, in the log, or in the
// list of pending confirmations) survives: the run still awaits that
// decision, and approving it runs the tool exactly once. A wait that was not
// recorded was never seen, and its run ends.

// process is one agentchat process that a test kills. Its store and bus
// (mortalStore, mortalBus) work until then, and do nothing after: as with
// kill -9, a write either committed before the kill or never happens.
type process struct {
	mu     sync.RWMutex // writes and publishes hold it shared; the kill drains them
	dead   atomic.Bool
	killed chan struct{}
	once   sync.Once
	// at, given what the process is about to do (before) or just did, says
	// whether it dies there. Called with mu held shared.
	at func(c call) bool

	published []event.Event // what the bus delivered before the kill
}

// call is one store write or bus publish of a process.
type call struct {
	before  bool   // the write is about to be made; otherwise it was made
	method  string // the store method, or "Publish"
	events  []event.Event
	update  *store.RunUpdate
	confirm bool // it writes a confirmation
}

var errKilled = errors.New("the process was killed")

func newProcess(at func(call) bool) *process {
	return &process{killed: make(chan struct{}), at: at}
}

func (p *process) kill() {
	p.once.Do(func() {
		p.dead.Store(true)
		close(p.killed)
	})
}

// waitKilled waits for the kill point, then for every write in flight at the
// kill to finish: from then on the store holds what the process left.
func (p *process) waitKilled(t *testing.T) {
	t.Helper()
	select {
	case <-p.killed:
	case <-time.After(20 * time.Second):
		t.Fatal("the process never reached its kill point")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
}

func (p *process) sawAwaiting() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.ContainsFunc(p.published, isAwaiting)
}

func isAwaiting(ev event.Event) bool { return ev.Type == event.ToolAwaiting }

// do runs one write of the process, unless it is dead or dies just before it.
func do[T any](p *process, c call, write func() (T, error)) (T, error) {
	var zero T
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.dead.Load() {
		return zero, errKilled
	}
	c.before = true
	if p.at(c) {
		p.kill()
		return zero, errKilled
	}
	v, err := write()
	if err == nil {
		c.before = false
		if p.at(c) {
			p.kill()
		}
	}
	return v, err
}

func do0(p *process, c call, write func() error) error {
	_, err := do(p, c, func() (struct{}, error) { return struct{}{}, write() })
	return err
}

// mortalStore is a process's store: every write goes through do.
type mortalStore struct {
	store.Store
	p *process
}

func (m *mortalStore) CreateConversation(ctx context.Context, s chat.Scope, c chat.Conversation) (chat.Conversation, error) {
	return do(m.p, call{method: "CreateConversation"}, func() (chat.Conversation, error) { return m.Store.CreateConversation(ctx, s, c) })
}

func (m *mortalStore) UpdateConversation(ctx context.Context, s chat.Scope, id string, title, eng *string) (chat.Conversation, error) {
	return do(m.p, call{method: "UpdateConversation"}, func() (chat.Conversation, error) { return m.Store.UpdateConversation(ctx, s, id, title, eng) })
}

func (m *mortalStore) DeleteConversation(ctx context.Context, s chat.Scope, id string) error {
	return do0(m.p, call{method: "DeleteConversation"}, func() error { return m.Store.DeleteConversation(ctx, s, id) })
}

func (m *mortalStore) AppendMessage(ctx context.Context, s chat.Scope, msg chat.Message) (chat.Message, error) {
	return do(m.p, call{method: "AppendMessage"}, func() (chat.Message, error) { return m.Store.AppendMessage(ctx, s, msg) })
}

func (m *mortalStore) StartRun(ctx context.Context, s chat.Scope, in *store.RunStart) (store.RunStarted, error) {
	return do(m.p, call{method: "StartRun"}, func() (store.RunStarted, error) { return m.Store.StartRun(ctx, s, in) })
}

func (m *mortalStore) CreateRun(ctx context.Context, s chat.Scope, r chat.Run) (chat.Run, error) {
	return do(m.p, call{method: "CreateRun"}, func() (chat.Run, error) { return m.Store.CreateRun(ctx, s, r) })
}

func (m *mortalStore) UpdateRun(ctx context.Context, tenant, id string, u store.RunUpdate) (chat.Run, error) {
	return do(m.p, call{method: "UpdateRun", update: &u}, func() (chat.Run, error) { return m.Store.UpdateRun(ctx, tenant, id, u) })
}

func (m *mortalStore) RegisterReplica(ctx context.Context, id string, until time.Time, sole bool) (int64, error) {
	return do(m.p, call{method: "RegisterReplica"}, func() (int64, error) { return m.Store.RegisterReplica(ctx, id, until, sole) })
}

func (m *mortalStore) RenewReplica(ctx context.Context, id string, epoch int64, now, until time.Time) error {
	return do0(m.p, call{method: "RenewReplica"}, func() error { return m.Store.RenewReplica(ctx, id, epoch, now, until) })
}

func (m *mortalStore) TakeOverRun(ctx context.Context, p store.TakeOverRunParams) (bool, error) {
	return do(m.p, call{method: "TakeOverRun"}, func() (bool, error) { return m.Store.TakeOverRun(ctx, p) })
}

func (m *mortalStore) ReserveSeqs(ctx context.Context, tenant, runID string, upTo int64) error {
	return do0(m.p, call{method: "ReserveSeqs"}, func() error { return m.Store.ReserveSeqs(ctx, tenant, runID, upTo) })
}

func (m *mortalStore) ClaimRun(ctx context.Context, p store.ClaimRunParams) (chat.Run, error) {
	return do(m.p, call{method: "ClaimRun"}, func() (chat.Run, error) { return m.Store.ClaimRun(ctx, p) })
}

func (m *mortalStore) DeleteRunsEndedBefore(ctx context.Context, t time.Time) (int, error) {
	return do(m.p, call{method: "DeleteRunsEndedBefore"}, func() (int, error) { return m.Store.DeleteRunsEndedBefore(ctx, t) })
}

func (m *mortalStore) AppendEvents(ctx context.Context, evs []event.Event) error {
	return do0(m.p, call{method: "AppendEvents", events: evs}, func() error { return m.Store.AppendEvents(ctx, evs) })
}

func (m *mortalStore) CreateConfirmation(ctx context.Context, c chat.Confirmation) (chat.Confirmation, error) {
	return do(m.p, call{method: "CreateConfirmation", confirm: true}, func() (chat.Confirmation, error) { return m.Store.CreateConfirmation(ctx, c) })
}

func (m *mortalStore) DecideConfirmation(ctx context.Context, s chat.Scope, id string, d chat.Decision) (chat.Confirmation, error) {
	return do(m.p, call{method: "DecideConfirmation"}, func() (chat.Confirmation, error) { return m.Store.DecideConfirmation(ctx, s, id, d) })
}

func (m *mortalStore) ExpireConfirmations(ctx context.Context, now time.Time) ([]chat.Confirmation, error) {
	return do(m.p, call{method: "ExpireConfirmations"}, func() ([]chat.Confirmation, error) { return m.Store.ExpireConfirmations(ctx, now) })
}

func (m *mortalStore) EndConfirmations(ctx context.Context, tenant, runID string, at time.Time) (int, error) {
	return do(m.p, call{method: "EndConfirmations"}, func() (int, error) { return m.Store.EndConfirmations(ctx, tenant, runID, at) })
}

func (m *mortalStore) PauseRun(ctx context.Context, p store.PauseRunParams) error {
	return do0(m.p, call{method: "PauseRun", events: p.Events, confirm: len(p.Confirmations) > 0}, func() error { return m.Store.PauseRun(ctx, p) })
}

// mortalBus is a process's bus: nothing is published once it is dead.
type mortalBus struct {
	bus.Bus
	p *process
}

func (m *mortalBus) Publish(ctx context.Context, ev event.Event) error {
	return do0(m.p, call{method: "Publish", events: []event.Event{ev}}, func() error {
		err := m.Bus.Publish(ctx, ev)
		if err == nil {
			m.p.published = append(m.p.published, ev)
		}
		return err
	})
}

func (m *mortalBus) PublishControl(ctx context.Context, c bus.Control) error {
	return do0(m.p, call{method: "PublishControl"}, func() error { return m.Bus.PublishControl(ctx, c) })
}

// confirmingEngine pauses each new run for a person to approve a
// send_webhook call, and on approval runs it, counting the runs.
type confirmingEngine struct {
	sent      atomic.Int32
	requested atomic.Value // the confirmation id asked for
}

func (e *confirmingEngine) Execute(ctx context.Context, t engine.Task, h engine.Host) engine.Outcome {
	args := json.RawMessage(`{"url":"https://hooks.example/deploy","body":"deploy done"}`)
	if t.Resume != nil {
		c := t.Resume.Confirmation
		h.Emit(ctx, event.New(event.RunResumedData{ConfirmationID: c.ID, Decision: "approve"}))
		if c.Status == chat.ConfirmApproved {
			h.Emit(ctx, event.New(event.ToolRunningData{ToolCallID: c.ToolCallID, Name: c.ToolName, Args: args}))
			e.sent.Add(1)
			h.Emit(ctx, event.New(event.ToolResultData{ToolCallID: c.ToolCallID, Name: c.ToolName, Args: args, Status: "success", Content: "sent"}))
		}
		return engine.Outcome{Status: engine.StatusSucceeded}
	}
	h.Emit(ctx, event.New(event.TextDeltaData{MessageID: "m1", Delta: "I will send it."}))
	h.Emit(ctx, event.New(event.ToolCallReadyData{ToolCallID: "call_1", Name: "send_webhook", Args: args}))
	c, err := h.RequestConfirmation(ctx, chat.Confirmation{ToolCallID: "call_1", ToolName: "send_webhook", Args: args})
	if err != nil {
		return engine.Outcome{Status: engine.StatusFailed, Error: &event.ErrorInfo{Code: "confirmation_failed", Message: err.Error()}}
	}
	e.requested.Store(c.ID)
	return engine.Outcome{Status: engine.StatusAwaiting, State: json.RawMessage(`{"awaiting":["call_1"]}`), Awaiting: []string{"call_1"},
		Announce: []event.Event{event.New(event.ToolAwaitingData{ToolCallID: "call_1", Name: "send_webhook", Args: args,
			ConfirmationID: c.ID, ExpiresAt: c.ExpiresAt, Message: "Allow send_webhook to run with these arguments?"})}}
}

// crashPoints are the moments of a pause a process is killed at, and
// whether a client can have seen the wait by then.
var crashPoints = []struct {
	name     string
	at       func(c call) bool
	wantSeen bool
}{
	{
		name: "just before the wait is written",
		at: func(c call) bool {
			return c.before && c.method != "Publish" && (c.confirm || slices.ContainsFunc(c.events, isAwaiting))
		},
		wantSeen: false,
	},
	{
		name:     "once the confirmation is listed pending",
		at:       func(c call) bool { return !c.before && c.confirm },
		wantSeen: true,
	},
	{
		name: "once the wait's announcement is written",
		at: func(c call) bool {
			return !c.before && c.method != "Publish" && slices.ContainsFunc(c.events, isAwaiting)
		},
		wantSeen: true,
	},
	{
		name:     "as a client receives tool.awaiting_input",
		at:       func(c call) bool { return !c.before && c.method == "Publish" && isAwaiting(c.events[0]) },
		wantSeen: true,
	},
	{
		name:     "once the run is recorded as waiting",
		at:       func(c call) bool { return !c.before && c.update != nil && c.update.Status == chat.RunAwaitingInput },
		wantSeen: true,
	},
}

// A process killed at any point of a pause, on the embedded default (one
// process over its SQLite file), started again on the same file: a wait a
// client saw is still awaited, and approving it runs the tool once.
func TestCrashDuringPauseSole(t *testing.T) {
	t.Parallel()
	for _, tt := range crashPoints {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := openStore(t)
			p := newProcess(tt.at)
			eng := &confirmingEngine{}
			published := newRetainingBus(t) // what the dead process published
			dead := run.New(run.Config{Store: &mortalStore{Store: st, p: p}, Bus: &mortalBus{Bus: published, p: p}, Engine: eng,
				ReplicaID: "first", Sole: true, SweepInterval: 20 * time.Millisecond})
			t.Cleanup(func() { shutdown(dead) })
			ready(t, dead)
			started, err := dead.Start(t.Context(), alice, run.StartRequest{Input: "tell the deploy hook we are done"}, false)
			if err != nil {
				t.Fatal(err)
			}
			p.waitKilled(t)
			seen := seenWait(t, st, p, started.Run.ConversationID)

			// The same file, a new process: a new in-process bus.
			next := run.New(run.Config{Store: st, Bus: membus.New(0), Engine: eng, ReplicaID: "second", Sole: true,
				SweepInterval: 20 * time.Millisecond})
			t.Cleanup(func() { shutdown(next) })
			ready(t, next)
			checkAfterCrash(t, st, published, next, eng, started.Run, seen, tt.wantSeen)
		})
	}
}

// A replica killed at any point of a pause, on PostgreSQL with another
// replica beside it: the survivor's takeover leaves a wait a client saw
// awaited, and approving it there runs the tool once.
func TestCrashDuringPauseTakeover(t *testing.T) {
	t.Parallel()
	dbURL := testenv.Postgres(t)
	for _, tt := range crashPoints {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := openPostgres(t, dbURL)
			p := newProcess(tt.at)
			eng := &confirmingEngine{}
			shared := newRetainingBus(t) // Redis: it retains what was published
			dead := run.New(run.Config{Store: &mortalStore{Store: st, p: p}, Bus: &mortalBus{Bus: shared, p: p}, Engine: eng,
				ReplicaID: "a", LeaseTTL: leaseTTL, SweepInterval: 20 * time.Millisecond})
			t.Cleanup(func() { shutdown(dead) })
			survivor := replica(t, "b", st, shared, eng)
			ready(t, dead)
			ready(t, survivor)
			started, err := dead.Start(t.Context(), alice, run.StartRequest{Input: "tell the deploy hook we are done"}, false)
			if err != nil {
				t.Fatal(err)
			}
			p.waitKilled(t)
			seen := seenWait(t, st, p, started.Run.ConversationID)
			// The survivor takes the run over once a's term lapses.
			waitRun(t, st, started.Run.ID, func(r chat.Run) bool { return r.Status != chat.RunRunning })
			checkAfterCrash(t, st, shared, survivor, eng, started.Run, seen, tt.wantSeen)
		})
	}
}

func ready(t *testing.T, s *run.Service) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := s.Ready(ctx); err != nil {
		t.Fatal(err)
	}
}

func shutdown(s *run.Service) {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	s.Shutdown(ctx)
}

// openPostgres opens a store on a schema of its own, dropped after the test.
func openPostgres(t *testing.T, dbURL string) store.Store {
	t.Helper()
	b := make([]byte, 8)
	rand.Read(b)
	schema := "agentchat_run_test_" + hex.EncodeToString(b)
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("schema", schema)
	u.RawQuery = q.Encode()
	st, err := pgstore.Open(t.Context(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		st.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, dbURL)
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `DROP SCHEMA `+schema+` CASCADE`); err != nil {
			t.Error(err)
		}
	})
	return st
}

// seenWait reports whether a client can have seen the run's wait by the
// time its process died: delivered by the bus, in the log, or listed pending.
func seenWait(t *testing.T, st store.Store, p *process, thread string) bool {
	t.Helper()
	evs, err := st.ListEvents(context.Background(), alice, store.ListEventsParams{Thread: thread})
	if err != nil {
		t.Fatal(err)
	}
	pending, err := st.ListConfirmations(context.Background(), alice, chat.ConfirmPending)
	if err != nil {
		t.Fatal(err)
	}
	return p.sawAwaiting() || slices.ContainsFunc(evs, isAwaiting) || len(pending) > 0
}

// checkAfterCrash checks the contract on the process going on after the
// crash: a wait seen is awaited and approving it runs the tool once; a wait
// not seen ended with its run.
func checkAfterCrash(t *testing.T, st store.Store, published *retainingBus, s *run.Service, eng *confirmingEngine, r chat.Run, seen, wantSeen bool) {
	t.Helper()
	ctx := t.Context()
	if seen != wantSeen {
		t.Fatalf("a client could see the wait: %v, want %v", seen, wantSeen)
	}
	got, err := s.Get(ctx, alice, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	pending, err := s.Confirmations(ctx, alice, chat.ConfirmPending)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := eng.requested.Load().(string)
	if !seen {
		if got.Status != chat.RunFailed || got.Error == nil || got.Error.Code != "executor_lost" || len(pending) != 0 {
			t.Fatalf("a wait nobody saw: run %s %+v, %d pending", got.Status, got.Error, len(pending))
		}
		if id != "" {
			if _, err := s.Decide(ctx, alice, id, chat.Decision{Status: chat.ConfirmApproved}); err == nil {
				t.Fatal("approved a confirmation whose run ended")
			}
		}
		if n := eng.sent.Load(); n != 0 {
			t.Fatalf("the tool ran %d times", n)
		}
		checkLog(t, st, published, r.ConversationID)
		return
	}
	if got.Status != chat.RunAwaitingInput {
		t.Fatalf("after the crash the run is %s (%+v), not awaiting the decision a client saw", got.Status, got.Error)
	}
	if len(pending) != 1 || pending[0].ID != id || pending[0].RunID != r.ID {
		t.Fatalf("pending confirmations %+v, want %s", pending, id)
	}
	if _, err := s.Decide(ctx, alice, id, chat.Decision{Status: chat.ConfirmApproved}); err != nil {
		t.Fatalf("approve after the crash: %v", err)
	}
	if got := waitRun(t, st, r.ID, ended); got.Status != chat.RunSucceeded {
		t.Fatalf("approved run %s %+v", got.Status, got.Error)
	}
	if n := eng.sent.Load(); n != 1 {
		t.Fatalf("the tool ran %d times", n)
	}
	evs := checkLog(t, st, published, r.ConversationID)
	count := func(typ event.Type) int {
		return len(slices.DeleteFunc(slices.Clone(evs), func(ev event.Event) bool { return ev.Type != typ }))
	}
	if count(event.ToolAwaiting) != 1 || count(event.RunResumed) != 1 || count(event.ToolResult) != 1 || !evs[len(evs)-1].Terminal() {
		t.Fatalf("timeline %v", types(evs))
	}
}

func types(evs []event.Event) []event.Type {
	out := make([]event.Type, len(evs))
	for i, ev := range evs {
		out[i] = ev.Type
	}
	return out
}
