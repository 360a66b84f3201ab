// Package native is agentchat's own stream (seed 000): frames
// `event: <name>`, `id: <id>`, `data: {"event":"<name>","id":"<id>","data":{…}}`,
// with `ping` events as keep-alive. The id is the event's seq, or "<seq>.<k>"
// for a frame that more frames of the same event follow (dialect.ID): a tool
// awaiting input is tool.state "S.1", then tool.awaiting_input "S".
//
// What it drops: step and iteration boundaries, tool-call argument fragments
// (the complete input arrives with tool.state pending), plan and check events
// (chain only) and run.resumed (tool.state running says the same).
package native

import (
	"encoding/json"
	"time"

	"github.com/agentchat/agentchat/internal/dialect"
	"github.com/agentchat/agentchat/internal/errcode"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/jsonstr"
)

// Native event names (seed 000 CHAT-030, CHAT-050, CHAT-070).
const (
	ConversationCreated = "conversation.created"
	AgentStart          = "agent.start"
	AgentDelta          = "agent.delta"
	AgentReasoning      = "agent.reasoning"
	AgentMessage        = "agent.message"
	ToolState           = "tool.state"
	ToolAwaitingInput   = "tool.awaiting_input"
	Retrieval           = "retrieval"
	ContextPatch        = "context.patch"
	StateSnapshot       = "state.snapshot"
	AgentEnd            = "agent.end"
	Error               = "error"
	Ping                = "ping"
)

// tool.state statuses.
const (
	StatePending       = "pending"
	StateRunning       = "running"
	StateAwaitingInput = "awaiting_input"
	StateSucceeded     = "succeeded"
	StateFailed        = "failed"
)

// Named is one native event: a name and its data object.
type Named struct {
	Name string
	Data any
}

// Map translates a canonical event into the native events it becomes (zero,
// one or two). The timeline API and the SSE encoder share it, so a replayed
// timeline equals what was streamed.
func Map(ev event.Event) []Named {
	switch p := ev.Payload.(type) {
	case event.ConversationCreatedData:
		return one(ConversationCreated, p)
	case event.RunStartedData:
		return one(AgentStart, startData{RunID: ev.Run, ConversationID: p.ConversationID, TurnID: ev.Turn, UserMessageID: p.UserMessageID, Engine: p.Engine,
			AgentID: p.AgentID, AgentVersion: agentVersion(p.AgentID, p.AgentVersion)})
	case event.TextDeltaData:
		return one(AgentDelta, deltaData{RunID: ev.Run, MessageID: p.MessageID, Delta: p.Delta})
	case event.ReasoningDeltaData:
		return one(AgentReasoning, deltaData{RunID: ev.Run, MessageID: p.MessageID, Delta: p.Delta})
	case event.MessageCompletedData:
		return one(AgentMessage, messageData{RunID: ev.Run, MessageID: p.MessageID, Role: p.Role, Content: p.Content, Partial: p.Partial})
	case event.ToolCallReadyData:
		return one(ToolState, toolState{RunID: ev.Run, ToolCallID: p.ToolCallID, Name: p.Name, Status: StatePending, Input: p.Args})
	case event.ToolAwaitingData:
		st := toolState{RunID: ev.Run, ToolCallID: p.ToolCallID, Name: p.Name, Status: StateAwaitingInput, Input: p.Args,
			ConfirmationID: p.ConfirmationID, ExpiresAt: dialect.Millis(p.ExpiresAt), Message: p.Message}
		return []Named{{ToolState, st}, {ToolAwaitingInput, st}}
	case event.ToolRunningData:
		return one(ToolState, toolState{RunID: ev.Run, ToolCallID: p.ToolCallID, Name: p.Name, Status: StateRunning, Input: p.Args})
	case event.ToolResultData:
		st := toolState{RunID: ev.Run, ToolCallID: p.ToolCallID, Name: p.Name, Status: StateSucceeded, Input: p.Args,
			Output: p.Output, Content: p.Content, Result: p.Status, Denied: p.Denied}
		if p.Status == event.ToolFailure {
			st.Status, st.Error = StateFailed, p.Error
		}
		if len(st.Output) == 0 && st.Status == StateSucceeded {
			st.Output, _ = json.Marshal(p.Content)
		}
		return one(ToolState, st)
	case event.RetrievalData:
		return one(Retrieval, retrievalData{RunID: ev.Run, Query: p.Query, Hits: p.Hits})
	case event.ContextPatchData:
		return one(ContextPatch, patchData{RunID: ev.Run, Patch: p.Patch})
	case event.StateSnapshotData:
		if !json.Valid(p.State) {
			return nil
		}
		return one(StateSnapshot, stateData{RunID: ev.Run, State: p.State})
	case event.ErrorData:
		return one(Error, errorData{RunID: ev.Run, Code: p.Code, Message: p.Message})
	case event.RunFinishedData:
		return one(AgentEnd, endData{RunID: ev.Run, ConversationID: ev.Thread, Status: p.Status, Error: p.Error, Usage: p.Usage})
	}
	return nil
}

func one(name string, data any) []Named { return []Named{{name, data}} }

type startData struct {
	RunID          string `json:"runId"`
	ConversationID string `json:"conversationId"`
	TurnID         string `json:"turnId"`
	UserMessageID  string `json:"userMessageId,omitempty"`
	Engine         string `json:"engine,omitempty"`
	// AgentID and AgentVersion name the agent version that answers; the
	// version is shown whenever the agent is (0 is the built-in default's).
	AgentID      string `json:"agentId,omitempty"`
	AgentVersion *int   `json:"agentVersion,omitempty"`
}

// agentVersion is a run's agent version as the API shows it: present
// whenever the run names an agent.
func agentVersion(id string, v int) *int {
	if id == "" {
		return nil
	}
	return &v
}

type deltaData struct {
	RunID     string `json:"runId"`
	MessageID string `json:"messageId"`
	Delta     string `json:"delta"`
}

type messageData struct {
	RunID     string `json:"runId"`
	MessageID string `json:"messageId"`
	Role      string `json:"role"`
	Content   string `json:"content"`
	Partial   bool   `json:"partial,omitempty"`
}

type toolState struct {
	RunID          string          `json:"runId"`
	ToolCallID     string          `json:"toolCallId"`
	Name           string          `json:"name"`
	Status         string          `json:"status"`
	Input          json.RawMessage `json:"input,omitempty"`
	Output         json.RawMessage `json:"output,omitempty"`
	Content        string          `json:"content,omitempty"`
	Result         string          `json:"result,omitempty"` // success, failure, partial
	Error          string          `json:"error,omitempty"`
	Denied         bool            `json:"denied,omitempty"`
	ConfirmationID string          `json:"confirmationId,omitempty"`
	ExpiresAt      string          `json:"expiresAt,omitempty"`
	Message        string          `json:"message,omitempty"`
}

type retrievalData struct {
	RunID string               `json:"runId"`
	Query string               `json:"query"`
	Hits  []event.RetrievalHit `json:"hits"`
}

type patchData struct {
	RunID string          `json:"runId"`
	Patch json.RawMessage `json:"patch"`
}

type stateData struct {
	RunID string          `json:"runId"`
	State json.RawMessage `json:"state"`
}

type errorData struct {
	RunID   string `json:"runId,omitempty"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

type endData struct {
	RunID          string           `json:"runId"`
	ConversationID string           `json:"conversationId"`
	Status         string           `json:"status"`
	Error          *event.ErrorInfo `json:"error,omitempty"`
	Usage          event.Usage      `json:"usage"`
}

type envelope struct {
	Event string `json:"event"`
	ID    string `json:"id,omitempty"`
	Data  any    `json:"data"`
}

// Encoder writes native frames. Its only state is the numbering of frames:
// the native events of a canonical event are a pure function of it (Map).
type Encoder struct {
	dialect.Follow
	frames dialect.Framer
}

// NewEncoder returns a native encoder.
func NewEncoder() *Encoder { return &Encoder{} }

var _ dialect.Exchange = (*Encoder)(nil)

// Encode appends the native frames of ev. Each has its own id (a tool
// awaiting input is tool.state "S.1", then tool.awaiting_input "S"), which
// the envelope repeats.
func (e *Encoder) Encode(dst []byte, ev event.Event) []byte {
	switch p := ev.Payload.(type) {
	case event.TextDeltaData:
		return e.delta(dst, ev.Seq, AgentDelta, deltaData{RunID: ev.Run, MessageID: p.MessageID, Delta: p.Delta})
	case event.ReasoningDeltaData:
		return e.delta(dst, ev.Seq, AgentReasoning, deltaData{RunID: ev.Run, MessageID: p.MessageID, Delta: p.Delta})
	}
	names := Map(ev)
	e.frames.Begin(ev.Seq)
	for i, n := range names {
		if id, write := e.frames.Next(i == len(names)-1); write {
			dst = appendNamed(dst, id.String(), n)
		}
	}
	return e.frames.End(dst, false)
}

// delta appends the one frame of a text or reasoning delta: the frame
// appendNamed writes for Map's one event, byte for byte, without
// reflection or allocation, since every token of every stream is one.
func (e *Encoder) delta(dst []byte, seq int64, name string, d deltaData) []byte {
	e.frames.Begin(seq)
	if id, write := e.frames.Next(true); write {
		dst = append(dst, "event: "...)
		dst = append(dst, name...)
		dst = append(dst, "\nid: "...)
		mark := len(dst)
		dst = id.Append(dst)
		idText := dst[mark:] // digits and a dot: no escaping
		dst = append(dst, "\ndata: {\"event\":\""...)
		dst = append(dst, name...)
		dst = append(dst, `","id":"`...)
		dst = append(dst, idText...)
		dst = append(dst, `","data":{"runId":`...)
		dst = jsonstr.Append(dst, d.RunID)
		dst = append(dst, `,"messageId":`...)
		dst = jsonstr.Append(dst, d.MessageID)
		dst = append(dst, `,"delta":`...)
		dst = jsonstr.Append(dst, d.Delta)
		dst = append(dst, "}}\n\n"...)
	}
	return e.frames.End(dst, false)
}

// Resume leaves out the frames up to after (dialect.Encoder).
func (e *Encoder) Resume(after dialect.ID) { e.frames.Resume(after) }

func appendNamed(dst []byte, id string, n Named) []byte {
	b, err := json.Marshal(envelope{Event: n.Name, ID: id, Data: n.Data})
	if err != nil { // only plain data and valid RawMessages reach here
		b, _ = json.Marshal(envelope{Event: Error, Data: errorData{Code: errcode.EncodeFailed, Message: "an event could not be encoded"}})
	}
	return dialect.AppendFrame(dst, dialect.Frame{ID: id, Event: n.Name, Data: b})
}

// KeepAlive appends a ping event (seed 000 CHAT-060). Pings carry no id: they are not replayed.
func (*Encoder) KeepAlive(dst []byte, now time.Time) []byte {
	return appendNamed(dst, "", Named{Ping, struct {
		At string `json:"at"`
	}{dialect.Millis(now)}})
}

// Abort appends an error event telling the client to reconnect.
func (*Encoder) Abort(dst []byte, info event.ErrorInfo) []byte {
	return appendNamed(dst, "", Named{Error, errorData{Code: info.Code, Message: info.Message}})
}
