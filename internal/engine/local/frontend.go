package local

import (
	"context"

	"github.com/agentchat/agentchat/internal/engine"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/llm"
)

// Frontend tools (engine.Options.FrontendTools, AG-UI): tools the client
// offers and runs itself. The model sees them beside the registry's tools; a
// call to one is announced (tool.call.ready with Frontend set) but not
// executed here. The run ends with the call pending (Outcome.Pending), and
// the client's tool message, stored by the next run's start, answers it: the
// model's context is rebuilt from the store, so the next run continues
// exactly where this one stopped. A registry tool of the same name wins.

// frontendCalls separates the calls the client must answer, announcing each,
// from the calls this process runs.
func (r *runner) frontendCalls(ctx context.Context, it int, calls []llm.ToolCall) (backend []llm.ToolCall, frontend []string) {
	if len(r.t.Options.FrontendTools) == 0 {
		return calls, nil
	}
	for _, c := range calls {
		if !r.isFrontend(c.Name) {
			backend = append(backend, c)
			continue
		}
		r.h.Emit(ctx, event.Event{Iteration: it, Step: "worker", Payload: event.ToolCallReadyData{
			ToolCallID: c.ID, Name: c.Name, Args: normaliseArgs(c.Arguments), Frontend: true,
		}})
		frontend = append(frontend, c.ID)
	}
	return backend, frontend
}

func (r *runner) isFrontend(name string) bool {
	if _, backend := r.spec(name); backend || name == engine.UpdateStateTool && r.hasStateTool() {
		return false
	}
	for _, f := range r.t.Options.FrontendTools {
		if f.Name == name {
			return true
		}
	}
	return false
}
