package agui

import (
	"encoding/json"

	"github.com/agentchat/agentchat/internal/dialect"
	"github.com/agentchat/agentchat/internal/uischema"
)

// The wire shapes. Standard fields come first, in @ag-ui/core's order;
// seed 004's fields sit in embedded pointers that are nil in Standard mode,
// so a Standard frame cannot carry them. Optional fields are omitempty: AG-UI
// clients reject null where a field is optional.

// scope is seed 004's threadId/runId on events whose standard shape lacks them.
type scope struct {
	ThreadID string `json:"threadId,omitempty"`
	RunID    string `json:"runId,omitempty"`
}

type runStarted struct {
	Type      string `json:"type"`
	Timestamp int64  `json:"timestamp,omitempty"`
	ThreadID  string `json:"threadId"`
	RunID     string `json:"runId"`
}

type runFinished struct {
	Type      string          `json:"type"`
	Timestamp int64           `json:"timestamp,omitempty"`
	ThreadID  string          `json:"threadId"`
	RunID     string          `json:"runId"`
	Result    json.RawMessage `json:"result,omitempty"`
	Outcome   *outcome        `json:"outcome,omitempty"`
	// Usage is the run's token usage per model (AG-UI 1.0).
	Usage []dialect.ModelUsage `json:"usage,omitempty"`
}

// outcome is RUN_FINISHED's outcome: an interrupt (a confirmation), a
// success that left frontend tool calls for the client to answer, or a
// cancel (AG-UI 1.0).
type outcome struct {
	Type               string      `json:"type"`
	Interrupts         []interrupt `json:"interrupts,omitempty"`
	PendingToolCallIDs []string    `json:"pendingToolCallIds,omitempty"`
}

type interrupt struct {
	ID             string          `json:"id"`
	Reason         string          `json:"reason"`
	Message        string          `json:"message,omitempty"`
	ToolCallID     string          `json:"toolCallId,omitempty"`
	ResponseSchema json.RawMessage `json:"responseSchema,omitempty"`
	ExpiresAt      string          `json:"expiresAt,omitempty"`
	Metadata       interruptMeta   `json:"metadata"`
}

// copilotInterrupt is the value of the on_interrupt CUSTOM event: the
// interrupt flattened, so a hook renders it without knowing AG-UI 1.0's
// outcome. A client resumes with forwardedProps.command {resume,
// interruptEvent: this value}.
type copilotInterrupt struct {
	ID         string          `json:"id"`
	Reason     string          `json:"reason"`
	Message    string          `json:"message,omitempty"`
	ToolCallID string          `json:"toolCallId,omitempty"`
	ToolName   string          `json:"toolName,omitempty"`
	Args       json.RawMessage `json:"args,omitempty"`
	ExpiresAt  string          `json:"expiresAt,omitempty"`
}

// interruptMeta lets a client render the approval card without looking the
// call up: what would run, with which arguments.
type interruptMeta struct {
	ToolName string          `json:"toolName,omitempty"`
	Args     json.RawMessage `json:"args,omitempty"`
}

type runError struct {
	Type      string `json:"type"`
	Timestamp int64  `json:"timestamp,omitempty"`
	*scope
	Message string `json:"message"`
	Code    string `json:"code,omitempty"`
	// Usage is what the run used before it failed (AG-UI 1.0).
	Usage []dialect.ModelUsage `json:"usage,omitempty"`
}

type step struct {
	Type      string `json:"type"`
	Timestamp int64  `json:"timestamp,omitempty"`
	*scope
	StepName string `json:"stepName"`
}

type textStart struct {
	Type      string `json:"type"`
	Timestamp int64  `json:"timestamp,omitempty"`
	*scope
	MessageID string `json:"messageId"`
	Role      string `json:"role"`
}

type textContent struct {
	Type      string `json:"type"`
	Timestamp int64  `json:"timestamp,omitempty"`
	*scope
	MessageID string `json:"messageId"`
	Delta     string `json:"delta"`
}

type textEnd struct {
	Type      string `json:"type"`
	Timestamp int64  `json:"timestamp,omitempty"`
	*scope
	MessageID string `json:"messageId"`
	*seedAnswer
}

// seedAnswer is seed 004's result on TEXT_MESSAGE_END.
type seedAnswer struct {
	Role             string          `json:"role"`
	Stage            string          `json:"stage,omitempty"`
	Status           string          `json:"status"`
	Answer           string          `json:"answer"`
	KeyPoints        []string        `json:"key_points"`
	ResultType       string          `json:"result_type"`
	SuggestedActions []string        `json:"suggested_actions"`
	Error            string          `json:"error,omitempty"`
	UISchema         uischema.Schema `json:"ui_schema"`
}

// reasoning serves all four REASONING_* events: role is set on
// REASONING_MESSAGE_START only, delta on REASONING_MESSAGE_CONTENT only.
type reasoning struct {
	Type      string `json:"type"`
	Timestamp int64  `json:"timestamp,omitempty"`
	*scope
	MessageID string `json:"messageId"`
	Role      string `json:"role,omitempty"`
	Delta     string `json:"delta,omitempty"`
}

type toolStart struct {
	Type      string `json:"type"`
	Timestamp int64  `json:"timestamp,omitempty"`
	*scope
	ToolCallID      string `json:"toolCallId"`
	ToolCallName    string `json:"toolCallName"`
	ParentMessageID string `json:"parentMessageId,omitempty"`
	*seedToolRef
}

type toolArgs struct {
	Type      string `json:"type"`
	Timestamp int64  `json:"timestamp,omitempty"`
	*scope
	ToolCallID string `json:"toolCallId"`
	Delta      string `json:"delta"`
	*seedToolRef
	// Args is seed 004's arguments object, set on the fragment that completes them.
	Args json.RawMessage `json:"args,omitempty"`
}

type toolEnd struct {
	Type      string `json:"type"`
	Timestamp int64  `json:"timestamp,omitempty"`
	*scope
	ToolCallID string `json:"toolCallId"`
	*seedToolRef
}

// seedToolRef is seed 004's messageId, toolCallName and stage on TOOL_CALL_*.
type seedToolRef struct {
	MessageID    string `json:"messageId,omitempty"`
	ToolCallName string `json:"toolCallName,omitempty"`
	Stage        string `json:"stage,omitempty"`
}

type toolResult struct {
	Type      string `json:"type"`
	Timestamp int64  `json:"timestamp,omitempty"`
	*scope
	MessageID  string `json:"messageId"`
	ToolCallID string `json:"toolCallId"`
	Content    string `json:"content"`
	Role       string `json:"role"`
	*seedResult
}

// seedResult is seed 004's TOOL_CALL_RESULT body.
type seedResult struct {
	Stage        string          `json:"stage,omitempty"`
	ToolName     string          `json:"tool_name"`
	ToolCallID   string          `json:"tool_call_id"`
	ToolCallArgs json.RawMessage `json:"tool_call_args"`
	Status       string          `json:"status"`
	Result       string          `json:"result"`
	Error        string          `json:"error,omitempty"`
}

type stateDelta struct {
	Type      string `json:"type"`
	Timestamp int64  `json:"timestamp,omitempty"`
	*scope
	Delta json.RawMessage `json:"delta"`
}

type stateSnapshot struct {
	Type      string `json:"type"`
	Timestamp int64  `json:"timestamp,omitempty"`
	*scope
	Snapshot json.RawMessage `json:"snapshot"`
}

type custom struct {
	Type      string `json:"type"`
	Timestamp int64  `json:"timestamp,omitempty"`
	*scope
	Name  string          `json:"name"`
	Value json.RawMessage `json:"value"`
}
