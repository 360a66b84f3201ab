package agui

// Seed 001 §4's history snapshot: one day of a thread's messages, the
// latest day with messages before `before` (the latest day at all without
// it), oldest first, days cut in a configured time zone.
//
// A client loads the snapshot, then follows the thread's events stream from
// its lastEventId and merges by runId + messageId (or toolCallId): every
// message's runId is the AG-UI runId its events carry (IndexRuns), and
// lastEventId is taken before the messages are read and never inside a run
// still going (run.Service.History), so the stream replays that run whole.
//
// Assistant answers carry the structured result and the ui_schema of the
// same compiler the events stream uses (Result, uischema.Compile); tool
// messages keep metadata.tool_agent_output as the full output and content as
// the light summary (seed 001 §5.2).

import (
	"cmp"
	"encoding/json"
	"strconv"
	"time"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/dialect"
	"github.com/agentchat/agentchat/internal/event"
)

// DayLayout is how a history day is written (and `before` read).
const DayLayout = "2006-01-02"

// HistoryDay is one day of a thread's messages.
type HistoryDay struct {
	Day      string // "" when the thread has no messages before `before`
	Messages []chat.Message
	HasMore  bool // earlier days have messages
}

// PickDay cuts the day a history request asks for out of a thread's
// messages (oldest first): the latest day before `before` ("" for none),
// in loc.
func PickDay(msgs []chat.Message, before string, loc *time.Location) HistoryDay {
	dayOf := func(m chat.Message) string { return m.CreatedAt.In(loc).Format(DayLayout) }
	var out HistoryDay
	for _, m := range msgs {
		if d := dayOf(m); (before == "" || d < before) && d > out.Day {
			out.Day = d
		}
	}
	for _, m := range msgs {
		switch d := dayOf(m); {
		case d == out.Day:
			out.Messages = append(out.Messages, m)
		case d < out.Day:
			out.HasMore = true
		}
	}
	return out
}

// HistorySnapshot is seed 001's HistorySnapshotResponse.
type HistorySnapshot struct {
	Scope    string           `json:"scope"` // always "history_day"
	ThreadID string           `json:"threadId"`
	Day      string           `json:"day"` // "" when the thread has no messages before `before`
	HasMore  bool             `json:"hasMore"`
	Messages []HistoryMessage `json:"messages"`
	// LastEventID is where to follow the events stream from (?after= or Last-Event-ID).
	LastEventID string `json:"lastEventId"`
	// TimeZone names the zone days are cut in.
	TimeZone string `json:"timeZone"`
}

// HistoryMessage is one message of a history snapshot.
type HistoryMessage struct {
	ID        string `json:"id"`
	MessageID string `json:"messageId"` // = id; the key the events stream uses
	Role      string `json:"role"`
	Content   string `json:"content"`
	// Parts is a user message's text and images.
	Parts json.RawMessage `json:"parts,omitempty"`
	// RunID is the AG-UI runId of the events that carried the message;
	// TaskID the run (the 202's taskId).
	RunID     string     `json:"runId,omitempty"`
	TaskID    string     `json:"taskId,omitempty"`
	CreatedAt string     `json:"createdAt"`
	ToolCalls []ToolCall `json:"toolCalls,omitempty"`
	// Tool messages: the call answered, and the seed's record in metadata
	// (tool_name, tool_call_id, tool_call_args, status, result, error, tool_agent_output).
	ToolCallID string          `json:"toolCallId,omitempty"`
	Metadata   json.RawMessage `json:"metadata,omitempty"`
	// An answer's structured result, as seed 004's TEXT_MESSAGE_END carries it.
	*Answer
}

// NewHistory is the snapshot of day for the thread the client calls
// threadID: lastEventID is where its events stream continues, evs the
// events of the day's runs in seq order (a run whose events are gone is
// left out; its messages fall back to the run's id).
func NewHistory(threadID string, day HistoryDay, lastEventID int64, loc *time.Location, evs []event.Event) HistorySnapshot {
	out := HistorySnapshot{Scope: "history_day", ThreadID: threadID, Day: day.Day, HasMore: day.HasMore, Messages: []HistoryMessage{},
		LastEventID: strconv.FormatInt(lastEventID, 10), TimeZone: loc.String()}
	ix := IndexRuns(evs)
	for _, m := range day.Messages {
		out.Messages = append(out.Messages, historyMessage(m, ix))
	}
	return out
}

func historyMessage(m chat.Message, ix RunIndex) HistoryMessage {
	v := HistoryMessage{ID: m.ID, MessageID: m.ID, Role: m.Role, Content: m.Content, TaskID: m.RunID,
		CreatedAt: dialect.Millis(m.CreatedAt), RunID: cmp.Or(ix.Runs[m.RunID], m.RunID)}
	if id, ok := ix.Messages[m.ID]; ok {
		v.RunID = id
	}
	switch m.Role {
	case chat.RoleUser:
		v.Parts = m.Parts
	case chat.RoleAssistant:
		meta := chat.ParseAssistantMeta(m.Metadata)
		v.ToolCalls = toolCallsOf(meta.ToolCalls)
		if len(meta.ToolCalls) > 0 {
			if _, streamed := ix.Messages[m.ID]; !streamed {
				if id, ok := ix.ToolCalls[meta.ToolCalls[0].ID]; ok {
					v.RunID = id
				}
			}
			break // a step towards the answer, not a result
		}
		a := publicAnswer(Result(event.MessageCompletedData{MessageID: m.ID, Role: m.Role, Content: m.Content, Partial: meta.Partial, Answer: meta.Answer}))
		v.Answer = &a
	case chat.RoleTool:
		v.ToolCallID = m.ToolCallID
		v.Metadata = toolRecord(m)
	}
	return v
}

// toolRecord is a tool message's seed record: tool_agent_output, the full
// output, and result are the content itself when the tool gave nothing else.
func toolRecord(m chat.Message) json.RawMessage {
	meta := chat.ParseToolResultMeta(m.Metadata)
	if out := meta.ToolAgentOutput; len(out) == 0 || string(out) == "null" {
		meta.ToolAgentOutput, _ = json.Marshal(m.Content)
	}
	if meta.Result == "" {
		meta.Result = m.Content
	}
	return meta.Marshal()
}
