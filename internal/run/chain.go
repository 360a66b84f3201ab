package run

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/store"
)

// ChainEngine is the engine name of chain runs (seed 003).
const ChainEngine = "chain"

// chainNamespace is the UUID namespace of the conversations chain requests
// without a conversation run in.
var chainNamespace = uuid.MustParse("8d3f4c1e-6a2b-4f0d-9c7e-3b5a1d2e4f60")

// ChainRequest starts a chain.
type ChainRequest struct {
	Input string
	// MaxSteps is the chain's step limit, already checked against the hard limit.
	MaxSteps int
	// ConversationID runs the chain in one of the principal's conversations;
	// empty runs it in the conversation ChainConversationID derives.
	ConversationID string
	// AgentID and AgentVersion pick the agent whose model and tools the
	// chain's steps use, as in StartRequest.
	AgentID      string
	AgentVersion int
}

// ChainConversationID is the conversation of a chain request that names
// none: derived from the principal, the agent the request names and the
// input, so the same request repeated (an EventSource reconnecting to its
// URL with Last-Event-ID) finds the chain it started, and two principals
// (or two agents) never share one.
func ChainConversationID(sc chat.Scope, agentID, input string) string {
	key := sc.Tenant + "\x00" + sc.User + "\x00" + input
	if agentID != "" {
		key = sc.Tenant + "\x00" + sc.User + "\x00agent:" + agentID + "\x00" + input
	}
	return uuid.NewSHA1(chainNamespace, []byte(key)).String()
}

// StartChain starts a chain run and follows it from its first event. The
// conversation is created on first use.
func (s *Service) StartChain(ctx context.Context, sc chat.Scope, req ChainRequest) (Started, error) {
	sr := StartRequest{Input: req.Input, Engine: ChainEngine, MaxSteps: req.MaxSteps, AgentID: req.AgentID, AgentVersion: req.AgentVersion}
	conv := req.ConversationID
	if conv == "" {
		conv = ChainConversationID(sc, req.AgentID, req.Input)
		switch _, err := s.st.GetConversation(ctx, sc, conv); {
		case errors.Is(err, store.ErrNotFound):
			sr.CreateWithID = conv
		case err != nil:
			return Started{}, err
		default:
			sr.ConversationID = conv
		}
	} else {
		sr.ConversationID = conv
	}
	return s.Start(ctx, sc, sr, true)
}

// LatestChain is the newest run of the conversation a chain request names
// (or derives, with the agent it names): the chain a reconnecting client resumes.
func (s *Service) LatestChain(ctx context.Context, sc chat.Scope, conversationID, agentID, input string) (chat.Run, error) {
	if conversationID == "" {
		conversationID = ChainConversationID(sc, agentID, input)
	}
	runs, err := s.st.ListRuns(ctx, sc, conversationID)
	if err != nil {
		return chat.Run{}, err
	}
	if len(runs) == 0 {
		return chat.Run{}, fmt.Errorf("no chain in conversation %s: %w", conversationID, store.ErrNotFound)
	}
	return runs[len(runs)-1], nil
}
