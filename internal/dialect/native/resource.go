package native

// The native API's resources (seed 000): the JSON shape of each object the
// REST routes return. Times are RFC 3339 UTC with milliseconds; optional
// times are omitted while unset.

import (
	"encoding/json"
	"time"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/dialect"
	"github.com/agentchat/agentchat/internal/event"
)

// Conversation is a conversation (CHAT-010).
type Conversation struct {
	ID    string `json:"id"`
	Title string `json:"title,omitempty"`
	// AgentID is the agent the conversation is bound to (absent for one
	// made before agents).
	AgentID string `json:"agentId,omitempty"`
	// ActiveLeafID is the last message of the active branch (absent while
	// the conversation has no message).
	ActiveLeafID string `json:"activeLeafId,omitempty"`
	// ActiveRunID is the run going on in the conversation (queued,
	// running or awaiting input), so a client that opens it (a reload, a
	// second tab) can attach to that run's stream. Only the single
	// conversation's resource says it; absent when none goes on.
	ActiveRunID string `json:"activeRunId,omitempty"`
	CreatedAt   string `json:"createdAt"`
	UpdatedAt   string `json:"updatedAt"`
}

// ConversationOf gives c its API shape.
func ConversationOf(c chat.Conversation) Conversation {
	return Conversation{ID: c.ID, Title: c.Title, AgentID: c.AgentID, ActiveLeafID: c.ActiveLeaf, CreatedAt: dialect.Millis(c.CreatedAt), UpdatedAt: dialect.Millis(c.UpdatedAt)}
}

// Message is a stored message (CHAT-020).
type Message struct {
	ID             string          `json:"id"`
	ConversationID string          `json:"conversationId"`
	Role           string          `json:"role"`
	Content        string          `json:"content"`
	Parts          json.RawMessage `json:"parts,omitempty"`
	Metadata       json.RawMessage `json:"metadata,omitempty"`
	RunID          string          `json:"runId,omitempty"`
	// ParentID is the message this one follows in the conversation's tree,
	// null for a first message.
	ParentID *string `json:"parentId"`
	// SiblingIDs are the messages that follow the same parent, this one
	// included, in creation order (a UI draws "< 2 / 3 >" from them).
	// Absent where the list does not show the tree (the archive).
	SiblingIDs []string `json:"siblingIds,omitempty"`
	// Feedback is the owner's rating of the message, when given.
	Feedback  *Feedback `json:"feedback,omitempty"`
	CreatedAt string    `json:"createdAt"`
}

// Feedback is a person's rating of a message.
type Feedback struct {
	MessageID      string   `json:"messageId"`
	ConversationID string   `json:"conversationId"`
	RunID          string   `json:"runId,omitempty"`
	AgentID        string   `json:"agentId,omitempty"`
	UserID         string   `json:"userId,omitempty"`
	Rating         string   `json:"rating"`
	Comment        string   `json:"comment,omitempty"`
	Tags           []string `json:"tags,omitempty"`
	CreatedAt      string   `json:"createdAt"`
	UpdatedAt      string   `json:"updatedAt"`
}

// MessageOf gives m its API shape.
func MessageOf(m chat.Message) Message {
	var parent *string
	if m.ParentID != "" {
		parent = &m.ParentID
	}
	return Message{ID: m.ID, ConversationID: m.ConversationID, Role: m.Role, Content: m.Content, Parts: m.Parts,
		Metadata: m.Metadata, RunID: m.RunID, ParentID: parent, CreatedAt: dialect.Millis(m.CreatedAt)}
}

// Run is a run.
type Run struct {
	ID             string `json:"id"`
	ConversationID string `json:"conversationId"`
	TurnID         string `json:"turnId"`
	TraceID        string `json:"traceId"` // chat.Run.TraceID
	Status         string `json:"status"`
	Input          string `json:"input"`
	Engine         string `json:"engine,omitempty"`
	Model          string `json:"model,omitempty"`
	// AgentID and AgentVersion name the agent version the run executed.
	AgentID      string           `json:"agentId,omitempty"`
	AgentVersion *int             `json:"agentVersion,omitempty"`
	Error        *event.ErrorInfo `json:"error,omitempty"`
	Usage        event.Usage      `json:"usage"`
	CreatedAt    string           `json:"createdAt"`
	StartedAt    string           `json:"startedAt"`
	EndedAt      string           `json:"endedAt,omitempty"`
}

// RunOf gives r its API shape.
func RunOf(r chat.Run) Run {
	return Run{ID: r.ID, ConversationID: r.ConversationID, TurnID: r.TurnID, TraceID: r.TraceID, Status: r.Status, Input: r.Input, Engine: r.Engine,
		Model: r.Model, AgentID: r.AgentID, AgentVersion: agentVersion(r.AgentID, r.AgentVersion), Error: r.Error, Usage: r.Usage,
		CreatedAt: dialect.Millis(r.CreatedAt), StartedAt: dialect.Millis(r.StartedAt), EndedAt: millisOrEmpty(r.EndedAt)}
}

// Confirmation is a tool call waiting for, or decided by, a person.
type Confirmation struct {
	ID             string          `json:"id"`
	RunID          string          `json:"runId"`
	ConversationID string          `json:"conversationId"`
	ToolCallID     string          `json:"toolCallId"`
	ToolName       string          `json:"toolName"`
	Args           json.RawMessage `json:"args"`
	Status         string          `json:"status"`
	DecidedArgs    json.RawMessage `json:"decidedArgs,omitempty"`
	Reason         string          `json:"reason,omitempty"`
	CreatedAt      string          `json:"createdAt"`
	ExpiresAt      string          `json:"expiresAt"`
	DecidedAt      string          `json:"decidedAt,omitempty"`
}

// ConfirmationOf gives c its API shape.
func ConfirmationOf(c chat.Confirmation) Confirmation {
	return Confirmation{ID: c.ID, RunID: c.RunID, ConversationID: c.ConversationID, ToolCallID: c.ToolCallID, ToolName: c.ToolName,
		Args: c.Args, Status: c.Status, DecidedArgs: c.DecidedArgs, Reason: c.Reason, CreatedAt: dialect.Millis(c.CreatedAt),
		ExpiresAt: dialect.Millis(c.ExpiresAt), DecidedAt: millisOrEmpty(c.DecidedAt)}
}

// Timeline is a run's timeline (CHAT-080): every native event it emitted,
// with the seq and time of the canonical event behind it.
type Timeline struct {
	RunID          string `json:"runId"`
	ConversationID string `json:"conversationId"`
	// AgentID and AgentVersion name the agent version the run executed.
	AgentID      string          `json:"agentId,omitempty"`
	AgentVersion *int            `json:"agentVersion,omitempty"`
	Status       string          `json:"status"`
	StartedAt    string          `json:"startedAt"`
	EndedAt      string          `json:"endedAt,omitempty"`
	Events       []TimelineEvent `json:"events"`
}

// TimelineEvent is one entry of a timeline.
type TimelineEvent struct {
	Seq     int64  `json:"seq"`
	Event   string `json:"event"`
	At      string `json:"at"`
	Payload any    `json:"payload"`
}

// TimelineOf is run's timeline from its events in seq order.
func TimelineOf(run chat.Run, evs []event.Event) Timeline {
	out := make([]TimelineEvent, 0, len(evs))
	for _, ev := range evs {
		for _, n := range Map(ev) {
			out = append(out, TimelineEvent{Seq: ev.Seq, Event: n.Name, At: dialect.Millis(ev.Time), Payload: n.Data})
		}
	}
	return Timeline{RunID: run.ID, ConversationID: run.ConversationID, AgentID: run.AgentID, AgentVersion: agentVersion(run.AgentID, run.AgentVersion),
		Status: run.Status, StartedAt: dialect.Millis(run.StartedAt), EndedAt: millisOrEmpty(run.EndedAt), Events: out}
}

func millisOrEmpty(t *time.Time) string {
	if t == nil {
		return ""
	}
	return dialect.Millis(*t)
}
