package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/store"
)

// testThreadState: a conversation has no state until one is set; the state
// is kept byte for byte, replaced, cleared, deleted with the conversation,
// and another principal's conversation is not found either way.
func testThreadState(t *testing.T, s store.Store) {
	c := must[chat.Conversation](t)(s.CreateConversation(ctx(t), alice, chat.Conversation{Title: "state"}))
	if got, err := s.ThreadState(ctx(t), alice, c.ID); err != nil || got != nil {
		t.Fatalf("new conversation's state = %s, %v; want none", got, err)
	}
	// Odd spacing and key order survive: the client's document, as it sent it.
	first := json.RawMessage(`{"b":1, "a":[true,null],"ü":"\u00fc"}`)
	if err := s.SetThreadState(ctx(t), alice, c.ID, first); err != nil {
		t.Fatal(err)
	}
	if got := must[json.RawMessage](t)(s.ThreadState(ctx(t), alice, c.ID)); string(got) != string(first) {
		t.Fatalf("state = %s, want %s", got, first)
	}
	second := json.RawMessage(`[1,2,3]`)
	if err := s.SetThreadState(ctx(t), alice, c.ID, second); err != nil {
		t.Fatal(err)
	}
	if got := must[json.RawMessage](t)(s.ThreadState(ctx(t), alice, c.ID)); string(got) != string(second) {
		t.Fatalf("replaced state = %s, want %s", got, second)
	}
	for _, other := range []chat.Scope{bob, eve} {
		if _, err := s.ThreadState(ctx(t), other, c.ID); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("%v reads alice's state: %v", other, err)
		}
		if err := s.SetThreadState(ctx(t), other, c.ID, json.RawMessage(`{}`)); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("%v sets alice's state: %v", other, err)
		}
	}
	if got := must[json.RawMessage](t)(s.ThreadState(ctx(t), alice, c.ID)); string(got) != string(second) {
		t.Fatalf("state after others' tries = %s", got)
	}
	if err := s.SetThreadState(ctx(t), alice, c.ID, nil); err != nil {
		t.Fatal(err)
	}
	if got := must[json.RawMessage](t)(s.ThreadState(ctx(t), alice, c.ID)); got != nil {
		t.Fatalf("cleared state = %s", got)
	}
	if err := s.SetThreadState(ctx(t), alice, "no-such-conversation", first); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("state of a missing conversation: %v", err)
	}
	if err := s.SetThreadState(ctx(t), alice, c.ID, first); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteConversation(ctx(t), alice, c.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ThreadState(ctx(t), alice, c.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("state of a deleted conversation: %v", err)
	}
}

// testRunQueue: inputs queued behind a run are not taken while it is
// active, then are taken oldest first, each once; one put back keeps its
// place; a queue whose conversation has no active run is stalled; another
// principal cannot queue in the conversation; the queue goes with its
// conversation.
func testRunQueue(t *testing.T, s store.Store) {
	started := must[store.RunStarted](t)(s.StartRun(ctx(t), alice, &store.RunStart{
		NewConversation: &chat.Conversation{Title: "queue"},
		Run:             chat.Run{Input: "q1", Status: chat.RunRunning},
		Message:         chat.Message{Role: chat.RoleUser, Content: "q1"},
	}))
	conv := started.Conversation.ID
	if _, err := s.TakeQueuedInput(ctx(t), "acme", conv); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("take from an empty queue: %v", err)
	}
	if _, err := s.EnqueueInput(ctx(t), bob, store.QueuedInput{ConversationID: conv, Request: json.RawMessage(`{}`)}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("bob queues in alice's conversation: %v", err)
	}
	var queued []store.QueuedInput
	for i := range 3 {
		q := must[store.QueuedInput](t)(s.EnqueueInput(ctx(t), alice, store.QueuedInput{ConversationID: conv, Request: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}))
		if q.ID == "" || q.CreatedAt.IsZero() || q.Owner != "alice" || q.Tenant != "acme" {
			t.Fatalf("queued %+v", q)
		}
		queued = append(queued, q)
	}
	if stalled := must[[]store.QueuedInput](t)(s.StalledQueues(ctx(t), 10)); len(stalled) != 0 {
		t.Fatalf("a queue behind a running run is stalled: %+v", stalled)
	}
	if _, err := s.TakeQueuedInput(ctx(t), "acme", conv); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("took an input while a run is active: %v", err)
	}
	at := time.Now()
	must[chat.Run](t)(s.UpdateRun(ctx(t), "acme", started.Run.ID, store.RunUpdate{Status: chat.RunSucceeded, EndedAt: &at}))
	first := must[store.QueuedInput](t)(s.TakeQueuedInput(ctx(t), "acme", conv))
	if first.ID != queued[0].ID || string(first.Request) != `{"n":0}` || !first.CreatedAt.Equal(queued[0].CreatedAt) {
		t.Fatalf("took %+v, want the oldest %+v", first, queued[0])
	}
	// Put back (its start found the conversation busy): it is first again.
	must[store.QueuedInput](t)(s.EnqueueInput(ctx(t), alice, first))
	stalled := must[[]store.QueuedInput](t)(s.StalledQueues(ctx(t), 10))
	if len(stalled) != 1 || stalled[0].ID != first.ID || stalled[0].ConversationID != conv {
		t.Fatalf("stalled %+v, want the conversation's oldest input %s", stalled, first.ID)
	}
	for i, want := range queued {
		got := must[store.QueuedInput](t)(s.TakeQueuedInput(ctx(t), "acme", conv))
		if got.ID != want.ID {
			t.Fatalf("take %d: %s, want %s", i, got.ID, want.ID)
		}
	}
	if _, err := s.TakeQueuedInput(ctx(t), "acme", conv); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("take after the last: %v", err)
	}
	must[store.QueuedInput](t)(s.EnqueueInput(ctx(t), alice, store.QueuedInput{ConversationID: conv, Request: json.RawMessage(`{}`)}))
	if err := s.DeleteConversation(ctx(t), alice, conv); err != nil {
		t.Fatal(err)
	}
	if _, err := s.TakeQueuedInput(ctx(t), "acme", conv); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the queue outlived its conversation: %v", err)
	}
}

// testQueuedInputByID: a queued input is read and deleted by its id (the id
// of the run it will start) by its owner only; the queue lists in start
// order; a deleted input is never taken, and of a delete and a take of the
// same input only one succeeds.
func testQueuedInputByID(t *testing.T, s store.Store) {
	started := must[store.RunStarted](t)(s.StartRun(ctx(t), alice, &store.RunStart{
		NewConversation: &chat.Conversation{Title: "queue by id"},
		Run:             chat.Run{Input: "q1", Status: chat.RunRunning},
		Message:         chat.Message{Role: chat.RoleUser, Content: "q1"},
	}))
	conv := started.Conversation.ID
	if got := must[[]store.QueuedInput](t)(s.QueuedInputs(ctx(t), alice, conv)); len(got) != 0 {
		t.Fatalf("an empty queue lists %+v", got)
	}
	if _, err := s.QueuedInputs(ctx(t), bob, conv); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("bob lists alice's queue: %v", err)
	}
	var ids []string
	for i := range 3 {
		q := must[store.QueuedInput](t)(s.EnqueueInput(ctx(t), alice, store.QueuedInput{ID: chat.NewID(), ConversationID: conv, Request: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}))
		ids = append(ids, q.ID)
	}
	list := must[[]store.QueuedInput](t)(s.QueuedInputs(ctx(t), alice, conv))
	if len(list) != 3 {
		t.Fatalf("listed %d inputs, want 3", len(list))
	}
	for i, q := range list {
		if q.ID != ids[i] || string(q.Request) != fmt.Sprintf(`{"n":%d}`, i) || q.ConversationID != conv || q.Owner != "alice" {
			t.Fatalf("input %d listed as %+v, want id %s", i, q, ids[i])
		}
	}
	got := must[store.QueuedInput](t)(s.GetQueuedInput(ctx(t), alice, ids[1]))
	if got.ID != ids[1] || string(got.Request) != `{"n":1}` || !got.CreatedAt.Equal(list[1].CreatedAt) {
		t.Fatalf("got %+v, want %+v", got, list[1])
	}
	other := chat.Scope{Tenant: "globex", User: "alice"}
	for _, sc := range []chat.Scope{bob, other} {
		if _, err := s.GetQueuedInput(ctx(t), sc, ids[1]); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("%s/%s reads alice's queued input: %v", sc.Tenant, sc.User, err)
		}
		if err := s.DeleteQueuedInput(ctx(t), sc, ids[1]); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("%s/%s deletes alice's queued input: %v", sc.Tenant, sc.User, err)
		}
	}
	if err := s.DeleteQueuedInput(ctx(t), alice, ids[1]); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetQueuedInput(ctx(t), alice, ids[1]); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a deleted input is still there: %v", err)
	}
	if err := s.DeleteQueuedInput(ctx(t), alice, ids[1]); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deleted twice: %v", err)
	}
	if list := must[[]store.QueuedInput](t)(s.QueuedInputs(ctx(t), alice, conv)); len(list) != 2 || list[0].ID != ids[0] || list[1].ID != ids[2] {
		t.Fatalf("after the delete the queue is %+v", list)
	}
	at := time.Now()
	must[chat.Run](t)(s.UpdateRun(ctx(t), "acme", started.Run.ID, store.RunUpdate{Status: chat.RunSucceeded, EndedAt: &at}))
	first := must[store.QueuedInput](t)(s.TakeQueuedInput(ctx(t), "acme", conv))
	if first.ID != ids[0] {
		t.Fatalf("took %s, want %s", first.ID, ids[0])
	}
	if _, err := s.GetQueuedInput(ctx(t), alice, ids[0]); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a taken input is still queued: %v", err)
	}
	if err := s.DeleteQueuedInput(ctx(t), alice, ids[0]); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deleted a taken input: %v", err)
	}
	last := must[store.QueuedInput](t)(s.TakeQueuedInput(ctx(t), "acme", conv))
	if last.ID != ids[2] {
		t.Fatalf("took %s, want %s (the deleted one is skipped)", last.ID, ids[2])
	}
	if _, err := s.TakeQueuedInput(ctx(t), "acme", conv); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("take after the last: %v", err)
	}
}
