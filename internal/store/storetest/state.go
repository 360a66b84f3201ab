package storetest

import (
	"encoding/json"
	"errors"
	"testing"

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
