package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/store"
)

// testMessageTree: appends chain messages, the active leaf follows the
// branch it extends, a fork (an edit) and a start without a message (a
// regenerate) open sibling branches, and a run keeps writing its own branch
// when a person switched to another meanwhile.
func testMessageTree(t *testing.T, s store.Store) {
	end := func(r chat.Run) {
		t.Helper()
		at := time.Now()
		must[chat.Run](t)(s.UpdateRun(ctx(t), "acme", r.ID, store.RunUpdate{Status: chat.RunSucceeded, EndedAt: &at}))
	}
	leaf := func(conv string) string {
		t.Helper()
		return must[chat.Conversation](t)(s.GetConversation(ctx(t), alice, conv)).ActiveLeaf
	}
	first := must[store.RunStarted](t)(s.StartRun(ctx(t), alice, &store.RunStart{
		NewConversation: &chat.Conversation{Title: "tree"},
		Run:             chat.Run{Input: "q1", Status: chat.RunRunning},
		Message:         chat.Message{Role: chat.RoleUser, Content: "q1"},
	}))
	conv, u1 := first.Conversation.ID, first.Message
	if u1.ParentID != "" || first.Run.ParentID != "" || first.Conversation.ActiveLeaf != u1.ID || leaf(conv) != u1.ID {
		t.Fatalf("first start: message parent %q, run parent %q, leaf %q (want %s)", u1.ParentID, first.Run.ParentID, leaf(conv), u1.ID)
	}
	a1 := must[chat.Message](t)(s.AppendMessage(ctx(t), alice, chat.Message{ConversationID: conv, RunID: first.Run.ID, Role: chat.RoleAssistant, Content: "a1"}))
	if a1.ParentID != u1.ID || leaf(conv) != a1.ID {
		t.Fatalf("answer parent %q leaf %q", a1.ParentID, leaf(conv))
	}
	end(first.Run)

	// A regenerate: a run with no message of its own, answering u1 again.
	regen := must[store.RunStarted](t)(s.StartRun(ctx(t), alice, &store.RunStart{
		Run: chat.Run{ConversationID: conv, Input: "q1", Status: chat.RunRunning}, Parent: &u1.ID,
	}))
	if regen.Run.ParentID != u1.ID || regen.Message.ID != "" || leaf(conv) != u1.ID {
		t.Fatalf("regenerate start: run parent %q, message %+v, leaf %q", regen.Run.ParentID, regen.Message, leaf(conv))
	}
	a2 := must[chat.Message](t)(s.AppendMessage(ctx(t), alice, chat.Message{ConversationID: conv, RunID: regen.Run.ID, Role: chat.RoleAssistant, Content: "a2"}))
	if a2.ParentID != u1.ID || leaf(conv) != a2.ID {
		t.Fatalf("regenerated answer parent %q leaf %q", a2.ParentID, leaf(conv))
	}
	end(regen.Run)

	// An edit of the first message: a new root, active.
	root := ""
	edit := must[store.RunStarted](t)(s.StartRun(ctx(t), alice, &store.RunStart{
		Run: chat.Run{ConversationID: conv, Input: "q1'", Status: chat.RunRunning}, Parent: &root,
		Message: chat.Message{Role: chat.RoleUser, Content: "q1'"},
	}))
	if edit.Message.ParentID != "" || edit.Run.ParentID != "" || leaf(conv) != edit.Message.ID {
		t.Fatalf("edit: message parent %q, run parent %q, leaf %q", edit.Message.ParentID, edit.Run.ParentID, leaf(conv))
	}
	// A person goes back to the first branch while the edit's run answers:
	// the run writes its own branch, the leaf stays where the person put it.
	if err := s.SetActiveLeaf(ctx(t), alice, conv, a1.ID); err != nil {
		t.Fatal(err)
	}
	a3 := must[chat.Message](t)(s.AppendMessage(ctx(t), alice, chat.Message{ConversationID: conv, RunID: edit.Run.ID, Role: chat.RoleAssistant, Content: "a3"}))
	t3 := must[chat.Message](t)(s.AppendMessage(ctx(t), alice, chat.Message{ConversationID: conv, RunID: edit.Run.ID, Role: chat.RoleTool, Content: "t3"}))
	if a3.ParentID != edit.Message.ID || t3.ParentID != a3.ID || leaf(conv) != a1.ID {
		t.Fatalf("run after a switch: parents %q %q, leaf %q (want %s)", a3.ParentID, t3.ParentID, leaf(conv), a1.ID)
	}
	end(edit.Run)
	// The next plain start follows the active leaf.
	next := must[store.RunStarted](t)(s.StartRun(ctx(t), alice, &store.RunStart{
		Run: chat.Run{ConversationID: conv, Input: "q2", Status: chat.RunRunning}, Message: chat.Message{Role: chat.RoleUser, Content: "q2"},
	}))
	if next.Run.ParentID != a1.ID || next.Message.ParentID != a1.ID || leaf(conv) != next.Message.ID {
		t.Fatalf("next start: run parent %q, message parent %q, leaf %q", next.Run.ParentID, next.Message.ParentID, leaf(conv))
	}
	// A message of no run follows the leaf.
	loose := must[chat.Message](t)(s.AppendMessage(ctx(t), alice, chat.Message{ConversationID: conv, Role: chat.RoleSystem, Content: "note"}))
	if loose.ParentID != next.Message.ID || leaf(conv) != loose.ID {
		t.Fatalf("loose message parent %q leaf %q", loose.ParentID, leaf(conv))
	}
	// Every message reads back with its parent.
	msgs := must[[]chat.Message](t)(func() ([]chat.Message, error) {
		m, _, err := s.ListMessages(ctx(t), alice, conv, store.MessageFilter{}, store.Page{Limit: 100})
		return m, err
	}())
	want := map[string]string{u1.ID: "", a1.ID: u1.ID, a2.ID: u1.ID, edit.Message.ID: "", a3.ID: edit.Message.ID, t3.ID: a3.ID, next.Message.ID: a1.ID, loose.ID: next.Message.ID}
	if len(msgs) != len(want) {
		t.Fatalf("%d messages, want %d", len(msgs), len(want))
	}
	for _, m := range msgs {
		if p, ok := want[m.ID]; !ok || p != m.ParentID {
			t.Errorf("message %s (%s) has parent %q, want %q", m.ID, m.Content, m.ParentID, p)
		}
	}
	if r := must[chat.Run](t)(s.GetRun(ctx(t), alice, regen.Run.ID)); r.ParentID != u1.ID {
		t.Fatalf("stored regenerate run parent %q", r.ParentID)
	}

	// SetActiveLeaf: only the owner's conversation, only its messages.
	for _, other := range []chat.Scope{bob, eve} {
		if err := s.SetActiveLeaf(ctx(t), other, conv, a2.ID); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("another principal set the leaf: %v", err)
		}
	}
	elsewhere := must[chat.Conversation](t)(s.CreateConversation(ctx(t), alice, chat.Conversation{Title: "other"}))
	if err := s.SetActiveLeaf(ctx(t), alice, elsewhere.ID, a2.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a message of another conversation became the leaf: %v", err)
	}
	if err := s.SetActiveLeaf(ctx(t), alice, conv, "no-such-message"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("an unknown message became the leaf: %v", err)
	}
	if err := s.SetActiveLeaf(ctx(t), alice, conv, a2.ID); err != nil || leaf(conv) != a2.ID {
		t.Fatalf("set leaf: %v, leaf %q", err, leaf(conv))
	}
}

// testIdempotencyKeys: a key is its principal's; the first claim wins, a
// repeat reads the record (with the run once set), an expired record is
// replaced, and a released claim may be made again.
func testIdempotencyKeys(t *testing.T, s store.Store) {
	day := time.Now().Add(-24 * time.Hour)
	k := store.IdempotencyKey{Key: "k1", BodyHash: "h1"}
	got, claimed, err := s.ClaimIdempotencyKey(ctx(t), alice, k, day)
	if err != nil || !claimed || got.BodyHash != "h1" || got.RunID != "" {
		t.Fatalf("first claim %+v %v %v", got, claimed, err)
	}
	// Another principal's key of the same name is its own.
	for _, other := range []chat.Scope{bob, eve} {
		if _, claimed, err := s.ClaimIdempotencyKey(ctx(t), other, store.IdempotencyKey{Key: "k1", BodyHash: "other"}, day); err != nil || !claimed {
			t.Fatalf("%v's claim: %v %v", other, claimed, err)
		}
	}
	if got, claimed, err = s.ClaimIdempotencyKey(ctx(t), alice, store.IdempotencyKey{Key: "k1", BodyHash: "h2"}, day); err != nil || claimed || got.BodyHash != "h1" {
		t.Fatalf("repeat claim %+v %v %v", got, claimed, err)
	}
	if err := s.SetIdempotencyRun(ctx(t), alice, "k1", "run-1", "conv-1"); err != nil {
		t.Fatal(err)
	}
	if got, claimed, _ = s.ClaimIdempotencyKey(ctx(t), alice, k, day); claimed || got.RunID != "run-1" || got.ConversationID != "conv-1" {
		t.Fatalf("claim after the run %+v %v", got, claimed)
	}
	// A run was started: release keeps the record.
	if err := s.ReleaseIdempotencyKey(ctx(t), alice, "k1"); err != nil {
		t.Fatal(err)
	}
	if _, claimed, _ = s.ClaimIdempotencyKey(ctx(t), alice, k, day); claimed {
		t.Fatal("a key that started a run was released")
	}
	// Past its time, the key is claimed anew.
	if got, claimed, err = s.ClaimIdempotencyKey(ctx(t), alice, store.IdempotencyKey{Key: "k1", BodyHash: "h3"}, time.Now().Add(time.Hour)); err != nil || !claimed || got.BodyHash != "h3" || got.RunID != "" {
		t.Fatalf("expired claim %+v %v %v", got, claimed, err)
	}
	// A claim that started nothing is released and claimed again.
	if err := s.ReleaseIdempotencyKey(ctx(t), alice, "k1"); err != nil {
		t.Fatal(err)
	}
	if _, claimed, err = s.ClaimIdempotencyKey(ctx(t), alice, store.IdempotencyKey{Key: "k1", BodyHash: "h4"}, day); err != nil || !claimed {
		t.Fatalf("claim after release %v %v", claimed, err)
	}
}

// testFeedback: a rating is the message owner's, replaced by a new one,
// withdrawn, listed per conversation and per tenant (filtered, paged), and
// deleted with its conversation.
func testFeedback(t *testing.T, s store.Store) {
	st := must[store.RunStarted](t)(s.StartRun(ctx(t), alice, &store.RunStart{
		NewConversation: &chat.Conversation{Title: "rated"},
		Run:             chat.Run{Input: "q", Status: chat.RunRunning, AgentID: "ag-1"},
		Message:         chat.Message{Role: chat.RoleUser, Content: "q"},
	}))
	conv := st.Conversation.ID
	a := must[chat.Message](t)(s.AppendMessage(ctx(t), alice, chat.Message{ConversationID: conv, RunID: st.Run.ID, Role: chat.RoleAssistant, Content: "a"}))
	f := must[chat.Feedback](t)(s.PutFeedback(ctx(t), alice, chat.Feedback{MessageID: a.ID, Rating: chat.RatingDown, Comment: "wrong", Tags: []string{"facts"}}))
	if f.ConversationID != conv || f.RunID != st.Run.ID || f.AgentID != "ag-1" || f.Owner != "alice" || f.Rating != "down" || len(f.Tags) != 1 {
		t.Fatalf("feedback %+v", f)
	}
	for _, other := range []chat.Scope{bob, eve} {
		if _, err := s.PutFeedback(ctx(t), other, chat.Feedback{MessageID: a.ID, Rating: chat.RatingUp}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("another principal rated: %v", err)
		}
		if err := s.DeleteFeedback(ctx(t), other, a.ID); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("another principal withdrew: %v", err)
		}
	}
	f = must[chat.Feedback](t)(s.PutFeedback(ctx(t), alice, chat.Feedback{MessageID: a.ID, Rating: chat.RatingUp}))
	if f.Rating != "up" || f.Comment != "" || len(f.Tags) != 0 {
		t.Fatalf("replaced feedback %+v", f)
	}
	u := must[chat.Feedback](t)(s.PutFeedback(ctx(t), alice, chat.Feedback{MessageID: st.Message.ID, Rating: chat.RatingDown}))
	if got := must[[]chat.Feedback](t)(s.ConversationFeedback(ctx(t), alice, conv)); len(got) != 2 {
		t.Fatalf("conversation feedback %+v", got)
	}
	if got := must[[]chat.Feedback](t)(s.ConversationFeedback(ctx(t), bob, conv)); len(got) != 0 {
		t.Fatalf("bob sees alice's feedback %+v", got)
	}
	down, _, err := s.ListFeedback(ctx(t), "acme", store.FeedbackFilter{Rating: chat.RatingDown}, store.Page{Limit: 10})
	if err != nil || len(down) != 1 || down[0].MessageID != u.MessageID {
		t.Fatalf("down ratings %+v %v", down, err)
	}
	page1, next, err := s.ListFeedback(ctx(t), "acme", store.FeedbackFilter{}, store.Page{Limit: 1})
	if err != nil || len(page1) != 1 || next == "" {
		t.Fatalf("first page %+v %q %v", page1, next, err)
	}
	page2, next2, err := s.ListFeedback(ctx(t), "acme", store.FeedbackFilter{}, store.Page{Limit: 1, Cursor: next})
	if err != nil || len(page2) != 1 || next2 != "" || page2[0].MessageID == page1[0].MessageID {
		t.Fatalf("second page %+v %q %v", page2, next2, err)
	}
	if got, _, _ := s.ListFeedback(ctx(t), "acme", store.FeedbackFilter{AgentID: "other"}, store.Page{Limit: 10}); len(got) != 0 {
		t.Fatalf("agent filter %+v", got)
	}
	if got, _, _ := s.ListFeedback(ctx(t), "evil", store.FeedbackFilter{}, store.Page{Limit: 10}); len(got) != 0 {
		t.Fatalf("another tenant's feedback %+v", got)
	}
	if got, _, _ := s.ListFeedback(ctx(t), "acme", store.FeedbackFilter{Since: time.Now().Add(time.Hour)}, store.Page{Limit: 10}); len(got) != 0 {
		t.Fatalf("since filter %+v", got)
	}
	if err := s.DeleteFeedback(ctx(t), alice, u.MessageID); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteFeedback(ctx(t), alice, u.MessageID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second withdrawal: %v", err)
	}
	if err := s.DeleteConversation(ctx(t), alice, conv); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := s.ListFeedback(ctx(t), "acme", store.FeedbackFilter{}, store.Page{Limit: 10}); len(got) != 0 {
		t.Fatalf("feedback outlived its conversation %+v", got)
	}
}
