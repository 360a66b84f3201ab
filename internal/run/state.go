package run

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/event"
)

// Shared state (AG-UI RunAgentInput.state): one JSON document per
// conversation, kept by the store. A request that carries a state replaces
// the stored one as its run starts (the client's copy is the newer); the
// run begins with a state.snapshot event when the thread has a state, the
// engine sees it (engine.Options.State), and the agent changes it through
// UpdateState, each change a context.patch event (AG-UI STATE_DELTA) after
// it is stored. One run at a time changes a thread's state: the thread has
// one active run.

// ThreadState is the shared state of one of sc's conversations; nil when
// it has none.
func (s *Service) ThreadState(ctx context.Context, sc chat.Scope, thread string) (json.RawMessage, error) {
	return s.st.ThreadState(ctx, sc, thread)
}

// UpdateState applies an RFC 6902 patch to the thread's shared state (the
// engine's Host): the patched state is stored, then the patch announced.
func (x *execution) UpdateState(ctx context.Context, patch json.RawMessage) (json.RawMessage, error) {
	if !x.started() {
		return nil, errStartFailed
	}
	x.stateMu.Lock()
	defer x.stateMu.Unlock()
	sctx := context.WithoutCancel(ctx)
	cur, err := x.s.st.ThreadState(sctx, x.sc, x.run.ConversationID)
	if err != nil {
		return nil, fmt.Errorf("read state: %w", err)
	}
	next, canonical, err := chat.PatchState(cur, patch)
	if err != nil {
		return nil, err
	}
	if err := x.s.st.SetThreadState(sctx, x.sc, x.run.ConversationID, next); err != nil {
		return nil, fmt.Errorf("store state: %w", err)
	}
	x.Emit(ctx, event.Event{Step: "worker", Payload: event.ContextPatchData{Patch: canonical}})
	return next, nil
}
