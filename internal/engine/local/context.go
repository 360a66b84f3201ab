package local

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/engine"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/llm"
)

// Retriever finds context for a turn and remembers what was said (package
// retrieval implements it).
type Retriever interface {
	// Retrieve returns the hits for a query, searching the knowledge
	// collections named (every one when nil, none when empty); no hits is
	// an empty result.
	Retrieve(ctx context.Context, sc chat.Scope, conversationID, query string, collections []string) event.RetrievalData
	// Remember indexes a stored message for memory search (a no-op when memory is off).
	Remember(ctx context.Context, sc chat.Scope, m chat.Message)
	// ContextMessage is how hits are shown to the model.
	ContextMessage(d event.RetrievalData) string
}

// PromptSource assembles the system prompt of a tenant's turn (package
// prompt implements it); it is read on every turn, so edits apply at once.
// An agent's instructions, when set, take the place of the instructions
// component, and the other components keep wrapping them in their order.
type PromptSource interface {
	SystemPrompt(tenant, instructions string) string
}

// BlobStore keeps large tool outputs out of line.
type BlobStore interface {
	PutBlob(ctx context.Context, s chat.Scope, b chat.Blob) (chat.Blob, error)
}

// retrieve runs retrieval for a new turn: with hits it emits the retrieval
// event (before the first model call) and adds the hits, with their sources,
// to the model's context just before the user's message; without hits it
// does nothing. The user's message is remembered either way.
func (r *runner) retrieve(ctx context.Context, msgs []llm.Message) []llm.Message {
	if r.a.retriever == nil {
		return msgs
	}
	var user chat.Message
	for _, m := range slices.Backward(r.t.History) {
		if m.Role == chat.RoleUser {
			user = m
			break
		}
	}
	if user.ID == "" {
		return msgs
	}
	// The message is remembered once it is stored (at once, unless the run
	// began while its start was written).
	defer engine.AfterStart(ctx, func() { r.a.retriever.Remember(context.WithoutCancel(ctx), r.t.Scope, user) })
	if user.RunID != r.t.Run.ID || user.Content == "" {
		return msgs
	}
	var collections []string
	if r.t.Agent != nil {
		collections = r.t.Agent.Knowledge
	}
	// Off the run's goroutine: the search goes past the 8 KiB a run's
	// stack is meant to keep (offRun, local.go).
	var d event.RetrievalData
	offRun(func() { d = r.a.retriever.Retrieve(ctx, r.t.Scope, r.t.Conversation.ID, user.Content, collections) })
	if len(d.Hits) == 0 {
		return msgs
	}
	r.h.Emit(ctx, event.Event{Step: "worker", Payload: d})
	r.retrieved = &d
	at := len(msgs)
	for j := len(msgs) - 1; j >= 0; j-- {
		if msgs[j].Role == llm.RoleUser {
			at = j
			break
		}
	}
	return slices.Insert(msgs, at, llm.Message{Role: llm.RoleSystem, Content: r.a.retriever.ContextMessage(d)})
}

// remember indexes a final answer for memory search.
func (r *runner) remember(ctx context.Context, m chat.Message) {
	if r.a.retriever != nil && m.ID != "" {
		r.a.retriever.Remember(context.WithoutCancel(ctx), r.t.Scope, m)
	}
}

// refPayload is the stand-in a message keeps for an output stored out of line.
type refPayload struct {
	Ref string `json:"_ref"`
}

// offload stores a tool output larger than the inline limit as a blob and
// returns the reference the message keeps in its place; on failure the
// output stays inline (a large row beats a lost result).
func (r *runner) offload(ctx context.Context, out json.RawMessage) json.RawMessage {
	if r.a.blobs == nil || r.a.inlineBytes <= 0 || len(out) <= r.a.inlineBytes {
		return out
	}
	b, err := r.a.blobs.PutBlob(ctx, r.t.Scope, chat.Blob{ConversationID: r.t.Conversation.ID, Data: out})
	if err != nil {
		r.log.Error("store large tool output", "err", err)
		return out
	}
	ref, _ := json.Marshal(refPayload{Ref: b.ID})
	return ref
}
