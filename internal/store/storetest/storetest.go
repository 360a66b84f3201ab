package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/store"
)

// Run runs the contract against stores made by newStore; each call must return
// an empty, independent store (its own file, schema or database).
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	tests := []struct {
		name string
		fn   func(*testing.T, store.Store)
	}{
		{"ConversationCRUD", testConversationCRUD},
		{"ConversationScoping", testConversationScoping},
		{"ConversationPaging", testConversationPaging},
		{"MessageOrderAndPaging", testMessageOrderAndPaging},
		{"MessageToolFilter", testMessageToolFilter},
		{"MessageBumpsConversation", testMessageBumpsConversation},
		{"RunOneActivePerConversation", testRunOneActive},
		{"StartRun", testStartRun},
		{"ConcurrentStarts", testConcurrentStarts},   // startmany.go
		{"ConcurrentRunEnds", testConcurrentRunEnds}, // endmany.go
		{"RunTraceRoundTrip", testRunTrace},          // trace.go
		{"RunUpdateCompareAndSet", testRunUpdate},
		{"RunUpdateFields", testRunUpdateFields}, // runupdate.go
		{"ReplicaTerms", testReplicaTerms},
		{"OrphanedRunsAndTakeover", testOrphanedRuns},
		{"SoleReplica", testSoleReplica},
		{"ExecutingRunsCap", testExecutingCap},
		{"SeqReservation", testSeqReservation},
		{"EndConfirmations", testEndConfirmations},
		{"EventLog", testEventLog},
		{"Confirmations", testConfirmations},
		{"ConfirmationExpiry", testConfirmationExpiry},
		{"DeleteCascades", testDeleteCascades},
		{"Retention", testRetention},
		{"ConcurrentWriters", testConcurrentWriters},
		{"JSONKeptByteForByte", testJSONKept},
		{"TimesKeepMilliseconds", testTimesKeepMilliseconds},
		{"EventBatchIsAtomic", testEventBatchAtomic},
		{"MissingParentsAreNotFound", testMissingParents},
		{"RacingTakeoversOneWinner", testRacingTakeovers},
		{"CancelRequested", testCancelRequested},
		{"ClaimRun", testClaimRun},
		{"PauseRun", testPauseRun},               // pause.go
		{"PauseRunRefused", testPauseRunRefused}, // pause.go
		{"RacingClaimsOneWinner", testRacingClaims},
		{"UnappliedDecisions", testUnappliedDecisions},
		{"StartRunFailureWritesNothing", testStartRunFailureWritesNothing},
		{"DeltaRangesRoundTrip", testDeltaRangesRoundTrip},
		{"DeltaRangeBounds", testDeltaRangeBounds},
		{"DeltaRangesAcrossBatches", testDeltaRangesAcrossBatches},
		{"DeltaRangeConflicts", testDeltaRangeConflicts},
		{"ManyThreadsConflicts", testManyThreadsConflicts},
		{"TextRoundTrip", testTextRoundTrip}, // text.go
		{"BadCursors", testBadCursors},
		{"AgentCreateAndRead", testAgentCreateAndRead}, // agent.go
		{"AgentPaging", testAgentPaging},
		{"AgentVersions", testAgentVersions},
		{"AgentPublishAndArchive", testAgentPublishAndArchive},
		{"RacingAgentVersionsOneWinner", testRacingAgentVersions},
		{"TenantSettings", testTenantSettings},
		{"ConversationAndRunAgents", testConversationAndRunAgents},
		{"UsageRecords", testUsageRecords}, // usage.go
		{"QuotaLimits", testQuotaLimits},
		{"MessageTree", testMessageTree}, // tree.go
		{"IdempotencyKeys", testIdempotencyKeys},
		{"Feedback", testFeedback},
		{"ThreadState", testThreadState},               // state.go
		{"RunQueue", testRunQueue},                     // state.go
		{"QueuedInputByID", testQueuedInputByID},       // state.go
		{"FileCRUDAndScoping", testFileCRUDAndScoping}, // file.go
		{"FilePaging", testFilePaging},
		{"FileQuotaUsage", testFileQuotaUsage},
		{"FileReferencesAndSweep", testFileReferencesAndSweep},
		{"ConcurrentFileSweeps", testConcurrentFileSweeps},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, newStore(t))
		})
	}
}

var (
	alice = chat.Scope{Tenant: "acme", User: "alice"}
	bob   = chat.Scope{Tenant: "acme", User: "bob"}
	eve   = chat.Scope{Tenant: "evil", User: "alice"} // same user name, other tenant
)

func ctx(t *testing.T) context.Context { return t.Context() }

func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// mustPage is must for a list page and its next cursor.
func mustPage[T any](t *testing.T) func([]T, string, error) ([]T, string) {
	return func(v []T, next string, err error) ([]T, string) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v, next
	}
}

func wantErr(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error = %v, want %v", err, target)
	}
}

func testConversationCRUD(t *testing.T, s store.Store) {
	c := must[chat.Conversation](t)(s.CreateConversation(ctx(t), alice, chat.Conversation{Title: "first"}))
	if c.ID == "" || c.Tenant != "acme" || c.Owner != "alice" || c.CreatedAt.IsZero() || !c.UpdatedAt.Equal(c.CreatedAt) {
		t.Fatalf("created %+v", c)
	}
	got := must[chat.Conversation](t)(s.GetConversation(ctx(t), alice, c.ID))
	if got.Title != "first" || !got.CreatedAt.Equal(c.CreatedAt) {
		t.Fatalf("got %+v, want %+v", got, c)
	}
	title := "renamed"
	up := must[chat.Conversation](t)(s.UpdateConversation(ctx(t), alice, c.ID, &title, nil))
	if up.Title != "renamed" || up.UpdatedAt.Before(c.UpdatedAt) {
		t.Fatalf("updated %+v", up)
	}
	if err := s.DeleteConversation(ctx(t), alice, c.ID); err != nil {
		t.Fatal(err)
	}
	_, err := s.GetConversation(ctx(t), alice, c.ID)
	wantErr(t, err, store.ErrNotFound)
	wantErr(t, s.DeleteConversation(ctx(t), alice, c.ID), store.ErrNotFound)
}

func testConversationScoping(t *testing.T, s store.Store) {
	c := must[chat.Conversation](t)(s.CreateConversation(ctx(t), alice, chat.Conversation{Title: "mine"}))
	title := "stolen"
	for _, other := range []chat.Scope{bob, eve} {
		_, err := s.GetConversation(ctx(t), other, c.ID)
		wantErr(t, err, store.ErrNotFound)
		_, err = s.UpdateConversation(ctx(t), other, c.ID, &title, nil)
		wantErr(t, err, store.ErrNotFound)
		wantErr(t, s.DeleteConversation(ctx(t), other, c.ID), store.ErrNotFound)
		_, err = s.AppendMessage(ctx(t), other, chat.Message{ConversationID: c.ID, Role: chat.RoleUser, Content: "x"})
		wantErr(t, err, store.ErrNotFound)
		_, _, err = s.ListMessages(ctx(t), other, c.ID, store.MessageFilter{}, store.Page{Limit: 10})
		wantErr(t, err, store.ErrNotFound)
		_, err = s.CreateRun(ctx(t), other, chat.Run{ConversationID: c.ID, Input: "x"})
		wantErr(t, err, store.ErrNotFound)
		_, err = s.ListEvents(ctx(t), other, store.ListEventsParams{Thread: c.ID})
		wantErr(t, err, store.ErrNotFound)
		list, _, err := s.ListConversations(ctx(t), other, store.ConversationFilter{}, store.Page{Limit: 10})
		if err != nil || len(list) != 0 {
			t.Fatalf("%v sees %d conversations (%v)", other, len(list), err)
		}
	}
	if got := must[chat.Conversation](t)(s.GetConversation(ctx(t), alice, c.ID)); got.Title != "mine" {
		t.Fatalf("title changed by another principal: %q", got.Title)
	}
}

func testConversationPaging(t *testing.T, s store.Store) {
	// Seven conversations, several sharing one timestamp, must page with no loss or repeat.
	base := time.Date(2026, 3, 16, 8, 0, 0, 0, time.UTC)
	times := []time.Time{base, base, base, base.Add(time.Second), base.Add(time.Second), base.Add(2 * time.Second), base}
	want := map[string]bool{}
	for i, at := range times {
		c := must[chat.Conversation](t)(s.CreateConversation(ctx(t), alice, chat.Conversation{Title: fmt.Sprint(i), CreatedAt: at}))
		want[c.ID] = true
	}
	must[chat.Conversation](t)(s.CreateConversation(ctx(t), bob, chat.Conversation{Title: "bob's"}))
	var got []chat.Conversation
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("paging does not end")
		}
		list, next, err := s.ListConversations(ctx(t), alice, store.ConversationFilter{}, store.Page{Limit: 3, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		if len(list) > 3 {
			t.Fatalf("page of %d > limit", len(list))
		}
		got = append(got, list...)
		if next == "" {
			break
		}
		cursor = next
	}
	if len(got) != len(want) {
		t.Fatalf("paged %d conversations, want %d", len(got), len(want))
	}
	for i, c := range got {
		if !want[c.ID] {
			t.Fatalf("unexpected or repeated %s", c.ID)
		}
		delete(want, c.ID)
		if i > 0 {
			p := got[i-1]
			if p.UpdatedAt.Before(c.UpdatedAt) || (p.UpdatedAt.Equal(c.UpdatedAt) && p.ID < c.ID) {
				t.Fatalf("order broken at %d: %v/%s before %v/%s", i, p.UpdatedAt, p.ID, c.UpdatedAt, c.ID)
			}
		}
	}
	_, _, err := s.ListConversations(ctx(t), alice, store.ConversationFilter{}, store.Page{Limit: 3, Cursor: "!!not-a-cursor"})
	wantErr(t, err, store.ErrBadCursor)
}

func testMessageOrderAndPaging(t *testing.T, s store.Store) {
	c := must[chat.Conversation](t)(s.CreateConversation(ctx(t), alice, chat.Conversation{}))
	at := time.Date(2026, 3, 16, 8, 0, 0, 0, time.UTC)
	var ids []string
	for i := range 7 {
		m := must[chat.Message](t)(s.AppendMessage(ctx(t), alice, chat.Message{
			ConversationID: c.ID, Role: chat.RoleUser, Content: fmt.Sprint(i), CreatedAt: at.Add(time.Duration(i/3) * time.Millisecond),
			Metadata: json.RawMessage(`{"k":1}`), Parts: json.RawMessage(`[{"type":"text","text":"x"}]`),
		}))
		ids = append(ids, m.ID)
	}
	var got []chat.Message
	cursor := ""
	for range 10 {
		list, next, err := s.ListMessages(ctx(t), alice, c.ID, store.MessageFilter{}, store.Page{Limit: 2, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, list...)
		if cursor = next; next == "" {
			break
		}
	}
	if len(got) != len(ids) {
		t.Fatalf("paged %d messages, want %d", len(got), len(ids))
	}
	for i, m := range got {
		if m.ID != ids[i] || m.Content != fmt.Sprint(i) {
			t.Fatalf("message %d = %s %q, want %s", i, m.ID, m.Content, ids[i])
		}
		if string(m.Metadata) != `{"k":1}` || len(m.Parts) == 0 {
			t.Fatalf("metadata/parts lost: %s %s", m.Metadata, m.Parts)
		}
	}
}

func testMessageToolFilter(t *testing.T, s store.Store) {
	c := must[chat.Conversation](t)(s.CreateConversation(ctx(t), alice, chat.Conversation{}))
	for _, name := range []string{"", "calculator", "http_get", "calculator"} {
		role := chat.RoleTool
		if name == "" {
			role = chat.RoleUser
		}
		must[chat.Message](t)(s.AppendMessage(ctx(t), alice, chat.Message{ConversationID: c.ID, Role: role, Content: "x", ToolName: name, ToolCallID: "call_" + name}))
	}
	list, _, err := s.ListMessages(ctx(t), alice, c.ID, store.MessageFilter{ToolName: "calculator"}, store.Page{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ToolName != "calculator" || list[0].ToolCallID != "call_calculator" {
		t.Fatalf("filtered %+v", list)
	}
}

func testMessageBumpsConversation(t *testing.T, s store.Store) {
	older := must[chat.Conversation](t)(s.CreateConversation(ctx(t), alice, chat.Conversation{Title: "older", CreatedAt: time.Now().Add(-time.Hour)}))
	must[chat.Conversation](t)(s.CreateConversation(ctx(t), alice, chat.Conversation{Title: "newer", CreatedAt: time.Now().Add(-time.Minute)}))
	must[chat.Message](t)(s.AppendMessage(ctx(t), alice, chat.Message{ConversationID: older.ID, Role: chat.RoleUser, Content: "hi"}))
	list, _, err := s.ListConversations(ctx(t), alice, store.ConversationFilter{}, store.Page{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if list[0].ID != older.ID || !list[0].UpdatedAt.After(older.UpdatedAt) {
		t.Fatalf("message did not bump updatedAt: %+v", list)
	}
}

func testRunOneActive(t *testing.T, s store.Store) {
	c := must[chat.Conversation](t)(s.CreateConversation(ctx(t), alice, chat.Conversation{}))
	r := must[chat.Run](t)(s.CreateRun(ctx(t), alice, chat.Run{ConversationID: c.ID, Input: "hi", Status: chat.RunRunning}))
	if r.TurnID == "" || r.Status != chat.RunRunning {
		t.Fatalf("run %+v", r)
	}
	_, err := s.CreateRun(ctx(t), alice, chat.Run{ConversationID: c.ID, Input: "again"})
	var busy *store.BusyError
	if !errors.As(err, &busy) || busy.ActiveRunID != r.ID || !errors.Is(err, store.ErrConflict) {
		t.Fatalf("second run: %v", err)
	}
	active := must[chat.Run](t)(s.ActiveRun(ctx(t), alice, c.ID))
	if active.ID != r.ID {
		t.Fatalf("active = %s", active.ID)
	}
	_, err = s.ActiveRun(ctx(t), bob, c.ID)
	wantErr(t, err, store.ErrNotFound)
	end := time.Now()
	must[chat.Run](t)(s.UpdateRun(ctx(t), "acme", r.ID, store.RunUpdate{Status: chat.RunSucceeded, EndedAt: &end}))
	_, err = s.ActiveRun(ctx(t), alice, c.ID)
	wantErr(t, err, store.ErrNotFound)
	r2 := must[chat.Run](t)(s.CreateRun(ctx(t), alice, chat.Run{ConversationID: c.ID, Input: "next"}))
	runs := must[[]chat.Run](t)(s.ListRuns(ctx(t), alice, c.ID))
	if len(runs) != 2 || runs[0].ID != r.ID || runs[1].ID != r2.ID {
		t.Fatalf("runs %+v", runs)
	}

	// Racing starts: exactly one wins.
	c2 := must[chat.Conversation](t)(s.CreateConversation(ctx(t), alice, chat.Conversation{}))
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for range 8 {
		wg.Go(func() {
			_, err := s.CreateRun(ctx(t), alice, chat.Run{ConversationID: c2.ID, Input: "race"})
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				wins++
			} else if !errors.Is(err, store.ErrConflict) {
				t.Errorf("racing start: %v", err)
			}
		})
	}
	wg.Wait()
	if wins != 1 {
		t.Fatalf("%d racing starts won", wins)
	}
}

func testRunUpdate(t *testing.T, s store.Store) {
	c := must[chat.Conversation](t)(s.CreateConversation(ctx(t), alice, chat.Conversation{}))
	r := must[chat.Run](t)(s.CreateRun(ctx(t), alice, chat.Run{ConversationID: c.ID, Input: "hi"}))
	_, err := s.GetRun(ctx(t), eve, r.ID)
	wantErr(t, err, store.ErrNotFound)
	_, err = s.UpdateRun(ctx(t), "evil", r.ID, store.RunUpdate{Status: chat.RunFailed})
	wantErr(t, err, store.ErrNotFound)

	model := "scripted"
	up := must[chat.Run](t)(s.UpdateRun(ctx(t), "acme", r.ID, store.RunUpdate{Status: chat.RunRunning, Model: &model, From: []string{chat.RunQueued}}))
	if up.Status != chat.RunRunning || up.Model != "scripted" {
		t.Fatalf("update %+v", up)
	}
	_, err = s.UpdateRun(ctx(t), "acme", r.ID, store.RunUpdate{Status: chat.RunRunning, From: []string{chat.RunQueued}})
	wantErr(t, err, store.ErrConflict)

	end := time.Now()
	state := json.RawMessage(`{"pending":["call_1"]}`)
	usage := event.Usage{InputTokens: 3, OutputTokens: 5}
	must[chat.Run](t)(s.UpdateRun(ctx(t), "acme", r.ID, store.RunUpdate{Status: chat.RunAwaitingInput, State: state}))
	fin := must[chat.Run](t)(s.UpdateRun(ctx(t), "acme", r.ID, store.RunUpdate{
		Status: chat.RunFailed, Error: &event.ErrorInfo{Code: "llm_unavailable", Message: "down"}, Usage: &usage, EndedAt: &end,
	}))
	got := must[chat.Run](t)(s.GetRun(ctx(t), alice, r.ID))
	if got.Status != chat.RunFailed || got.Error == nil || got.Error.Code != "llm_unavailable" || !reflect.DeepEqual(got.Usage, usage) ||
		got.EndedAt == nil || !got.EndedAt.Equal(*fin.EndedAt) || string(got.State) != string(state) {
		t.Fatalf("stored run %+v", got)
	}
}

func mkEvents(thread, run string, from, n int) []event.Event {
	var out []event.Event
	for i := range n {
		out = append(out, event.Event{
			Tenant: "acme", Thread: thread, Run: run, Seq: int64(from + i), Time: time.UnixMilli(1700000000000 + int64(i)).UTC(),
			Type: event.TextDelta, Turn: run, Iteration: 1, Step: "worker",
			Payload: event.TextDeltaData{MessageID: "m", Delta: fmt.Sprintf("tok%d ", from+i)},
		})
	}
	return out
}

func testEventLog(t *testing.T, s store.Store) {
	c := must[chat.Conversation](t)(s.CreateConversation(ctx(t), alice, chat.Conversation{}))
	if n := must[int64](t)(s.LastSeq(ctx(t), "acme", c.ID)); n != 0 {
		t.Fatalf("empty thread last seq %d", n)
	}
	if err := s.AppendEvents(ctx(t), mkEvents(c.ID, "run1", 1, 5)); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendEvents(ctx(t), mkEvents(c.ID, "run2", 6, 5)); err != nil {
		t.Fatal(err)
	}
	wantErr(t, s.AppendEvents(ctx(t), mkEvents(c.ID, "run2", 10, 1)), store.ErrConflict)
	if n := must[int64](t)(s.LastSeq(ctx(t), "acme", c.ID)); n != 10 {
		t.Fatalf("last seq %d, want 10", n)
	}
	all := must[[]event.Event](t)(s.ListEvents(ctx(t), alice, store.ListEventsParams{Thread: c.ID}))
	if len(all) != 10 {
		t.Fatalf("%d events", len(all))
	}
	want := mkEvents(c.ID, "run1", 1, 5)[2]
	if got := all[2]; got.Seq != 3 || got.Run != "run1" || got.Type != event.TextDelta || got.Turn != "run1" || got.Iteration != 1 ||
		got.Step != "worker" || !got.Time.Equal(want.Time) || got.Payload != want.Payload || got.Tenant != "acme" || got.Thread != c.ID {
		t.Fatalf("event 3 = %+v, want %+v", got, want)
	}
	tail := must[[]event.Event](t)(s.ListEvents(ctx(t), alice, store.ListEventsParams{Thread: c.ID, AfterSeq: 7}))
	if len(tail) != 3 || tail[0].Seq != 8 {
		t.Fatalf("after 7: %+v", tail)
	}
	window := must[[]event.Event](t)(s.ListEvents(ctx(t), alice, store.ListEventsParams{Thread: c.ID, AfterSeq: 2, UntilSeq: 4}))
	if len(window) != 2 || window[0].Seq != 3 || window[1].Seq != 4 {
		t.Fatalf("window (2,4]: %+v", window)
	}
	run2 := must[[]event.Event](t)(s.ListEvents(ctx(t), alice, store.ListEventsParams{Thread: c.ID, RunID: "run2", Limit: 2}))
	if len(run2) != 2 || run2[0].Seq != 6 {
		t.Fatalf("run2 limited: %+v", run2)
	}
}

func testConfirmations(t *testing.T, s store.Store) {
	c := must[chat.Conversation](t)(s.CreateConversation(ctx(t), alice, chat.Conversation{}))
	r := must[chat.Run](t)(s.CreateRun(ctx(t), alice, chat.Run{ConversationID: c.ID, Input: "send it"}))
	mk := func() chat.Confirmation {
		return must[chat.Confirmation](t)(s.CreateConfirmation(ctx(t), chat.Confirmation{
			Tenant: "acme", Owner: "alice", RunID: r.ID, ConversationID: c.ID, ToolCallID: "call_1", ToolName: "send_feishu_message",
			Args: json.RawMessage(`{"text":"hi"}`), ExpiresAt: time.Now().Add(time.Hour),
		}))
	}
	a := mk()
	if a.Status != chat.ConfirmPending {
		t.Fatalf("new confirmation %+v", a)
	}
	pending := must[[]chat.Confirmation](t)(s.ListConfirmations(ctx(t), alice, chat.ConfirmPending))
	if len(pending) != 1 || pending[0].ID != a.ID || string(pending[0].Args) != `{"text":"hi"}` {
		t.Fatalf("pending %+v", pending)
	}
	if l := must[[]chat.Confirmation](t)(s.ListConfirmations(ctx(t), bob, "")); len(l) != 0 {
		t.Fatalf("bob sees %d confirmations", len(l))
	}
	_, err := s.DecideConfirmation(ctx(t), bob, a.ID, chat.Decision{Status: chat.ConfirmApproved, At: time.Now()})
	wantErr(t, err, store.ErrNotFound)
	_, err = s.GetConfirmation(ctx(t), eve, a.ID)
	wantErr(t, err, store.ErrNotFound)

	d := chat.Decision{Status: chat.ConfirmApproved, Args: json.RawMessage(`{"text":"edited"}`), Reason: "ok", At: time.Now()}
	got := must[chat.Confirmation](t)(s.DecideConfirmation(ctx(t), alice, a.ID, d))
	if got.Status != chat.ConfirmApproved || string(got.DecidedArgs) != `{"text":"edited"}` || got.DecidedAt == nil || got.Reason != "ok" {
		t.Fatalf("decided %+v", got)
	}
	again := must[chat.Confirmation](t)(s.DecideConfirmation(ctx(t), alice, a.ID, chat.Decision{Status: chat.ConfirmApproved, At: time.Now()}))
	if !again.DecidedAt.Equal(*got.DecidedAt) || string(again.DecidedArgs) != `{"text":"edited"}` {
		t.Fatalf("repeat changed the decision: %+v", again)
	}
	_, err = s.DecideConfirmation(ctx(t), alice, a.ID, chat.Decision{Status: chat.ConfirmRejected, At: time.Now()})
	wantErr(t, err, store.ErrConflict)

	// Racing decisions: exactly one kind wins.
	b := mk()
	var wg sync.WaitGroup
	results := make([]string, 10)
	for i := range results {
		wg.Go(func() {
			st := chat.ConfirmApproved
			if i%2 == 1 {
				st = chat.ConfirmRejected
			}
			if _, err := s.DecideConfirmation(ctx(t), alice, b.ID, chat.Decision{Status: st, At: time.Now()}); err == nil {
				results[i] = st
			} else if !errors.Is(err, store.ErrConflict) {
				t.Errorf("racing decision: %v", err)
			}
		})
	}
	wg.Wait()
	winner := must[chat.Confirmation](t)(s.GetConfirmation(ctx(t), alice, b.ID)).Status
	for _, r := range results {
		if r != "" && r != winner {
			t.Fatalf("both %s and %s were told they won", r, winner)
		}
	}
}

func testConfirmationExpiry(t *testing.T, s store.Store) {
	c := must[chat.Conversation](t)(s.CreateConversation(ctx(t), alice, chat.Conversation{}))
	r := must[chat.Run](t)(s.CreateRun(ctx(t), alice, chat.Run{ConversationID: c.ID, Input: "x"}))
	exp := time.Now().Add(time.Minute)
	mk := func() chat.Confirmation {
		return must[chat.Confirmation](t)(s.CreateConfirmation(ctx(t), chat.Confirmation{
			Tenant: "acme", Owner: "alice", RunID: r.ID, ConversationID: c.ID, ToolCallID: "call", ToolName: "send_webhook", ExpiresAt: exp,
		}))
	}
	late := mk()
	_, err := s.DecideConfirmation(ctx(t), alice, late.ID, chat.Decision{Status: chat.ConfirmApproved, At: exp.Add(time.Second)})
	wantErr(t, err, store.ErrExpired)
	if got := must[chat.Confirmation](t)(s.GetConfirmation(ctx(t), alice, late.ID)); got.Status != chat.ConfirmExpired {
		t.Fatalf("late decision left status %s", got.Status)
	}
	swept := mk()
	if got := must[[]chat.Confirmation](t)(s.ExpireConfirmations(ctx(t), time.Now())); len(got) != 0 {
		t.Fatalf("expired too early: %+v", got)
	}
	got := must[[]chat.Confirmation](t)(s.ExpireConfirmations(ctx(t), exp.Add(time.Second)))
	if len(got) != 1 || got[0].ID != swept.ID || got[0].Status != chat.ConfirmExpired {
		t.Fatalf("swept %+v", got)
	}
	_, err = s.DecideConfirmation(ctx(t), alice, swept.ID, chat.Decision{Status: chat.ConfirmApproved, At: time.Now()})
	wantErr(t, err, store.ErrExpired)
}

func testDeleteCascades(t *testing.T, s store.Store) {
	c := must[chat.Conversation](t)(s.CreateConversation(ctx(t), alice, chat.Conversation{}))
	must[chat.Message](t)(s.AppendMessage(ctx(t), alice, chat.Message{ConversationID: c.ID, Role: chat.RoleUser, Content: "x"}))
	r := must[chat.Run](t)(s.CreateRun(ctx(t), alice, chat.Run{ConversationID: c.ID, Input: "x"}))
	must[chat.Confirmation](t)(s.CreateConfirmation(ctx(t), chat.Confirmation{Tenant: "acme", Owner: "alice", RunID: r.ID, ConversationID: c.ID,
		ToolCallID: "c", ToolName: "t", ExpiresAt: time.Now().Add(time.Hour)}))
	if err := s.AppendEvents(ctx(t), mkEvents(c.ID, r.ID, 1, 3)); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteConversation(ctx(t), alice, c.ID); err != nil {
		t.Fatal(err)
	}
	_, err := s.GetRun(ctx(t), alice, r.ID)
	wantErr(t, err, store.ErrNotFound)
	if n := must[int64](t)(s.LastSeq(ctx(t), "acme", c.ID)); n != 0 {
		t.Fatalf("events survive delete: last seq %d", n)
	}
	if l := must[[]chat.Confirmation](t)(s.ListConfirmations(ctx(t), alice, "")); len(l) != 0 {
		t.Fatalf("confirmations survive delete: %d", len(l))
	}
}

func testRetention(t *testing.T, s store.Store) {
	c := must[chat.Conversation](t)(s.CreateConversation(ctx(t), alice, chat.Conversation{}))
	old := must[chat.Run](t)(s.CreateRun(ctx(t), alice, chat.Run{ConversationID: c.ID, Input: "old"}))
	ended := time.Now().Add(-48 * time.Hour)
	must[chat.Run](t)(s.UpdateRun(ctx(t), "acme", old.ID, store.RunUpdate{Status: chat.RunSucceeded, EndedAt: &ended}))
	if err := s.AppendEvents(ctx(t), mkEvents(c.ID, old.ID, 1, 2)); err != nil {
		t.Fatal(err)
	}
	live := must[chat.Run](t)(s.CreateRun(ctx(t), alice, chat.Run{ConversationID: c.ID, Input: "new"}))
	if err := s.AppendEvents(ctx(t), mkEvents(c.ID, live.ID, 3, 2)); err != nil {
		t.Fatal(err)
	}
	if n := must[int](t)(s.DeleteRunsEndedBefore(ctx(t), time.Now().Add(-24*time.Hour))); n != 1 {
		t.Fatalf("deleted %d runs", n)
	}
	_, err := s.GetRun(ctx(t), alice, old.ID)
	wantErr(t, err, store.ErrNotFound)
	evs := must[[]event.Event](t)(s.ListEvents(ctx(t), alice, store.ListEventsParams{Thread: c.ID}))
	if len(evs) != 2 || evs[0].Run != live.ID {
		t.Fatalf("remaining events %+v", evs)
	}
}

func testConcurrentWriters(t *testing.T, s store.Store) {
	const writers, perWriter = 50, 4
	var wg sync.WaitGroup
	ids := make([]string, writers)
	for i := range writers {
		wg.Go(func() {
			sc := chat.Scope{Tenant: "acme", User: fmt.Sprintf("user%d", i%5)}
			c, err := s.CreateConversation(ctx(t), sc, chat.Conversation{Title: fmt.Sprint(i)})
			if err != nil {
				t.Errorf("writer %d: %v", i, err)
				return
			}
			ids[i] = c.ID
			for j := range perWriter {
				if _, err := s.AppendMessage(ctx(t), sc, chat.Message{ConversationID: c.ID, Role: chat.RoleUser, Content: fmt.Sprint(j)}); err != nil {
					t.Errorf("writer %d message %d: %v", i, j, err)
				}
			}
		})
	}
	wg.Wait()
	total := 0
	for u := range 5 {
		sc := chat.Scope{Tenant: "acme", User: fmt.Sprintf("user%d", u)}
		list, _, err := s.ListConversations(ctx(t), sc, store.ConversationFilter{}, store.Page{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range list {
			msgs, _, err := s.ListMessages(ctx(t), sc, c.ID, store.MessageFilter{}, store.Page{Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			if len(msgs) != perWriter {
				t.Fatalf("conversation %s has %d messages", c.ID, len(msgs))
			}
		}
		total += len(list)
	}
	if total != writers {
		t.Fatalf("%d conversations stored, want %d", total, writers)
	}
}

// testJSONKept pins that JSON is stored as bytes, not re-encoded: spacing and
// key order written are the ones read back.
func testJSONKept(t *testing.T, s store.Store) {
	odd := func(k string) json.RawMessage { return json.RawMessage(`{ "z" : 1,  "` + k + `":[ true , null ] }`) }
	c := must[chat.Conversation](t)(s.CreateConversation(ctx(t), alice, chat.Conversation{}))
	must[chat.Message](t)(s.AppendMessage(ctx(t), alice, chat.Message{ConversationID: c.ID, Role: chat.RoleUser, Content: "x",
		Parts: json.RawMessage(`[ {"type":"text",  "text":"x"} ]`), Metadata: odd("meta")}))
	msgs, _, err := s.ListMessages(ctx(t), alice, c.ID, store.MessageFilter{}, store.Page{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 || string(msgs[0].Parts) != `[ {"type":"text",  "text":"x"} ]` || string(msgs[0].Metadata) != string(odd("meta")) {
		t.Fatalf("message JSON changed: %+v", msgs)
	}
	if m := must[chat.Message](t)(s.AppendMessage(ctx(t), alice, chat.Message{ConversationID: c.ID, Role: chat.RoleUser, Content: "plain"})); m.Parts != nil || m.Metadata != nil {
		t.Fatalf("plain message has JSON: %+v", m)
	}

	r := must[chat.Run](t)(s.CreateRun(ctx(t), alice, chat.Run{ConversationID: c.ID, Input: "x", State: odd("created")}))
	if got := must[chat.Run](t)(s.GetRun(ctx(t), alice, r.ID)); string(got.State) != string(odd("created")) {
		t.Fatalf("created state %s", got.State)
	}
	must[chat.Run](t)(s.UpdateRun(ctx(t), "acme", r.ID, store.RunUpdate{State: odd("updated")}))
	if got := must[chat.Run](t)(s.GetRun(ctx(t), alice, r.ID)); string(got.State) != string(odd("updated")) {
		t.Fatalf("updated state %s", got.State)
	}
	must[chat.Run](t)(s.UpdateRun(ctx(t), "acme", r.ID, store.RunUpdate{State: json.RawMessage(`null`)}))
	if got := must[chat.Run](t)(s.GetRun(ctx(t), alice, r.ID)); got.State != nil {
		t.Fatalf("null state kept as %s", got.State)
	}

	cf := must[chat.Confirmation](t)(s.CreateConfirmation(ctx(t), chat.Confirmation{Tenant: "acme", Owner: "alice", RunID: r.ID,
		ConversationID: c.ID, ToolCallID: "c", ToolName: "t", Args: odd("args"), ExpiresAt: time.Now().Add(time.Hour)}))
	must[chat.Confirmation](t)(s.DecideConfirmation(ctx(t), alice, cf.ID, chat.Decision{Status: chat.ConfirmApproved, Args: odd("edited"), At: time.Now()}))
	got := must[chat.Confirmation](t)(s.GetConfirmation(ctx(t), alice, cf.ID))
	if string(got.Args) != string(odd("args")) || string(got.DecidedArgs) != string(odd("edited")) {
		t.Fatalf("confirmation JSON changed: %s %s", got.Args, got.DecidedArgs)
	}
}

// testTimesKeepMilliseconds pins the stored precision of every time: whole
// milliseconds, in UTC, whatever a backend's native precision.
func testTimesKeepMilliseconds(t *testing.T, s store.Store) {
	at := time.Date(2026, 3, 16, 8, 0, 0, 123456789, time.FixedZone("X", 3600))
	want := at.UTC().Truncate(time.Millisecond)
	same := func(what string, got time.Time) {
		t.Helper()
		if !got.Equal(want) || got.Location() != time.UTC {
			t.Fatalf("%s = %v, want %v in UTC", what, got, want)
		}
	}
	c := must[chat.Conversation](t)(s.CreateConversation(ctx(t), alice, chat.Conversation{CreatedAt: at}))
	same("conversation created", must[chat.Conversation](t)(s.GetConversation(ctx(t), alice, c.ID)).CreatedAt)
	must[chat.Message](t)(s.AppendMessage(ctx(t), alice, chat.Message{ConversationID: c.ID, Role: chat.RoleUser, Content: "x", CreatedAt: at}))
	msgs, _, err := s.ListMessages(ctx(t), alice, c.ID, store.MessageFilter{}, store.Page{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	same("message created", msgs[0].CreatedAt)
	r := must[chat.Run](t)(s.CreateRun(ctx(t), alice, chat.Run{ConversationID: c.ID, Input: "x", CreatedAt: at}))
	must[chat.Run](t)(s.UpdateRun(ctx(t), "acme", r.ID, store.RunUpdate{Status: chat.RunSucceeded, EndedAt: &at}))
	got := must[chat.Run](t)(s.GetRun(ctx(t), alice, r.ID))
	same("run created", got.CreatedAt)
	same("run started", got.StartedAt)
	same("run ended", *got.EndedAt)
	ev := mkEvents(c.ID, r.ID, 1, 1)
	ev[0].Time = at
	if err := s.AppendEvents(ctx(t), ev); err != nil {
		t.Fatal(err)
	}
	same("event time", must[[]event.Event](t)(s.ListEvents(ctx(t), alice, store.ListEventsParams{Thread: c.ID}))[0].Time)
}

// testEventBatchAtomic pins that a batch is stored whole or not at all.
func testEventBatchAtomic(t *testing.T, s store.Store) {
	c := must[chat.Conversation](t)(s.CreateConversation(ctx(t), alice, chat.Conversation{}))
	if err := s.AppendEvents(ctx(t), mkEvents(c.ID, "r", 1, 2)); err != nil {
		t.Fatal(err)
	}
	// Three new events and one that repeats seq 2.
	batch := append(mkEvents(c.ID, "r", 3, 3), mkEvents(c.ID, "r", 2, 1)...)
	wantErr(t, s.AppendEvents(ctx(t), batch), store.ErrConflict)
	if n := must[int64](t)(s.LastSeq(ctx(t), "acme", c.ID)); n != 2 {
		t.Fatalf("part of a refused batch was stored: last seq %d", n)
	}
	if n := must[int64](t)(s.LastSeq(ctx(t), "evil", c.ID)); n != 0 {
		t.Fatalf("another tenant sees last seq %d", n)
	}
}

// testMissingParents pins ErrNotFound (not a driver error) for writes whose
// parent row does not exist.
func testMissingParents(t *testing.T, s store.Store) {
	_, err := s.AppendMessage(ctx(t), alice, chat.Message{ConversationID: "missing", Role: chat.RoleUser, Content: "x"})
	wantErr(t, err, store.ErrNotFound)
	_, err = s.CreateRun(ctx(t), alice, chat.Run{ConversationID: "missing", Input: "x"})
	wantErr(t, err, store.ErrNotFound)
	_, err = s.UpdateRun(ctx(t), "acme", "missing", store.RunUpdate{Status: chat.RunFailed})
	wantErr(t, err, store.ErrNotFound)
	_, err = s.UpdateRun(ctx(t), "acme", "missing", store.RunUpdate{Status: chat.RunFailed, From: []string{chat.RunRunning}})
	wantErr(t, err, store.ErrNotFound)
	_, err = s.CreateConfirmation(ctx(t), chat.Confirmation{Tenant: "acme", Owner: "alice", RunID: "missing", ConversationID: "missing",
		ToolCallID: "c", ToolName: "t", ExpiresAt: time.Now().Add(time.Hour)})
	wantErr(t, err, store.ErrNotFound)
	_, err = s.DecideConfirmation(ctx(t), alice, "missing", chat.Decision{Status: chat.ConfirmApproved, At: time.Now()})
	wantErr(t, err, store.ErrNotFound)
	if ok, err := s.TakeOverRun(ctx(t), store.TakeOverRunParams{Tenant: "acme", RunID: "missing", Owner: "replica-a", Epoch: 1, Now: time.Now()}); ok || err != nil {
		t.Fatalf("take over a missing run: %v, %v", ok, err)
	}
}

func testStartRun(t *testing.T, s store.Store) {
	// Into a new conversation.
	got := must[store.RunStarted](t)(s.StartRun(ctx(t), alice, &store.RunStart{
		NewConversation: &chat.Conversation{Title: "new"},
		Run:             chat.Run{Input: "hello", Status: chat.RunRunning},
		Message:         chat.Message{Role: chat.RoleUser, Content: "hello"},
	}))
	c, r, m := got.Conversation, got.Run, got.Message
	if c.ID == "" || c.Title != "new" || r.ConversationID != c.ID || r.Status != chat.RunRunning || r.TurnID == "" ||
		m.ConversationID != c.ID || m.RunID != r.ID || got.LastSeq != 0 {
		t.Fatalf("started %+v", got)
	}
	if stored := must[chat.Conversation](t)(s.GetConversation(ctx(t), alice, c.ID)); stored.Title != "new" {
		t.Fatalf("conversation %+v", stored)
	}
	msgs, _, err := s.ListMessages(ctx(t), alice, c.ID, store.MessageFilter{}, store.Page{Limit: 10})
	if err != nil || len(msgs) != 1 || msgs[0].ID != m.ID || msgs[0].RunID != r.ID {
		t.Fatalf("messages %+v (%v)", msgs, err)
	}
	// A second start on the busy conversation is refused and writes nothing.
	_, err = s.StartRun(ctx(t), alice, &store.RunStart{Run: chat.Run{ConversationID: c.ID, Input: "again"}, Message: chat.Message{Role: chat.RoleUser, Content: "again"}})
	var busy *store.BusyError
	if !errors.As(err, &busy) || busy.ActiveRunID != r.ID {
		t.Fatalf("busy start: %v", err)
	}
	if msgs, _, _ := s.ListMessages(ctx(t), alice, c.ID, store.MessageFilter{}, store.Page{Limit: 10}); len(msgs) != 1 {
		t.Fatalf("a refused start stored a message: %d", len(msgs))
	}
	// Into an existing conversation, after events: the last seq is reported.
	end := time.Now()
	must[chat.Run](t)(s.UpdateRun(ctx(t), "acme", r.ID, store.RunUpdate{Status: chat.RunSucceeded, EndedAt: &end}))
	if err := s.AppendEvents(ctx(t), mkEvents(c.ID, r.ID, 1, 4)); err != nil {
		t.Fatal(err)
	}
	next := must[store.RunStarted](t)(s.StartRun(ctx(t), alice, &store.RunStart{Run: chat.Run{ConversationID: c.ID, Input: "next"}, Message: chat.Message{Role: chat.RoleUser, Content: "next"}}))
	if next.LastSeq != 4 || next.Conversation.ID != c.ID || next.Run.ID == r.ID {
		t.Fatalf("second start %+v", next)
	}
	// Not found for other principals.
	for _, other := range []chat.Scope{bob, eve} {
		_, err := s.StartRun(ctx(t), other, &store.RunStart{Run: chat.Run{ConversationID: c.ID, Input: "x"}, Message: chat.Message{Role: chat.RoleUser, Content: "x"}})
		wantErr(t, err, store.ErrNotFound)
	}
}

func testCancelRequested(t *testing.T, s store.Store) {
	c := must[chat.Conversation](t)(s.CreateConversation(ctx(t), alice, chat.Conversation{}))
	r := must[chat.Run](t)(s.CreateRun(ctx(t), alice, chat.Run{ConversationID: c.ID, Input: "x", Status: chat.RunRunning,
		LeaseOwner: "a", LeaseEpoch: 1}))
	if r.CancelRequested {
		t.Fatal("a new run is cancel-requested")
	}
	active := []string{chat.RunQueued, chat.RunRunning, chat.RunAwaitingInput}
	up := must[chat.Run](t)(s.UpdateRun(ctx(t), "acme", r.ID, store.RunUpdate{CancelRequested: true, From: active}))
	if !up.CancelRequested || up.Status != chat.RunRunning {
		t.Fatalf("after the request %+v", up)
	}
	// Kept by later updates, seen by every read.
	must[chat.Run](t)(s.UpdateRun(ctx(t), "acme", r.ID, store.RunUpdate{Model: new(string)}))
	if got := must[chat.Run](t)(s.GetRunAnyOwner(ctx(t), "acme", r.ID)); !got.CancelRequested {
		t.Fatalf("GetRunAnyOwner %+v", got)
	}
	if got := must[chat.Run](t)(s.GetRun(ctx(t), alice, r.ID)); !got.CancelRequested {
		t.Fatalf("GetRun %+v", got)
	}
	if ids := must[[]string](t)(s.CancelRequests(ctx(t), "a", 1)); len(ids) != 1 || ids[0] != r.ID {
		t.Fatalf("cancel requests of the term %v", ids)
	}
	if ids := must[[]string](t)(s.CancelRequests(ctx(t), "a", 2)); len(ids) != 0 {
		t.Fatalf("cancel requests of another term %v", ids)
	}
	// A finished run cannot be asked to stop.
	end := time.Now()
	must[chat.Run](t)(s.UpdateRun(ctx(t), "acme", r.ID, store.RunUpdate{Status: chat.RunCancelled, EndedAt: &end}))
	_, err := s.UpdateRun(ctx(t), "acme", r.ID, store.RunUpdate{CancelRequested: true, From: active})
	wantErr(t, err, store.ErrConflict)
}

// awaiting makes a run of alice's awaiting input with one pending
// confirmation per tool call id.
func awaiting(t *testing.T, s store.Store, calls ...string) (chat.Run, []chat.Confirmation) {
	t.Helper()
	c := must[chat.Conversation](t)(s.CreateConversation(ctx(t), alice, chat.Conversation{}))
	r := must[chat.Run](t)(s.CreateRun(ctx(t), alice, chat.Run{ConversationID: c.ID, Input: "x", Status: chat.RunAwaitingInput}))
	var out []chat.Confirmation
	for _, call := range calls {
		out = append(out, must[chat.Confirmation](t)(s.CreateConfirmation(ctx(t), chat.Confirmation{
			Tenant: "acme", Owner: "alice", RunID: r.ID, ConversationID: c.ID, ToolCallID: call, ToolName: "send_feishu_message",
			Args: json.RawMessage(`{}`), ExpiresAt: time.Now().Add(time.Hour),
		})))
	}
	return r, out
}

func decide(t *testing.T, s store.Store, c chat.Confirmation) chat.Confirmation {
	t.Helper()
	return must[chat.Confirmation](t)(s.DecideConfirmation(ctx(t), alice, c.ID, chat.Decision{Status: chat.ConfirmApproved, At: time.Now()}))
}

func testClaimRun(t *testing.T, s store.Store) {
	r, cs := awaiting(t, s, "call_a", "call_b")
	a, b := cs[0], cs[1]

	// A pending decision continues nothing.
	_, err := s.ClaimRun(ctx(t), store.ClaimRunParams{Tenant: "acme", RunID: r.ID, ConfirmationID: a.ID, Owner: "replica-1", Epoch: 7})
	wantErr(t, err, store.ErrConflict)
	a = decide(t, s, a)
	if a.AppliedAt != nil {
		t.Fatalf("a fresh decision is applied: %+v", a)
	}
	// Another tenant's claim finds nothing.
	_, err = s.ClaimRun(ctx(t), store.ClaimRunParams{Tenant: "evil", RunID: r.ID, ConfirmationID: a.ID, Owner: "replica-1", Epoch: 7})
	wantErr(t, err, store.ErrNotFound)
	_, err = s.ClaimRun(ctx(t), store.ClaimRunParams{Tenant: "acme", RunID: "no-such-run", Owner: "replica-1", Epoch: 7})
	wantErr(t, err, store.ErrNotFound)

	got := must[chat.Run](t)(s.ClaimRun(ctx(t), store.ClaimRunParams{Tenant: "acme", RunID: r.ID, ConfirmationID: a.ID, Owner: "replica-1", Epoch: 7}))
	if got.Status != chat.RunRunning || got.LeaseOwner != "replica-1" || got.LeaseEpoch != 7 {
		t.Fatalf("claimed %+v", got)
	}
	if stored := must[chat.Run](t)(s.GetRun(ctx(t), alice, r.ID)); stored.Status != chat.RunRunning || stored.LeaseOwner != "replica-1" {
		t.Fatalf("stored after the claim %+v", stored)
	}
	if applied := must[chat.Confirmation](t)(s.GetConfirmation(ctx(t), alice, a.ID)); applied.AppliedAt == nil {
		t.Fatalf("the claim did not apply the decision: %+v", applied)
	}
	// Claimed already.
	_, err = s.ClaimRun(ctx(t), store.ClaimRunParams{Tenant: "acme", RunID: r.ID, ConfirmationID: a.ID, Owner: "replica-2", Epoch: 8})
	wantErr(t, err, store.ErrConflict)

	// The run pauses again for b: a decision already applied never continues it twice.
	must[chat.Run](t)(s.UpdateRun(ctx(t), "acme", r.ID, store.RunUpdate{Status: chat.RunAwaitingInput}))
	_, err = s.ClaimRun(ctx(t), store.ClaimRunParams{Tenant: "acme", RunID: r.ID, ConfirmationID: a.ID, Owner: "replica-2", Epoch: 8})
	wantErr(t, err, store.ErrConflict)
	_, err = s.ClaimRun(ctx(t), store.ClaimRunParams{Tenant: "acme", RunID: r.ID, ConfirmationID: b.ID, Owner: "replica-2", Epoch: 8})
	wantErr(t, err, store.ErrConflict) // b is still pending
	// A decision of another run does not continue this one.
	_, others := awaiting(t, s, "call_x")
	x := decide(t, s, others[0])
	_, err = s.ClaimRun(ctx(t), store.ClaimRunParams{Tenant: "acme", RunID: r.ID, ConfirmationID: x.ID, Owner: "replica-2", Epoch: 8})
	wantErr(t, err, store.ErrConflict)
	if c := must[chat.Confirmation](t)(s.GetConfirmation(ctx(t), alice, x.ID)); c.AppliedAt != nil {
		t.Fatal("a refused claim applied a decision")
	}
	// Without a decision (a cancel), the claim needs only the status.
	got = must[chat.Run](t)(s.ClaimRun(ctx(t), store.ClaimRunParams{Tenant: "acme", RunID: r.ID, Owner: "replica-2", Epoch: 8}))
	if got.Status != chat.RunRunning || got.LeaseOwner != "replica-2" {
		t.Fatalf("claimed without a decision %+v", got)
	}
	if c := must[chat.Confirmation](t)(s.GetConfirmation(ctx(t), alice, b.ID)); c.AppliedAt != nil || c.Status != chat.ConfirmPending {
		t.Fatalf("b changed: %+v", c)
	}
}

func testRacingClaims(t *testing.T, s store.Store) {
	r, cs := awaiting(t, s, "call_a", "call_b")
	a, b := decide(t, s, cs[0]), decide(t, s, cs[1])
	var wg sync.WaitGroup
	winners := make([]string, 12)
	for i := range winners {
		wg.Go(func() {
			c := []string{a.ID, b.ID, ""}[i%3]
			owner := fmt.Sprintf("replica-%d", i)
			if _, err := s.ClaimRun(ctx(t), store.ClaimRunParams{Tenant: "acme", RunID: r.ID, ConfirmationID: c, Owner: owner, Epoch: int64(i)}); err == nil {
				winners[i] = owner
			} else if !errors.Is(err, store.ErrConflict) {
				t.Errorf("racing claim: %v", err)
			}
		})
	}
	wg.Wait()
	var won []string
	for _, w := range winners {
		if w != "" {
			won = append(won, w)
		}
	}
	if len(won) != 1 {
		t.Fatalf("%d claimers won: %v", len(won), won)
	}
	if got := must[chat.Run](t)(s.GetRun(ctx(t), alice, r.ID)); got.LeaseOwner != won[0] || got.Status != chat.RunRunning {
		t.Fatalf("run %+v, winner %s", got, won[0])
	}
	applied := 0
	for _, id := range []string{a.ID, b.ID} {
		if must[chat.Confirmation](t)(s.GetConfirmation(ctx(t), alice, id)).AppliedAt != nil {
			applied++
		}
	}
	if applied > 1 {
		t.Fatalf("%d decisions applied by one claim", applied)
	}
}

func testUnappliedDecisions(t *testing.T, s store.Store) {
	future := time.Now().Add(time.Hour)
	ids := func(list []chat.Confirmation) []string {
		var out []string
		for _, c := range list {
			out = append(out, c.ID)
		}
		return out
	}
	r, cs := awaiting(t, s, "call_a", "call_b")
	if l := must[[]chat.Confirmation](t)(s.UnappliedDecisions(ctx(t), future, 10)); len(l) != 0 {
		t.Fatalf("pending confirmations listed: %v", ids(l))
	}
	a := decide(t, s, cs[0])
	if l := must[[]chat.Confirmation](t)(s.UnappliedDecisions(ctx(t), a.DecidedAt.Add(-time.Second), 10)); len(l) != 0 {
		t.Fatalf("a decision newer than the bound listed: %v", ids(l))
	}
	l := must[[]chat.Confirmation](t)(s.UnappliedDecisions(ctx(t), future, 10))
	if len(l) != 1 || l[0].ID != a.ID || l[0].RunID != r.ID || l[0].Tenant != "acme" || l[0].Status != chat.ConfirmApproved {
		t.Fatalf("unapplied %+v", l)
	}
	// Expired confirmations are decisions too (the run must learn of them).
	other, ocs := awaiting(t, s, "call_c")
	must[chat.Run](t)(s.UpdateRun(ctx(t), "acme", other.ID, store.RunUpdate{})) // still awaiting
	later := time.Now().Add(2 * time.Hour)                                      // past every expiry
	expired := must[[]chat.Confirmation](t)(s.ExpireConfirmations(ctx(t), later))
	if len(expired) != 2 { // b and c
		t.Fatalf("expired %v", ids(expired))
	}
	if l := must[[]chat.Confirmation](t)(s.UnappliedDecisions(ctx(t), later.Add(time.Second), 10)); len(l) != 3 || l[0].ID != a.ID {
		t.Fatalf("with expiries: %v (a %s, c %s)", ids(l), a.ID, ocs[0].ID)
	}
	// Applied, or of a run no longer waiting: gone from the list.
	must[chat.Run](t)(s.ClaimRun(ctx(t), store.ClaimRunParams{Tenant: "acme", RunID: r.ID, ConfirmationID: a.ID, Owner: "replica-1", Epoch: 1}))
	end := time.Now()
	must[chat.Run](t)(s.UpdateRun(ctx(t), "acme", other.ID, store.RunUpdate{Status: chat.RunCancelled, EndedAt: &end}))
	if l := must[[]chat.Confirmation](t)(s.UnappliedDecisions(ctx(t), later.Add(time.Second), 10)); len(l) != 0 {
		t.Fatalf("after the claim: %v", ids(l))
	}
	// The limit holds.
	for range 3 {
		_, cs := awaiting(t, s, "call_d")
		decide(t, s, cs[0])
	}
	if l := must[[]chat.Confirmation](t)(s.UnappliedDecisions(ctx(t), future, 2)); len(l) != 2 {
		t.Fatalf("limit 2 gave %d", len(l))
	}
}

func testStartRunFailureWritesNothing(t *testing.T, s store.Store) {
	c := must[chat.Conversation](t)(s.CreateConversation(ctx(t), alice, chat.Conversation{ID: "taken"}))
	// A new conversation whose id is taken: nothing is written.
	_, err := s.StartRun(ctx(t), alice, &store.RunStart{
		NewConversation: &chat.Conversation{ID: c.ID},
		Run:             chat.Run{Input: "x", Status: chat.RunRunning},
		Message:         chat.Message{Role: chat.RoleUser, Content: "x"},
	})
	wantErr(t, err, store.ErrConflict)
	if runs := must[[]chat.Run](t)(s.ListRuns(ctx(t), alice, c.ID)); len(runs) != 0 {
		t.Fatalf("a failed start left %d runs", len(runs))
	}
	// Into a conversation that is not there.
	_, err = s.StartRun(ctx(t), alice, &store.RunStart{Run: chat.Run{ConversationID: "missing", Input: "x"}, Message: chat.Message{Role: chat.RoleUser, Content: "x"}})
	wantErr(t, err, store.ErrNotFound)
	if list, _, _ := s.ListConversations(ctx(t), alice, store.ConversationFilter{}, store.Page{Limit: 10}); len(list) != 1 {
		t.Fatalf("%d conversations after failed starts", len(list))
	}
}
