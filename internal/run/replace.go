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

// RegenerateRequest asks for an answer again.
type RegenerateRequest struct {
	ConversationID string
	// Answer is the run whose answer is replaced ("" for the last one).
	Answer string
	// Engine, AgentID and AgentVersion are as in StartRequest.
	Engine       string
	AgentID      string
	AgentVersion int
}

// Regenerate answers a user message of the conversation again, in a new run
// that replaces the answer of run answer (the AI SDK names an answer by its
// run's id) and of the runs after it: "" regenerates the last answer. The
// replaced answers stay stored as previous versions; the new run's context
// leaves them out.
func (s *Service) Regenerate(ctx context.Context, sc chat.Scope, rr RegenerateRequest, follow bool) (Started, error) {
	conversationID, answer := rr.ConversationID, rr.Answer
	runs, err := s.st.ListRuns(ctx, sc, conversationID)
	if err != nil {
		return Started{}, err
	}
	var old chat.Run
	for i := len(runs) - 1; i >= 0; i-- {
		if answer == "" || runs[i].ID == answer {
			old = runs[i]
			break
		}
	}
	switch {
	case old.ID == "" && answer != "":
		return Started{}, ErrNoSuchAnswer
	case old.ID == "":
		return Started{}, ErrNothingToRegenerate
	}
	msgs, _, err := s.st.ListMessages(ctx, sc, conversationID, store.MessageFilter{RunID: old.ID}, store.Page{Limit: 1})
	if err != nil {
		return Started{}, err
	}
	req := StartRequest{ConversationID: conversationID, Regenerates: old.ID, Input: old.Input, Engine: rr.Engine,
		AgentID: rr.AgentID, AgentVersion: rr.AgentVersion}
	if len(msgs) > 0 && msgs[0].Role == chat.RoleUser {
		req.Input, req.Parts = msgs[0].Content, msgs[0].Parts
	}
	return s.Start(ctx, sc, req, follow)
}

// Edited is the run an edit of an earlier user message replaces: the run
// after the one whose answer precedes the edited message (after, the AI
// SDK's id of that answer), or the conversation's first run when nothing
// precedes it (after ""). It is "" when there is no such run: the edit is
// then a new turn.
func (s *Service) Edited(ctx context.Context, sc chat.Scope, conversationID, after string) (string, error) {
	runs, err := s.st.ListRuns(ctx, sc, conversationID)
	if err != nil {
		return "", err
	}
	if after == "" {
		if len(runs) > 0 {
			return runs[0].ID, nil
		}
		return "", nil
	}
	for i, r := range runs {
		if r.ID == after && i+1 < len(runs) {
			return runs[i+1].ID, nil
		}
	}
	return "", nil
}
