package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/store"
)

// testRunEndWithAnswer: an update carrying the run's answer appends it as
// AppendMessage would (after the run's latest message, the active leaf
// moving to it, the conversation bumped) in the same write as the end; an
// update refused (a compare-and-set that fails, another tenant) writes
// neither, and an answer that cannot be appended fails the update.
func testRunEndWithAnswer(t *testing.T, s store.Store) {
	st := must[store.RunStarted](t)(s.StartRun(ctx(t), alice, store.RunStart{
		NewConversation: &chat.Conversation{Title: "answered"},
		Run:             chat.Run{Input: "q", Status: chat.RunRunning},
		Message:         chat.Message{Role: chat.RoleUser, Content: "q"},
	}))
	conv, r := st.Conversation.ID, st.Run
	answer := &chat.Message{ID: chat.NewID(), Role: chat.RoleAssistant, Content: "a", Metadata: []byte(`{"partial":true}`)}
	messages := func() []chat.Message {
		t.Helper()
		got, _, err := s.ListMessages(ctx(t), alice, conv, store.MessageFilter{}, store.Page{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}

	// Refused updates write no answer.
	end := time.Now()
	if _, err := s.UpdateRun(ctx(t), "acme", r.ID, store.RunUpdate{Status: chat.RunSucceeded, EndedAt: &end, From: []string{chat.RunQueued}, Answer: answer}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("update from queued: %v", err)
	}
	if _, err := s.UpdateRun(ctx(t), "evil", r.ID, store.RunUpdate{Status: chat.RunSucceeded, EndedAt: &end, Answer: answer}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("another tenant's update: %v", err)
	}
	if got := messages(); len(got) != 1 {
		t.Fatalf("refused updates wrote %d messages", len(got)-1)
	}
	if got := must[chat.Run](t)(s.GetRun(ctx(t), alice, r.ID)); got.Status != chat.RunRunning {
		t.Fatalf("refused updates left the run %s", got.Status)
	}

	// The answer and the end, one write.
	usage := event.Usage{InputTokens: 3, OutputTokens: 4}
	got := must[chat.Run](t)(s.UpdateRun(ctx(t), "acme", r.ID, store.RunUpdate{Status: chat.RunSucceeded, EndedAt: &end, Usage: &usage, From: []string{chat.RunRunning}, Answer: answer}))
	if got.Status != chat.RunSucceeded || got.EndedAt == nil {
		t.Fatalf("ended run %+v", got)
	}
	list := messages()
	if len(list) != 2 {
		t.Fatalf("messages after the end %+v", list)
	}
	a := list[1]
	if a.ID != answer.ID || a.Role != chat.RoleAssistant || a.Content != "a" || a.RunID != r.ID || a.ConversationID != conv ||
		a.ParentID != st.Message.ID || string(a.Metadata) != `{"partial":true}` {
		t.Fatalf("stored answer %+v", a)
	}
	c := must[chat.Conversation](t)(s.GetConversation(ctx(t), alice, conv))
	if c.ActiveLeaf != answer.ID || c.UpdatedAt.Before(a.CreatedAt) {
		t.Fatalf("conversation after the answer: leaf %q (want %s), updated %v, answer at %v", c.ActiveLeaf, answer.ID, c.UpdatedAt, a.CreatedAt)
	}

	// An answer that cannot be appended (its id taken) fails the update,
	// which writes nothing.
	next := must[store.RunStarted](t)(s.StartRun(ctx(t), alice, store.RunStart{
		Run: chat.Run{ConversationID: conv, Input: "q2", Status: chat.RunRunning}, Message: chat.Message{Role: chat.RoleUser, Content: "q2"},
	}))
	if _, err := s.UpdateRun(ctx(t), "acme", next.Run.ID, store.RunUpdate{Status: chat.RunSucceeded, EndedAt: &end, Answer: answer}); err == nil {
		t.Fatal("an answer whose id is taken was appended")
	}
	if got := must[chat.Run](t)(s.GetRun(ctx(t), alice, next.Run.ID)); got.Status != chat.RunRunning {
		t.Fatalf("a failed answer left the run %s", got.Status)
	}
	if got := messages(); len(got) != 3 {
		t.Fatalf("a failed answer left %d messages", len(got))
	}
}
