package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/store"
)

// testReplicaTerms pins the heartbeat: a term lives while renewed in time,
// a new registration ends the old term, and a lapsed term cannot be revived.
func testReplicaTerms(t *testing.T, s store.Store) {
	now := time.Now()
	e1 := must[int64](t)(s.RegisterReplica(ctx(t), "a", now.Add(time.Minute), false))
	if err := s.RenewReplica(ctx(t), "a", e1, now, now.Add(2*time.Minute)); err != nil {
		t.Fatalf("renew a live term: %v", err)
	}
	e2 := must[int64](t)(s.RegisterReplica(ctx(t), "a", now.Add(time.Minute), false))
	if e2 <= e1 {
		t.Fatalf("a new term's epoch %d is not above %d", e2, e1)
	}
	wantErr(t, s.RenewReplica(ctx(t), "a", e1, now, now.Add(time.Minute)), store.ErrConflict)
	// Lapsed: renewing after alive_until is refused, whatever the epoch.
	wantErr(t, s.RenewReplica(ctx(t), "a", e2, now.Add(3*time.Minute), now.Add(4*time.Minute)), store.ErrConflict)
	wantErr(t, s.RenewReplica(ctx(t), "nobody", 1, now, now.Add(time.Minute)), store.ErrConflict)
	if e := must[int64](t)(s.RegisterReplica(ctx(t), "b", now.Add(time.Minute), false)); e != 1 {
		t.Fatalf("a new replica's first epoch is %d", e)
	}
}

// executing makes a running run of alice's executed by the term (owner, epoch).
func executing(t *testing.T, s store.Store, owner string, epoch int64) chat.Run {
	t.Helper()
	c := must[chat.Conversation](t)(s.CreateConversation(ctx(t), alice, chat.Conversation{}))
	return must[chat.Run](t)(s.CreateRun(ctx(t), alice, chat.Run{ConversationID: c.ID, Input: "x", Status: chat.RunRunning, LeaseOwner: owner, LeaseEpoch: epoch}))
}

func testOrphanedRuns(t *testing.T, s store.Store) {
	now := time.Now()
	ea := must[int64](t)(s.RegisterReplica(ctx(t), "a", now.Add(time.Minute), false))
	eb := must[int64](t)(s.RegisterReplica(ctx(t), "b", now.Add(time.Minute), false))
	live := executing(t, s, "a", ea)
	stale := executing(t, s, "a", ea)
	unknown := executing(t, s, "ghost", 1)
	// A waiting run needs no executor, whatever its term.
	waiting := executing(t, s, "ghost", 1)
	must[chat.Run](t)(s.UpdateRun(ctx(t), "acme", waiting.ID, store.RunUpdate{Status: chat.RunAwaitingInput}))

	ids := func(runs []chat.Run) map[string]bool {
		m := map[string]bool{}
		for _, r := range runs {
			m[r.ID] = true
		}
		return m
	}
	got := ids(must[[]chat.Run](t)(s.OrphanedRuns(ctx(t), now, 10)))
	if !got[unknown.ID] || got[live.ID] || got[stale.ID] || got[waiting.ID] || len(got) != 1 {
		t.Fatalf("orphans while a lives: %v", got)
	}
	// A live term's runs cannot be taken.
	if ok := must[bool](t)(s.TakeOverRun(ctx(t), store.TakeOverRunParams{Tenant: "acme", RunID: live.ID, Owner: "b", Epoch: eb, Now: now})); ok {
		t.Fatal("took over a run of a live term")
	}
	// a re-registers: its earlier term's runs are orphaned at once.
	ea2 := must[int64](t)(s.RegisterReplica(ctx(t), "a", now.Add(time.Minute), false))
	got = ids(must[[]chat.Run](t)(s.OrphanedRuns(ctx(t), now, 10)))
	if !got[live.ID] || !got[stale.ID] || !got[unknown.ID] || len(got) != 3 {
		t.Fatalf("orphans after a's new term: %v", got)
	}
	// Its own current term may take its old runs, as may another.
	if ok := must[bool](t)(s.TakeOverRun(ctx(t), store.TakeOverRunParams{Tenant: "acme", RunID: live.ID, Owner: "a", Epoch: ea2, Now: now})); !ok {
		t.Fatal("a's new term could not take its old run")
	}
	if ok := must[bool](t)(s.TakeOverRun(ctx(t), store.TakeOverRunParams{Tenant: "acme", RunID: live.ID, Owner: "a", Epoch: ea2, Now: now})); !ok {
		t.Fatal("taking a run one holds already is refused")
	}
	if ok := must[bool](t)(s.TakeOverRun(ctx(t), store.TakeOverRunParams{Tenant: "acme", RunID: live.ID, Owner: "b", Epoch: eb, Now: now})); ok {
		t.Fatal("b took a run a's live term holds")
	}
	if r := must[chat.Run](t)(s.GetRunAnyOwner(ctx(t), "acme", live.ID)); r.LeaseOwner != "a" || r.LeaseEpoch != ea2 {
		t.Fatalf("run after the takeover %+v", r)
	}
	// Past a's alive_until, by the caller's clock, its runs are orphans.
	later := now.Add(2 * time.Minute)
	if got := ids(must[[]chat.Run](t)(s.OrphanedRuns(ctx(t), later, 10))); !got[live.ID] {
		t.Fatalf("a lapsed term's run is not orphaned: %v", got)
	}
	if ok := must[bool](t)(s.TakeOverRun(ctx(t), store.TakeOverRunParams{Tenant: "acme", RunID: live.ID, Owner: "b", Epoch: eb, Now: later})); !ok {
		t.Fatal("b could not take a lapsed term's run")
	}
	// Other tenants find nothing; finished runs are nobody's to take.
	if ok := must[bool](t)(s.TakeOverRun(ctx(t), store.TakeOverRunParams{Tenant: "evil", RunID: unknown.ID, Owner: "b", Epoch: eb, Now: now})); ok {
		t.Fatal("took a run of another tenant")
	}
	end := time.Now()
	must[chat.Run](t)(s.UpdateRun(ctx(t), "acme", unknown.ID, store.RunUpdate{Status: chat.RunFailed, EndedAt: &end}))
	if ok := must[bool](t)(s.TakeOverRun(ctx(t), store.TakeOverRunParams{Tenant: "acme", RunID: unknown.ID, Owner: "b", Epoch: eb, Now: now})); ok {
		t.Fatal("took a finished run")
	}
	if got := ids(must[[]chat.Run](t)(s.OrphanedRuns(ctx(t), now, 10))); got[unknown.ID] {
		t.Fatal("a finished run is listed as orphaned")
	}
}

// testSoleReplica: a process that owns the store alone ends every other
// replica's term when it registers.
func testSoleReplica(t *testing.T, s store.Store) {
	now := time.Now()
	e := must[int64](t)(s.RegisterReplica(ctx(t), "old", now.Add(time.Hour), false))
	r := executing(t, s, "old", e)
	if got := must[[]chat.Run](t)(s.OrphanedRuns(ctx(t), now, 10)); len(got) != 0 {
		t.Fatalf("orphans before the sole start: %+v", got)
	}
	must[int64](t)(s.RegisterReplica(ctx(t), "new", now.Add(time.Hour), true))
	got := must[[]chat.Run](t)(s.OrphanedRuns(ctx(t), now, 10))
	if len(got) != 1 || got[0].ID != r.ID {
		t.Fatalf("orphans after the sole start: %+v", got)
	}
	wantErr(t, s.RenewReplica(ctx(t), "old", e, now, now.Add(time.Hour)), store.ErrConflict)
}

// testRacingTakeovers: of live replicas racing for an orphaned run, exactly one wins.
func testRacingTakeovers(t *testing.T, s store.Store) {
	var wg sync.WaitGroup
	r2 := executing(t, s, "dead", 1)
	epochs := make([]int64, 8)
	for i := range epochs {
		epochs[i] = must[int64](t)(s.RegisterReplica(ctx(t), fmt.Sprintf("live-%d", i), time.Now().Add(time.Hour), false))
	}
	won := make([]bool, 8)
	for i := range won {
		wg.Go(func() {
			ok, err := s.TakeOverRun(ctx(t), store.TakeOverRunParams{Tenant: "acme", RunID: r2.ID, Owner: fmt.Sprintf("live-%d", i), Epoch: epochs[i], Now: time.Now()})
			if err != nil {
				t.Errorf("live-%d: %v", i, err)
			}
			won[i] = ok
		})
	}
	wg.Wait()
	winners := 0
	for _, ok := range won {
		if ok {
			winners++
		}
	}
	if winners != 1 {
		t.Fatalf("%d live replicas took the run", winners)
	}
}

// testExecutingCap pins StartRun's per-tenant cap: queued and running runs
// count, waiting and finished ones do not, and other tenants are apart.
func testExecutingCap(t *testing.T, s store.Store) {
	start := func(sc chat.Scope, max int) (store.RunStarted, error) {
		return s.StartRun(ctx(t), sc, &store.RunStart{
			NewConversation: &chat.Conversation{},
			Run:             chat.Run{Input: "x", Status: chat.RunRunning},
			Message:         chat.Message{Role: chat.RoleUser, Content: "x"},
			MaxExecuting:    max,
		})
	}
	first := must[store.RunStarted](t)(start(alice, 2))
	must[store.RunStarted](t)(start(bob, 2)) // same tenant, another user: counted together
	_, err := start(alice, 2)
	if !errors.Is(err, store.ErrTooManyRuns) {
		t.Fatalf("third start: %v", err)
	}
	if convs, _, _ := s.ListConversations(ctx(t), alice, store.ConversationFilter{}, store.Page{Limit: 10}); len(convs) != 1 {
		t.Fatalf("a refused start left a conversation: %d", len(convs))
	}
	must[store.RunStarted](t)(start(eve, 2))   // another tenant
	must[store.RunStarted](t)(start(alice, 0)) // no cap
	must[chat.Run](t)(s.UpdateRun(ctx(t), "acme", first.Run.ID, store.RunUpdate{Status: chat.RunAwaitingInput}))
	_, err = start(alice, 3)
	if err != nil {
		t.Fatalf("a waiting run counted against the cap: %v", err)
	}

	// Racing starts never exceed the cap, and a refused one leaves no
	// conversation, though it is refused after its conversation's row was
	// written (a backend that commits the racers together takes that row
	// back alone).
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for range 32 {
		wg.Go(func() {
			_, err := start(chat.Scope{Tenant: "race", User: "u"}, 3)
			if err == nil {
				mu.Lock()
				ok++
				mu.Unlock()
			} else if !errors.Is(err, store.ErrTooManyRuns) {
				t.Errorf("racing start: %v", err)
			}
		})
	}
	wg.Wait()
	if ok != 3 {
		t.Fatalf("%d racing starts admitted under a cap of 3", ok)
	}
	if convs, _, _ := s.ListConversations(ctx(t), chat.Scope{Tenant: "race", User: "u"}, store.ConversationFilter{}, store.Page{Limit: 50}); len(convs) != 3 {
		t.Fatalf("3 racing starts admitted, %d conversations stored", len(convs))
	}
}

// testSeqReservation: StartRun reserves seqs after the thread's last, and
// ReserveSeqs only ever raises the reservation.
func testSeqReservation(t *testing.T, s store.Store) {
	got := must[store.RunStarted](t)(s.StartRun(ctx(t), alice, &store.RunStart{
		NewConversation: &chat.Conversation{},
		Run:             chat.Run{Input: "x", Status: chat.RunRunning},
		Message:         chat.Message{Role: chat.RoleUser, Content: "x"},
		ReserveSeqs:     64,
	}))
	if got.Run.SeqReserved != 64 {
		t.Fatalf("reserved %d on a new thread", got.Run.SeqReserved)
	}
	if err := s.AppendEvents(ctx(t), mkEvents(got.Conversation.ID, got.Run.ID, 1, 5)); err != nil {
		t.Fatal(err)
	}
	end := time.Now()
	must[chat.Run](t)(s.UpdateRun(ctx(t), "acme", got.Run.ID, store.RunUpdate{Status: chat.RunSucceeded, EndedAt: &end}))
	next := must[store.RunStarted](t)(s.StartRun(ctx(t), alice, &store.RunStart{
		Run:         chat.Run{ConversationID: got.Conversation.ID, Input: "y", Status: chat.RunRunning},
		Message:     chat.Message{Role: chat.RoleUser, Content: "y"},
		ReserveSeqs: 64,
	}))
	if next.LastSeq != 5 || next.Run.SeqReserved != 69 {
		t.Fatalf("second start: last %d, reserved %d", next.LastSeq, next.Run.SeqReserved)
	}
	if r := must[chat.Run](t)(s.GetRun(ctx(t), alice, next.Run.ID)); r.SeqReserved != 69 {
		t.Fatalf("stored reservation %d", r.SeqReserved)
	}
	if err := s.ReserveSeqs(ctx(t), "acme", next.Run.ID, 200); err != nil {
		t.Fatal(err)
	}
	if err := s.ReserveSeqs(ctx(t), "acme", next.Run.ID, 100); err != nil {
		t.Fatal(err)
	}
	if err := s.ReserveSeqs(ctx(t), "evil", next.Run.ID, 900); err != nil {
		t.Fatal(err)
	}
	if r := must[chat.Run](t)(s.GetRunAnyOwner(ctx(t), "acme", next.Run.ID)); r.SeqReserved != 200 {
		t.Fatalf("reservation after raising to 200, lowering to 100 and another tenant's 900: %d", r.SeqReserved)
	}
}

// testEndConfirmations: a run's pending confirmations end with it, and a
// decision on one afterwards is refused with ErrRunEnded.
func testEndConfirmations(t *testing.T, s store.Store) {
	r, cs := awaiting(t, s, "call_a", "call_b")
	decided := decide(t, s, cs[0])
	other, ocs := awaiting(t, s, "call_x")
	if n := must[int](t)(s.EndConfirmations(ctx(t), "evil", r.ID, time.Now())); n != 0 {
		t.Fatalf("another tenant ended %d confirmations", n)
	}
	if n := must[int](t)(s.EndConfirmations(ctx(t), "acme", r.ID, time.Now())); n != 1 {
		t.Fatalf("ended %d confirmations, want the one pending", n)
	}
	if c := must[chat.Confirmation](t)(s.GetConfirmation(ctx(t), alice, cs[1].ID)); c.Status != chat.ConfirmCancelled || c.DecidedAt == nil {
		t.Fatalf("pending confirmation after its run ended %+v", c)
	}
	if c := must[chat.Confirmation](t)(s.GetConfirmation(ctx(t), alice, decided.ID)); c.Status != chat.ConfirmApproved {
		t.Fatalf("a decided confirmation changed: %+v", c)
	}
	_, err := s.DecideConfirmation(ctx(t), alice, cs[1].ID, chat.Decision{Status: chat.ConfirmApproved, At: time.Now()})
	wantErr(t, err, store.ErrRunEnded)
	wantErr(t, err, store.ErrConflict)
	if l := must[[]chat.Confirmation](t)(s.ListConfirmations(ctx(t), alice, chat.ConfirmPending)); len(l) != 1 || l[0].ID != ocs[0].ID {
		t.Fatalf("pending after the end: %+v (want only %s of run %s)", l, ocs[0].ID, other.ID)
	}
	if l := must[[]chat.Confirmation](t)(s.UnappliedDecisions(ctx(t), time.Now().Add(time.Hour), 10)); len(l) != 1 || l[0].ID != decided.ID {
		t.Fatalf("unapplied after the end: %v", l)
	}
}
