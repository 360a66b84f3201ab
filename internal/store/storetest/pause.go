package storetest

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/store"
)

// pausing makes a run of alice's executed by the term (replica-a, 1) that
// has written seqs 1..3 of its thread, and the pause it is about to record:
// one confirmation, announced by seq 4.
func pausing(t *testing.T, s store.Store) (chat.Run, store.PauseRunParams) {
	t.Helper()
	r := executing(t, s, "replica-a", 1)
	if err := s.AppendEvents(ctx(t), mkEvents(r.ConversationID, r.ID, 1, 3)); err != nil {
		t.Fatal(err)
	}
	expires := time.UnixMilli(1900000000123).UTC()
	c := chat.Confirmation{ID: chat.NewID(), Tenant: "acme", Owner: "alice", RunID: r.ID, ConversationID: r.ConversationID,
		ToolCallID: "call_1", ToolName: "send_webhook", Args: json.RawMessage(`{ "url" : "https://hooks.example" }`), ExpiresAt: expires}
	announce := event.Event{Tenant: "acme", Thread: r.ConversationID, Run: r.ID, Seq: 4, Time: time.UnixMilli(1700000000999).UTC(),
		Type: event.ToolAwaiting, Turn: r.ID, Iteration: 1, Step: "worker",
		Payload: event.ToolAwaitingData{ToolCallID: "call_1", Name: "send_webhook", Args: json.RawMessage(`{"url":"https://hooks.example"}`),
			ConfirmationID: c.ID, ExpiresAt: expires}}
	return r, store.PauseRunParams{Tenant: "acme", RunID: r.ID, Owner: "replica-a", Epoch: 1,
		Confirmations: []chat.Confirmation{c}, Events: []event.Event{announce},
		State: json.RawMessage(`{ "awaiting" : ["call_1"] }`), Usage: event.Usage{InputTokens: 7, OutputTokens: 9}}
}

// pauseWritten fails unless p is stored: the run running with p's state and
// usage, p's confirmations pending, and its events after the run's first 3.
func pauseWritten(t *testing.T, s store.Store, r chat.Run, p store.PauseRunParams) {
	t.Helper()
	got := must[chat.Run](t)(s.GetRun(ctx(t), alice, r.ID))
	if got.Status != chat.RunRunning || string(got.State) != string(p.State) || !reflect.DeepEqual(got.Usage, p.Usage) || got.LeaseOwner != p.Owner {
		t.Fatalf("paused run %+v", got)
	}
	pending := must[[]chat.Confirmation](t)(s.ListConfirmations(ctx(t), alice, chat.ConfirmPending))
	var mine []chat.Confirmation
	for _, c := range pending {
		if c.RunID == r.ID {
			mine = append(mine, c)
		}
	}
	if len(mine) != len(p.Confirmations) {
		t.Fatalf("%d confirmations pending, want %d", len(mine), len(p.Confirmations))
	}
	for i, c := range mine {
		w := p.Confirmations[i]
		if c.ID != w.ID || c.ToolName != w.ToolName || string(c.Args) != string(w.Args) || !c.ExpiresAt.Equal(w.ExpiresAt) ||
			c.CreatedAt.IsZero() || c.DecidedAt != nil || c.AppliedAt != nil {
			t.Fatalf("confirmation %+v, want %+v", c, w)
		}
	}
	evs := must[[]event.Event](t)(s.ListEvents(ctx(t), alice, store.ListEventsParams{Thread: r.ConversationID}))
	sameEvents(t, "log after the pause", evs, append(mkEvents(r.ConversationID, r.ID, 1, 3), p.Events...))
}

func noErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// testPauseRun pins PauseRun: one transaction, refused unless the run is
// running under the caller's term, idempotent for a retry.
func testPauseRun(t *testing.T, s store.Store) {
	r, p := pausing(t, s)
	noErr(t, s.PauseRun(ctx(t), p))
	pauseWritten(t, s, r, p)
	// A retry whose answer was lost: nothing more is written.
	noErr(t, s.PauseRun(ctx(t), p))
	pauseWritten(t, s, r, p)

	// Recorded as waiting, then claimed: the claimer takes the state, which
	// no longer stays on the row.
	must[chat.Run](t)(s.UpdateRun(ctx(t), "acme", r.ID, store.RunUpdate{Status: chat.RunAwaitingInput, From: []string{chat.RunRunning}}))
	claimed := must[chat.Run](t)(s.ClaimRun(ctx(t), store.ClaimRunParams{Tenant: "acme", RunID: r.ID, Owner: "replica-b", Epoch: 2}))
	if string(claimed.State) != string(p.State) {
		t.Fatalf("the claim returned state %s, want %s", claimed.State, p.State)
	}
	if got := must[chat.Run](t)(s.GetRun(ctx(t), alice, r.ID)); got.State != nil || got.Status != chat.RunRunning {
		t.Fatalf("claimed run as stored: %s, state %s", got.Status, got.State)
	}
	// The claimer pauses again, for the same confirmation still pending:
	// nothing to announce, only the state.
	again := store.PauseRunParams{Tenant: "acme", RunID: r.ID, Owner: "replica-b", Epoch: 2, State: json.RawMessage(`{"again":true}`), Usage: event.Usage{InputTokens: 8}}
	noErr(t, s.PauseRun(ctx(t), again))
	if got := must[chat.Run](t)(s.GetRun(ctx(t), alice, r.ID)); string(got.State) != `{"again":true}` || !reflect.DeepEqual(got.Usage, again.Usage) {
		t.Fatalf("re-paused run %+v", got)
	}
}

// testPauseRunRefused: a pause the store refuses writes nothing, neither
// its confirmations nor its events nor its state.
func testPauseRunRefused(t *testing.T, s store.Store) {
	tests := []struct {
		name   string
		change func(r chat.Run, p *store.PauseRunParams)
		want   error
	}{
		{"another term executes the run", func(_ chat.Run, p *store.PauseRunParams) { p.Epoch = 2 }, store.ErrConflict},
		{"another replica executes the run", func(_ chat.Run, p *store.PauseRunParams) { p.Owner = "replica-b" }, store.ErrConflict},
		{"the run ended", func(r chat.Run, _ *store.PauseRunParams) {
			end := time.Now()
			must[chat.Run](t)(s.UpdateRun(ctx(t), "acme", r.ID, store.RunUpdate{Status: chat.RunFailed, EndedAt: &end}))
		}, store.ErrConflict},
		{"the run awaits input already", func(r chat.Run, _ *store.PauseRunParams) {
			must[chat.Run](t)(s.UpdateRun(ctx(t), "acme", r.ID, store.RunUpdate{Status: chat.RunAwaitingInput}))
		}, store.ErrConflict},
		{"an announcement's seq is taken", func(r chat.Run, p *store.PauseRunParams) {
			p.Events[0].Seq = 3
		}, store.ErrConflict},
		{"another tenant's run", func(_ chat.Run, p *store.PauseRunParams) { p.Tenant = "evil" }, store.ErrNotFound},
		{"no such run", func(_ chat.Run, p *store.PauseRunParams) { p.RunID = "no-such-run" }, store.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, p := pausing(t, s)
			before := must[chat.Run](t)(s.GetRun(ctx(t), alice, r.ID))
			tt.change(r, &p)
			wantErr(t, s.PauseRun(ctx(t), p), tt.want)
			if got := must[chat.Run](t)(s.GetRun(ctx(t), alice, r.ID)); got.State != nil || !reflect.DeepEqual(got.Usage, before.Usage) {
				t.Fatalf("a refused pause wrote state %s, usage %+v", got.State, got.Usage)
			}
			_, err := s.GetConfirmation(ctx(t), alice, p.Confirmations[0].ID)
			wantErr(t, err, store.ErrNotFound)
			evs := must[[]event.Event](t)(s.ListEvents(ctx(t), alice, store.ListEventsParams{Thread: r.ConversationID}))
			sameEvents(t, "log after a refused pause", evs, mkEvents(r.ConversationID, r.ID, 1, 3))
		})
	}
}
