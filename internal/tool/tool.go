package tool

import (
	"context"
	"encoding/json"
	"time"
)

// Confirm says whether a call needs a person's approval before it runs.
type Confirm string

// Confirmation policies.
const (
	ConfirmNever  Confirm = "never"  // read-only: runs freely
	ConfirmAlways Confirm = "always" // writes or sends: a person approves each call
)

// Spec describes a tool to the model and to the run service.
type Spec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"` // JSON Schema of the arguments object
	Confirm     Confirm         `json:"confirm"`
	// Timeout bounds one call; zero means the registry default.
	Timeout time.Duration `json:"-"`
	// Source is "builtin" or "mcp:<server>".
	Source string `json:"source"`
}

// Status is the outcome of a call, in seed 002/004 terms.
type Status string

// Call outcomes.
const (
	StatusSuccess Status = "success"
	StatusFailure Status = "failure"
	StatusPartial Status = "partial"
)

// Result is what a call produced. Output is the structured result (any JSON);
// Content is the short text the model and the message list see.
type Result struct {
	Status  Status          `json:"status"`
	Output  json.RawMessage `json:"output,omitempty"`
	Content string          `json:"content"`
	Error   string          `json:"error,omitempty"`
}

// Tool is something the agent can call.
type Tool interface {
	Spec() Spec
	// Call runs the tool with arguments already validated against Spec().Parameters.
	// An error is a failed call (reported to the model), never a crash.
	Call(ctx context.Context, args json.RawMessage) (Result, error)
}
