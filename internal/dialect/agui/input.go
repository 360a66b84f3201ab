package agui

import (
	"encoding/json"

	"github.com/agentchat/agentchat/internal/dialect"
)

// RunAgentInput is AG-UI's RunAgentInput, the body of a run request. Unknown fields are ignored, as
// AG-UI peers may send newer ones.
type RunAgentInput struct {
	ThreadID       string          `json:"threadId"`
	RunID          string          `json:"runId"`
	ParentRunID    string          `json:"parentRunId"`
	State          json.RawMessage `json:"state"`
	Messages       []InputMessage  `json:"messages"`
	Tools          []InputTool     `json:"tools"`
	Context        []InputContext  `json:"context"`
	ForwardedProps json.RawMessage `json:"forwardedProps"`
	Resume         []ResumeEntry   `json:"resume"`
}

// InputMessage is a message of the input.
type InputMessage struct {
	ID         string          `json:"id"`
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"toolCallId"`
	Error      string          `json:"error"`
}

// InputTool is a frontend tool the client offers.
type InputTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// InputContext is a piece of context for the model.
type InputContext struct {
	Description string `json:"description"`
	Value       string `json:"value"`
}

// ResumeEntry answers one interrupt: status resolved with payload
// {approved, args?}, or cancelled (a rejection).
type ResumeEntry struct {
	InterruptID string          `json:"interruptId"`
	Status      string          `json:"status"`
	Payload     json.RawMessage `json:"payload"`
}

// Limits of one input.
const (
	// MaxIDLength bounds the threadId and runId a client chooses.
	MaxIDLength = 128
	// MaxResume bounds the interrupts one input answers: each is looked up.
	MaxResume = 64
)

// DecodeRunAgentInput decodes a run request: one JSON object whose unknown
// fields are ignored (AG-UI peers may send newer ones), whose strings are
// text (dialect.DecodeJSON), and whose threadId and runId, when given, are
// ids that can be stored and echoed safely.
func DecodeRunAgentInput(body []byte) (RunAgentInput, error) {
	var in RunAgentInput
	if err := dialect.DecodeJSON(body, &in, dialect.Lenient, false); err != nil {
		return RunAgentInput{}, err
	}
	if len(in.Resume) > MaxResume {
		return RunAgentInput{}, dialect.Unusable("invalid_resume", "one input answers at most %d interrupts", MaxResume)
	}
	for _, f := range []struct{ name, id string }{{"threadId", in.ThreadID}, {"runId", in.RunID}} {
		if f.id != "" && !ValidID(f.id) {
			return RunAgentInput{}, dialect.BadRequest("invalid_field", "field %q must be at most %d letters, digits, '-', '_', '.' or ':'", f.name, MaxIDLength)
		}
	}
	return in, nil
}

// ValidID reports whether a client may name an object with id.
func ValidID(id string) bool {
	if id == "" || len(id) > MaxIDLength {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':') {
			return false
		}
	}
	return true
}
