package chat

import "encoding/json"

// What a client gives a run besides its message: the wire formats decode
// these from their requests, the run service carries them to the engine.

// FrontendTool is a tool the client offers and runs itself (AG-UI).
type FrontendTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"` // a JSON Schema object
}

// ContextItem is one described piece of ambient context (AG-UI
// RunAgentInput.context); engines show it to the model beside the system prompt.
type ContextItem struct {
	Description string `json:"description"`
	Value       string `json:"value"`
}

// ToolAnswer is a client's result for one of its frontend tool calls.
type ToolAnswer struct {
	ToolCallID string
	// Content is the tool's output as text (JSON text when structured).
	Content string
	// Error, when set, says the tool failed and why.
	Error string
}

// MultitaskStrategy is what a new input does when its conversation has an
// active run (double-texting).
type MultitaskStrategy string

// The strategies.
const (
	// MultitaskReject refuses the input (409 conversation_busy): the default.
	MultitaskReject MultitaskStrategy = "reject"
	// MultitaskEnqueue accepts the input at once; its run starts when the
	// runs before it end, in order.
	MultitaskEnqueue MultitaskStrategy = "enqueue"
	// MultitaskInterrupt cancels the active run, keeping its partial answer
	// (marked interrupted), and starts the input's run after it.
	MultitaskInterrupt MultitaskStrategy = "interrupt"
	// MultitaskRollback cancels the active run and starts the input's run
	// where the active one began: the cancelled run's messages leave the
	// active branch and stay in the tree.
	MultitaskRollback MultitaskStrategy = "rollback"
)

// ParseMultitaskStrategy reads a strategy's name; "" is none (the agent's
// default applies).
func ParseMultitaskStrategy(s string) (MultitaskStrategy, bool) {
	switch m := MultitaskStrategy(s); m {
	case "", MultitaskReject, MultitaskEnqueue, MultitaskInterrupt, MultitaskRollback:
		return m, true
	}
	return "", false
}
