package storetest

import (
	"regexp"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/store"
)

// traceIDRe is a W3C trace id: 32 lowercase hex digits (not all zero, checked apart).
var traceIDRe = regexp.MustCompile(`^[0-9a-f]{32}$`)

// testRunTrace checks that a run's trace id and span id, written by StartRun
// or CreateRun, come back from every read of the run, and that a run stored
// without a trace id gets a fresh valid one.
func testRunTrace(t *testing.T, s store.Store) {
	const traceID, spanID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	started := must[store.RunStarted](t)(s.StartRun(ctx(t), alice, &store.RunStart{
		NewConversation: &chat.Conversation{Title: "traced"},
		Run:             chat.Run{Input: "hi", Status: chat.RunRunning, TraceID: traceID, SpanID: spanID, LeaseOwner: "ghost", LeaseEpoch: 1},
		Message:         chat.Message{Role: chat.RoleUser, Content: "hi"},
	}))
	r := started.Run
	check := func(what string, got chat.Run) {
		t.Helper()
		if got.ID != r.ID || got.TraceID != traceID || got.SpanID != spanID {
			t.Fatalf("%s: run %s trace %q span %q, want %s %s %s", what, got.ID, got.TraceID, got.SpanID, r.ID, traceID, spanID)
		}
	}
	check("StartRun", r)
	check("GetRun", must[chat.Run](t)(s.GetRun(ctx(t), alice, r.ID)))
	check("GetRunAnyOwner", must[chat.Run](t)(s.GetRunAnyOwner(ctx(t), "acme", r.ID)))
	check("ActiveRun", must[chat.Run](t)(s.ActiveRun(ctx(t), alice, r.ConversationID)))
	if runs := must[[]chat.Run](t)(s.ListRuns(ctx(t), alice, r.ConversationID)); len(runs) != 1 {
		t.Fatalf("ListRuns: %d runs", len(runs))
	} else {
		check("ListRuns", runs[0])
	}
	// The executor "ghost" has no term: the run is orphaned.
	found := false
	for _, o := range must[[]chat.Run](t)(s.OrphanedRuns(ctx(t), time.Now(), 100)) {
		if o.ID == r.ID {
			check("OrphanedRuns", o)
			found = true
		}
	}
	if !found {
		t.Fatal("OrphanedRuns did not list the run")
	}
	// A continuation, on any replica, reads the run's trace back.
	check("UpdateRun", must[chat.Run](t)(s.UpdateRun(ctx(t), "acme", r.ID, store.RunUpdate{Status: chat.RunAwaitingInput})))
	check("ClaimRun", must[chat.Run](t)(s.ClaimRun(ctx(t), store.ClaimRunParams{Tenant: "acme", RunID: r.ID, Owner: "replica-2", Epoch: 3})))
	end := time.Now()
	check("UpdateRun to the end", must[chat.Run](t)(s.UpdateRun(ctx(t), "acme", r.ID, store.RunUpdate{Status: chat.RunSucceeded, EndedAt: &end})))

	// Without one, the store gives each run a fresh trace id.
	a := must[chat.Run](t)(s.CreateRun(ctx(t), alice, chat.Run{ConversationID: r.ConversationID, Input: "untraced"}))
	if !traceIDRe.MatchString(a.TraceID) || a.TraceID == "00000000000000000000000000000000" || a.TraceID == traceID || a.SpanID != "" {
		t.Fatalf("CreateRun without a trace: trace %q span %q", a.TraceID, a.SpanID)
	}
	if got := must[chat.Run](t)(s.GetRun(ctx(t), alice, a.ID)); got.TraceID != a.TraceID {
		t.Fatalf("stored trace %q, returned %q", got.TraceID, a.TraceID)
	}
	must[chat.Run](t)(s.UpdateRun(ctx(t), "acme", a.ID, store.RunUpdate{Status: chat.RunSucceeded, EndedAt: &end}))
	b := must[store.RunStarted](t)(s.StartRun(ctx(t), alice, &store.RunStart{Run: chat.Run{ConversationID: r.ConversationID, Input: "next"},
		Message: chat.Message{Role: chat.RoleUser, Content: "next"}})).Run
	if !traceIDRe.MatchString(b.TraceID) || b.TraceID == a.TraceID {
		t.Fatalf("StartRun without a trace: %q (the previous run's %q)", b.TraceID, a.TraceID)
	}
	if got := must[chat.Run](t)(s.GetRun(ctx(t), alice, b.ID)); got.TraceID != b.TraceID {
		t.Fatalf("stored trace %q, returned %q", got.TraceID, b.TraceID)
	}
}
