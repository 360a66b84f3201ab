package run_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/agentchat/agentchat/internal/bus/membus"
	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/engine"
	"github.com/agentchat/agentchat/internal/run"
	"github.com/agentchat/agentchat/internal/store"
)

// writesSeen is a store that notes which messages were appended on their
// own and which came with a run's end, and says when an end was recorded.
type writesSeen struct {
	store.Store
	mu       sync.Mutex
	appended []string // roles, in order
	answers  []string // contents of the answers that came with an end
	ended    chan error
}

func (s *writesSeen) AppendMessage(ctx context.Context, sc chat.Scope, m chat.Message) (chat.Message, error) {
	s.mu.Lock()
	s.appended = append(s.appended, m.Role)
	s.mu.Unlock()
	return s.Store.AppendMessage(ctx, sc, m)
}

func (s *writesSeen) UpdateRun(ctx context.Context, tenant, id string, u store.RunUpdate) (chat.Run, error) {
	r, err := s.Store.UpdateRun(ctx, tenant, id, u)
	if u.Answer != nil {
		s.mu.Lock()
		s.answers = append(s.answers, u.Answer.Content)
		s.mu.Unlock()
	}
	if u.EndedAt != nil && (err == nil || u.Answer == nil) {
		s.ended <- err
	}
	return r, err
}

// A run's answer is written with its end, in one write: the messages
// before it (a call's, its result) are appended as they come, in order,
// and the answer follows them. An answer that cannot be stored does not
// keep the end from being recorded.
func TestAnswerWrittenWithTheEnd(t *testing.T) {
	t.Parallel()
	calls, _ := json.Marshal(chat.AssistantMeta{ToolCalls: []chat.ToolCall{{ID: "call_1", Name: "look", Arguments: json.RawMessage(`{}`)}}})
	var reuse string // an id the answer takes when set: its write fails
	eng := engineFunc(func(ctx context.Context, t engine.Task, h engine.Host) engine.Outcome {
		if _, err := h.AppendMessage(ctx, chat.Message{Role: chat.RoleAssistant, Metadata: calls}); err != nil {
			return engine.Outcome{Status: engine.StatusFailed}
		}
		if _, err := h.AppendMessage(ctx, chat.Message{Role: chat.RoleTool, Content: "seen", ToolCallID: "call_1", ToolName: "look"}); err != nil {
			return engine.Outcome{Status: engine.StatusFailed}
		}
		id := reuse
		if id == "" {
			id = t.History[len(t.History)-1].ID + "-answer"
		}
		if _, err := h.AppendMessage(ctx, chat.Message{ID: id, Role: chat.RoleAssistant, Content: "the answer"}); err != nil {
			return engine.Outcome{Status: engine.StatusFailed}
		}
		return engine.Outcome{Status: engine.StatusSucceeded}
	})
	st := &writesSeen{Store: openStore(t), ended: make(chan error, 1)}
	b := membus.New(0)
	t.Cleanup(func() { b.Close() })
	s := run.New(run.Config{Store: st, Bus: b, Engine: eng, Sole: true})
	t.Cleanup(func() { s.Shutdown(context.Background()) })

	started, err := s.Start(t.Context(), alice, run.StartRequest{Input: "q"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-st.ended; err != nil {
		t.Fatalf("record the end: %v", err)
	}
	st.mu.Lock()
	appended, answers := st.appended, st.answers
	st.mu.Unlock()
	if len(appended) != 2 || appended[0] != chat.RoleAssistant || appended[1] != chat.RoleTool || len(answers) != 1 || answers[0] != "the answer" {
		t.Fatalf("appended alone %v, with the end %v", appended, answers)
	}
	msgs, _, err := st.ListMessages(t.Context(), alice, started.Conversation.ID, store.MessageFilter{}, store.Page{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 4 || msgs[3].Content != "the answer" || msgs[3].ParentID != msgs[2].ID || msgs[2].ParentID != msgs[1].ID {
		t.Fatalf("messages %+v", msgs)
	}

	// The next answer takes the first one's id: it cannot be stored, and
	// the run's end is recorded without it.
	reuse = msgs[3].ID
	next, err := s.Start(t.Context(), alice, run.StartRequest{ConversationID: started.Conversation.ID, Input: "q2"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-st.ended; err != nil {
		t.Fatalf("record the end without the answer: %v", err)
	}
	r, err := st.GetRun(t.Context(), alice, next.Run.ID)
	if err != nil || r.Status != chat.RunSucceeded {
		t.Fatalf("run after an answer that could not be stored: %+v %v", r, err)
	}
}
