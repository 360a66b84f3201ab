package storetest

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/store"
)

// testRunUpdateFields pins what UpdateRun does with each field of
// store.RunUpdate. The backends write the rules twice (a Go
// read-modify-write, an SQL CASE): this table is what keeps them equal.
//
// Every case starts from the same run, with every field UpdateRun can change
// set, and applies its updates in order; the run returned by the last one and
// the run read back must both be want(base).
func testRunUpdateFields(t *testing.T, s store.Store) {
	baseEnd := time.UnixMilli(1700000000123).UTC()
	later := time.UnixMilli(1700000999456).UTC()
	baseModel, otherModel, emptyModel := "base-model", "other-model", ""
	baseState := json.RawMessage(`{ "base" : [1, 2] }`)
	otherState := json.RawMessage(`{"other":true,  "n":1}`)
	baseUsage := event.Usage{InputTokens: 10, OutputTokens: 20, ReasoningTokens: 5}
	otherUsage := event.Usage{InputTokens: 1}
	zeroUsage := event.Usage{}
	baseErr := event.ErrorInfo{Code: "base_code", Message: "base message"}

	tests := []struct {
		name    string
		updates []store.RunUpdate
		wantErr error // of the last update; the run is then unchanged
		want    func(r *chat.Run)
	}{
		{name: "an empty update keeps every field", updates: []store.RunUpdate{{}}},
		{name: "status is set when given", updates: []store.RunUpdate{{Status: chat.RunSucceeded}},
			want: func(r *chat.Run) { r.Status = chat.RunSucceeded }},
		{name: "error is set when given", updates: []store.RunUpdate{{Error: &event.ErrorInfo{Code: "other", Message: "other message"}}},
			want: func(r *chat.Run) { r.Error = &event.ErrorInfo{Code: "other", Message: "other message"} }},
		{name: "an error without a message keeps none", updates: []store.RunUpdate{{Error: &event.ErrorInfo{Code: "bare"}}},
			want: func(r *chat.Run) { r.Error = &event.ErrorInfo{Code: "bare"} }},
		{name: "usage is set when given", updates: []store.RunUpdate{{Usage: &otherUsage}},
			want: func(r *chat.Run) { r.Usage = otherUsage }},
		{name: "a zero usage is set, not kept", updates: []store.RunUpdate{{Usage: &zeroUsage}},
			want: func(r *chat.Run) { r.Usage = zeroUsage }},
		{name: "model is set when given", updates: []store.RunUpdate{{Model: &otherModel}},
			want: func(r *chat.Run) { r.Model = otherModel }},
		{name: "an empty model is set, not kept", updates: []store.RunUpdate{{Model: &emptyModel}},
			want: func(r *chat.Run) { r.Model = "" }},
		{name: "state is set byte for byte", updates: []store.RunUpdate{{State: otherState}},
			want: func(r *chat.Run) { r.State = otherState }},
		{name: "a JSON null state clears it", updates: []store.RunUpdate{{State: json.RawMessage(`null`)}},
			want: func(r *chat.Run) { r.State = nil }},
		{name: "ended at is set, to the millisecond", updates: []store.RunUpdate{{EndedAt: ptr(later.Add(789 * time.Microsecond))}},
			want: func(r *chat.Run) { r.EndedAt = &later }},
		{name: "cancel requested is set when true", updates: []store.RunUpdate{{CancelRequested: true}},
			want: func(r *chat.Run) { r.CancelRequested = true }},
		{name: "cancel requested is never cleared", updates: []store.RunUpdate{{CancelRequested: true}, {Status: chat.RunCancelled}},
			want: func(r *chat.Run) { r.CancelRequested, r.Status = true, chat.RunCancelled }},
		{name: "every field at once", updates: []store.RunUpdate{{Status: chat.RunFailed, Error: &event.ErrorInfo{Code: "x", Message: "y"},
			Usage: &otherUsage, Model: &otherModel, State: otherState, EndedAt: &later, CancelRequested: true}},
			want: func(r *chat.Run) {
				r.Status, r.Error, r.Usage, r.Model, r.State, r.EndedAt, r.CancelRequested = chat.RunFailed, &event.ErrorInfo{Code: "x", Message: "y"},
					otherUsage, otherModel, otherState, &later, true
			}},
		{name: "from naming the status applies the update", updates: []store.RunUpdate{{Status: chat.RunAwaitingInput, From: []string{chat.RunRunning}}},
			want: func(r *chat.Run) { r.Status = chat.RunAwaitingInput }},
		{name: "from naming the status among others applies it",
			updates: []store.RunUpdate{{Status: chat.RunSucceeded, From: []string{chat.RunQueued, chat.RunRunning, chat.RunAwaitingInput}}},
			want:    func(r *chat.Run) { r.Status = chat.RunSucceeded }},
		{name: "from with only other fields applies them", updates: []store.RunUpdate{{CancelRequested: true, From: []string{chat.RunRunning}}},
			want: func(r *chat.Run) { r.CancelRequested = true }},
		{name: "from not naming the status is a conflict that changes nothing",
			updates: []store.RunUpdate{{Status: chat.RunSucceeded, Error: &event.ErrorInfo{Code: "no"}, Usage: &otherUsage, Model: &otherModel,
				State: otherState, EndedAt: &later, CancelRequested: true, From: []string{chat.RunQueued, chat.RunAwaitingInput}}},
			wantErr: store.ErrConflict},
		{name: "from is judged on the status as updated before",
			updates: []store.RunUpdate{{Status: chat.RunSucceeded}, {Status: chat.RunFailed, From: []string{chat.RunRunning}}},
			want:    func(r *chat.Run) { r.Status = chat.RunSucceeded }, wantErr: store.ErrConflict},
	}
	c := must[chat.Conversation](t)(s.CreateConversation(ctx(t), alice, chat.Conversation{}))
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// One conversation, runs made one after another: each run but the
			// case's own is ended first, so the one-active rule allows it.
			base := must[chat.Run](t)(s.CreateRun(ctx(t), alice, chat.Run{ConversationID: c.ID, Input: fmt.Sprint("case ", i),
				Status: chat.RunRunning, LeaseOwner: "replica-a", LeaseEpoch: 3}))
			defer func() {
				end := time.Now()
				must[chat.Run](t)(s.UpdateRun(ctx(t), "acme", base.ID, store.RunUpdate{Status: chat.RunSucceeded, EndedAt: &end}))
			}()
			base = must[chat.Run](t)(s.UpdateRun(ctx(t), "acme", base.ID, store.RunUpdate{Error: &baseErr, Usage: &baseUsage,
				Model: &baseModel, State: baseState, EndedAt: &baseEnd}))
			if err := s.ReserveSeqs(ctx(t), "acme", base.ID, 42); err != nil {
				t.Fatal(err)
			}
			base = must[chat.Run](t)(s.GetRun(ctx(t), alice, base.ID))
			if base.Status != chat.RunRunning || base.Error == nil || *base.Error != baseErr || !reflect.DeepEqual(base.Usage, baseUsage) || base.Model != baseModel ||
				string(base.State) != string(baseState) || base.EndedAt == nil || !base.EndedAt.Equal(baseEnd) || base.CancelRequested || base.SeqReserved != 42 {
				t.Fatalf("base run %+v", base)
			}

			var got chat.Run
			var err error
			for j, u := range tt.updates {
				got, err = s.UpdateRun(ctx(t), "acme", base.ID, u)
				if err != nil && (j < len(tt.updates)-1 || tt.wantErr == nil) {
					t.Fatalf("update %d: %v", j, err)
				}
			}
			want := base
			if tt.want != nil {
				tt.want(&want)
			}
			if tt.wantErr != nil {
				wantErr(t, err, tt.wantErr)
			} else {
				sameRun(t, "returned", got, want)
			}
			sameRun(t, "read back", must[chat.Run](t)(s.GetRun(ctx(t), alice, base.ID)), want)
		})
	}

	// A run that does not exist, or is another tenant's, is not found,
	// conditional or not; nothing is created.
	r := must[chat.Run](t)(s.CreateRun(ctx(t), alice, chat.Run{ConversationID: must[chat.Conversation](t)(s.CreateConversation(ctx(t), alice, chat.Conversation{})).ID,
		Input: "x", Status: chat.RunRunning}))
	for _, u := range []store.RunUpdate{{Status: chat.RunFailed}, {Status: chat.RunFailed, From: []string{chat.RunRunning}}} {
		_, err := s.UpdateRun(ctx(t), "acme", "no-such-run", u)
		wantErr(t, err, store.ErrNotFound)
		_, err = s.UpdateRun(ctx(t), "evil", r.ID, u)
		wantErr(t, err, store.ErrNotFound)
	}
	if got := must[chat.Run](t)(s.GetRun(ctx(t), alice, r.ID)); got.Status != chat.RunRunning {
		t.Fatalf("another tenant's update changed the run: %+v", got)
	}
}

func ptr[T any](v T) *T { return &v }

// sameRun fails unless got has want's fields, those UpdateRun may change
// and those it must not.
func sameRun(t *testing.T, what string, got, want chat.Run) {
	t.Helper()
	errText := func(e *event.ErrorInfo) string {
		if e == nil {
			return "<nil>"
		}
		return fmt.Sprintf("%+v", *e)
	}
	endText := func(e *time.Time) string {
		if e == nil {
			return "<nil>"
		}
		return e.UTC().Format(time.RFC3339Nano)
	}
	type fields struct {
		ID, Status, Input, Model, Error, State, EndedAt, LeaseOwner string
		Usage                                                       event.Usage
		CancelRequested                                             bool
		LeaseEpoch, SeqReserved                                     int64
	}
	of := func(r chat.Run) fields {
		return fields{r.ID, r.Status, r.Input, r.Model, errText(r.Error), string(r.State), endText(r.EndedAt), r.LeaseOwner,
			r.Usage, r.CancelRequested, r.LeaseEpoch, r.SeqReserved}
	}
	if g, w := of(got), of(want); !reflect.DeepEqual(g, w) {
		t.Fatalf("%s run\n got %+v\nwant %+v", what, g, w)
	}
}
