package chat

import (
	"encoding/json"
	"time"
)

// Message roles.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
	RoleSystem    = "system"
)

// Message is one stored message of a conversation.
type Message struct {
	ID             string
	ConversationID string
	// ParentID is the message this one follows in the conversation's tree
	// ("" for a first message). Stores set it when they append.
	ParentID string
	Role     string
	Content  string
	// Parts holds multi-part content (text and image URLs) as JSON, nil when plain text.
	Parts json.RawMessage
	// Metadata is structured data about the message (tool calls, tool results, partial marks).
	Metadata json.RawMessage
	RunID    string
	// ToolName and ToolCallID index tool messages (seed 002 persistence).
	ToolName   string
	ToolCallID string
	CreatedAt  time.Time
}

// Blob is a large payload stored out of line (seed 002 `_ref`), owned by a
// conversation and deleted with it.
type Blob struct {
	ID             string
	ConversationID string
	Data           json.RawMessage
	CreatedAt      time.Time
}
