package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/engine"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/llm"
	"github.com/agentchat/agentchat/internal/tool"
)

// Shared state (engine.Options.State, AG-UI): a run whose thread has a
// state shows it to the model beside the system prompt and offers
// engine.UpdateStateTool, through which the model changes it with a JSON
// Patch; the host validates, stores and announces each change. A registry
// tool of the same name wins, as for frontend tools.

// hasStateTool reports whether the run offers update_state.
func (r *runner) hasStateTool() bool {
	if r.t.Options.State == nil {
		return false
	}
	_, backend := r.spec(engine.UpdateStateTool)
	return !backend
}

func (r *runner) stateSpec() llm.ToolSpec {
	return llm.ToolSpec{Name: engine.UpdateStateTool, Parameters: engine.UpdateStateParameters,
		Description: "Change the shared state of this conversation, which the application shows and keeps, with a JSON Patch. Use it when asked to change the state."}
}

// statePrompt shows the state to the model.
func (r *runner) statePrompt() string {
	if r.t.Options.State == nil {
		return ""
	}
	return "The shared state of this conversation (JSON), which the application shows; change it only with the " +
		engine.UpdateStateTool + " tool:\n" + string(r.t.Options.State)
}

// updateState runs one update_state call: it reads the patch from args (a
// JSON array, or its JSON text), has the host apply it, and keeps the new
// state for what the run shows next (a continuation's context included).
func (r *runner) updateState(ctx context.Context, it int, callID string, args json.RawMessage) tool.Result {
	var in struct {
		Patch json.RawMessage `json:"patch"`
	}
	if err := json.Unmarshal(args, &in); err != nil || len(in.Patch) == 0 {
		return tool.Result{Status: tool.StatusFailure, Error: `the arguments must be {"patch": <a JSON Patch>}`}
	}
	patch := in.Patch
	var text string
	if json.Unmarshal(patch, &text) == nil {
		patch = json.RawMessage(strings.TrimSpace(text))
	}
	r.h.Emit(ctx, event.Event{Iteration: it, Step: "worker", Payload: event.ToolRunningData{ToolCallID: callID, Name: engine.UpdateStateTool, Args: args}})
	next, err := r.h.UpdateState(ctx, patch)
	if err != nil {
		msg := "the state could not be stored"
		if errors.Is(err, chat.ErrInvalidPatch) {
			msg = err.Error()
		}
		return tool.Result{Status: tool.StatusFailure, Error: msg}
	}
	r.t.Options.State = next
	return tool.Result{Status: tool.StatusSuccess, Output: next, Content: fmt.Sprintf("The shared state is now: %s", next)}
}
