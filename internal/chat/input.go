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
