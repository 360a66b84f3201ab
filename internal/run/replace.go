package run

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/store"
)

// ErrNothingToRegenerate: the conversation has no answer to give again.
var ErrNothingToRegenerate = errors.New("nothing to regenerate")

// ErrNoSuchAnswer: the answer named to regenerate is not the conversation's.
var ErrNoSuchAnswer = fmt.Errorf("no such answer: %w", store.ErrNotFound)

// ErrNoSuchMessage: the message named to edit, regenerate or fork from is
// not the conversation's.
var ErrNoSuchMessage = fmt.Errorf("no such message: %w", store.ErrNotFound)

// ErrNotEditable: only a person's (user) message can be edited.
var ErrNotEditable = errors.New("only a user message can be edited")

// RegenerateRequest asks for an answer again.
type RegenerateRequest struct {
	ConversationID string
	// Answer is the run whose answer is given again ("" for the active
	// branch's last one): the AI SDK names an answer by its run's id.
	Answer string
	// Engine, AgentID and AgentVersion are as in StartRequest.
	Engine       string
	AgentID      string
	AgentVersion int
}

// Regenerate answers again the user message that run rr.Answer answered
// ("" for the active leaf's), in a new run whose answer is a sibling of the
// old one (StartRequest.Regenerates). The old answer stays in the tree.
func (s *Service) Regenerate(ctx context.Context, sc chat.Scope, rr RegenerateRequest, follow bool) (Started, error) {
	conv, err := s.st.GetConversation(ctx, sc, rr.ConversationID)
	if err != nil {
		return Started{}, err
	}
	at := conv.ActiveLeaf
	if rr.Answer != "" {
		r, err := s.st.GetRun(ctx, sc, rr.Answer)
		if err != nil || r.ConversationID != conv.ID {
			return Started{}, ErrNoSuchAnswer
		}
		all, err := s.messages(ctx, sc, conv.ID)
		if err != nil {
			return Started{}, err
		}
		at = chat.RunLeaf(all, r)
	}
	if at == "" {
		return Started{}, ErrNothingToRegenerate
	}
	req := StartRequest{ConversationID: conv.ID, Regenerates: at, Engine: rr.Engine, AgentID: rr.AgentID, AgentVersion: rr.AgentVersion}
	return s.Start(ctx, sc, req, follow)
}

// ForkAfter is where an AI SDK edit's new user message goes: after the last
// message of run after (the answer the client shows before the edited
// message), or first ("" for after ""), as StartRequest.ParentID.
func (s *Service) ForkAfter(ctx context.Context, sc chat.Scope, conversationID, after string) (*string, error) {
	root := ""
	if after == "" {
		return &root, nil
	}
	r, err := s.st.GetRun(ctx, sc, after)
	if errors.Is(err, store.ErrNotFound) || (err == nil && r.ConversationID != conversationID) {
		return nil, nil // not an answer of ours: a plain new turn
	}
	if err != nil {
		return nil, err
	}
	all, err := s.messages(ctx, sc, conversationID)
	if err != nil {
		return nil, err
	}
	leaf := chat.RunLeaf(all, r)
	return &leaf, nil
}

// place resolves a start's position in the conversation's tree: the
// message its user message follows (nil: the active leaf) and, for a
// regenerate, the user message answered again, whose input the run takes.
func (s *Service) place(ctx context.Context, sc chat.Scope, req *StartRequest) (parent *string, again *chat.Message, err error) {
	if req.Regenerates == "" && req.Edits == "" && (req.ParentID == nil || *req.ParentID == "") {
		return req.ParentID, nil, nil
	}
	if req.ConversationID == "" {
		return nil, nil, ErrNoSuchMessage
	}
	all, err := s.messages(ctx, sc, req.ConversationID)
	if err != nil {
		return nil, nil, err
	}
	find := func(id string) (chat.Message, bool) {
		for _, m := range all {
			if m.ID == id {
				return m, true
			}
		}
		return chat.Message{}, false
	}
	if req.Regenerates == "" && req.Edits == "" {
		if _, ok := find(*req.ParentID); !ok {
			return nil, nil, ErrNoSuchMessage
		}
		return req.ParentID, nil, nil
	}
	if req.Edits != "" {
		m, ok := find(req.Edits)
		switch {
		case !ok:
			return nil, nil, ErrNoSuchMessage
		case m.Role != chat.RoleUser:
			return nil, nil, ErrNotEditable
		}
		return &m.ParentID, nil, nil
	}
	if _, ok := find(req.Regenerates); !ok {
		return nil, nil, ErrNoSuchMessage
	}
	u, ok := chat.AnsweredBy(all, req.Regenerates)
	if !ok {
		return nil, nil, ErrNothingToRegenerate
	}
	return &u.ID, &u, nil
}

// SentMessage is a message of the history a client sends with its input
// (AG-UI's RunAgentInput.messages): its id, role and text.
type SentMessage struct {
	ID, Role, Text string
}

// Diverged is where a client's history leaves the thread's active branch:
// the first of its user messages that differs from the stored one at its
// place (by id, else by position and text) is an edit at that point. It
// returns the message the new input follows (StartRequest.ParentID), or nil
// when the history agrees with the branch (a new turn). A client that sends
// only its new message (no history) is a new turn, unless that message
// names a stored user message by id.
func (s *Service) Diverged(ctx context.Context, sc chat.Scope, conversationID string, sent []SentMessage) (*string, error) {
	var users []SentMessage
	history := false
	for _, m := range sent {
		switch m.Role {
		case chat.RoleUser:
			users = append(users, m)
		case chat.RoleAssistant, chat.RoleTool:
			history = true
		}
	}
	history = history || len(users) > 1
	if len(users) == 0 {
		return nil, nil
	}
	branch, err := s.activeMessages(ctx, sc, conversationID)
	if err != nil {
		return nil, err
	}
	var stored []chat.Message
	byID := map[string]chat.Message{}
	for _, m := range branch {
		if m.Role == chat.RoleUser {
			stored = append(stored, m)
			byID[m.ID] = m
		}
	}
	for i, u := range users {
		if m, ok := byID[u.ID]; ok {
			if m.Content == u.Text {
				continue
			}
			return &m.ParentID, nil
		}
		if !history || i >= len(stored) {
			return nil, nil
		}
		if stored[i].Content != u.Text {
			return &stored[i].ParentID, nil
		}
	}
	return nil, nil
}
