package agui

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/agentchat/agentchat/internal/dialect"
)

// Message is one message of a MESSAGES_SNAPSHOT, in AG-UI's shape. Content
// is required for every role but assistant, where an empty content is
// omitted (an assistant turn may be only tool calls); ToolCallID is required
// for role "tool".
type Message struct {
	ID         string     `json:"id"`
	Role       string     `json:"role"` // developer, system, assistant, user, tool, reasoning
	Content    string     `json:"content"`
	Name       string     `json:"name,omitempty"`
	ToolCalls  []ToolCall `json:"toolCalls,omitempty"`
	ToolCallID string     `json:"toolCallId,omitempty"`
	Error      string     `json:"error,omitempty"`
}

// MarshalJSON omits an assistant's empty content rather than sending "".
func (m Message) MarshalJSON() ([]byte, error) {
	type plain Message
	if m.Role == "assistant" && m.Content == "" {
		return json.Marshal(struct {
			plain
			Content string `json:"content,omitempty"`
		}{plain: plain(m)})
	}
	return json.Marshal(plain(m))
}

// ToolCall is a call an assistant message made.
type ToolCall struct {
	ID       string
	Function FunctionCall
}

// MarshalJSON writes the call with AG-UI's fixed type "function".
func (c ToolCall) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		ID       string       `json:"id"`
		Type     string       `json:"type"`
		Function FunctionCall `json:"function"`
	}{c.ID, "function", c.Function})
}

// FunctionCall names the tool and carries its arguments as JSON text.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// AppendMessagesSnapshot appends a MESSAGES_SNAPSHOT frame: the whole
// conversation, for a client that asks to resynchronise. id is the frame's
// SSE id ("" for none); at stamps it.
func AppendMessagesSnapshot(dst []byte, id string, at time.Time, msgs []Message) []byte {
	if msgs == nil {
		msgs = []Message{}
	}
	b, err := json.Marshal(struct {
		Type      string    `json:"type"`
		Timestamp int64     `json:"timestamp,omitempty"`
		Messages  []Message `json:"messages"`
	}{MessagesSnapshot, millis(at), msgs})
	if err != nil {
		return dst
	}
	return dialect.AppendFrame(dst, dialect.Frame{ID: id, Event: MessagesSnapshot, Data: b})
}

// AppendStateSnapshot appends a STATE_SNAPSHOT frame replacing the client's
// shared state with state (any JSON; empty, invalid or null means {}).
func AppendStateSnapshot(dst []byte, id string, at time.Time, state json.RawMessage) []byte {
	state = bytes.TrimSpace(state)
	if len(state) == 0 || string(state) == "null" || !json.Valid(state) {
		state = json.RawMessage(`{}`)
	}
	b, err := json.Marshal(struct {
		Type      string          `json:"type"`
		Timestamp int64           `json:"timestamp,omitempty"`
		Snapshot  json.RawMessage `json:"snapshot"`
	}{StateSnapshot, millis(at), state})
	if err != nil {
		return dst
	}
	return dialect.AppendFrame(dst, dialect.Frame{ID: id, Event: StateSnapshot, Data: b})
}

func millis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}
