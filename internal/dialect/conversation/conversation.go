// Package conversation is seed 002's observable conversation stream: frames
// `event: <name>`, `id: <id>`, `data: <json>` where the JSON repeats the
// name as "type" and every event carries the turn_id that groups one user
// input's events, and `: keep-alive` comments. The id is the canonical
// event's seq, or "<seq>.<k>" for a frame that more frames of the same event
// follow (dialect.ID).
//
// # Events
//
// Field names are snake_case, as in seed 002. Every payload has
// {"type", "turn_id", "run_id"}, plus:
//
//	iteration_start  iteration (1-based model call)
//	text             iteration, message_id, delta
//	tool_call        iteration, tool_call_id, tool_name, args (the complete
//	                 arguments object, sent once they are known)
//	tool_result      iteration, tool_call_id (equal to its tool_call's),
//	                 tool_name, status (success | failure | partial),
//	                 result (the structured output, or the text when there is
//	                 none), content (the text the model saw), error (when the
//	                 call failed), denied (true when a person refused it)
//	retrieval        query, hits [{content, source, score, documentId, chunkId}], only when there
//	                 are hits (seed 002: no empty retrieval events)
//	error            code, message
//	done             status (succeeded | failed | cancelled), iterations (model
//	                 calls made), tool_calls (calls ended), message_id (the last
//	                 assistant message, when there is one)
//
// A message completed without streamed deltas is sent as one text event, so
// a client rebuilding the turn from text events misses nothing.
//
// # Dropped
//
// conversation.created, run.started and run.resumed (the turn's first
// iteration_start opens it), steps, reasoning, tool-call argument fragments
// (tool_call carries the whole arguments), tool.running, the awaiting state
// (the tool_result follows the decision), context patches, state snapshots,
// plans, checks, and every statistic but the turn's usage and cost (on
// done): model name, latency.
package conversation

import (
	"bytes"
	"cmp"
	"encoding/json"
	"time"

	"github.com/agentchat/agentchat/internal/dialect"
	"github.com/agentchat/agentchat/internal/errcode"
	"github.com/agentchat/agentchat/internal/event"
)

// Event names.
const (
	IterationStart = "iteration_start"
	Text           = "text"
	ToolCall       = "tool_call"
	ToolResult     = "tool_result"
	Retrieval      = "retrieval"
	Done           = "done"
	Error          = "error"
)

// Encoder writes the observable stream. It is not safe for concurrent use.
type Encoder struct {
	dialect.Follow
	frames     dialect.Framer
	run, turn  string
	streamed   map[string]bool // message ids that got text deltas
	calls      map[string]bool // tool calls announced
	iterations int
	results    int
	message    string // last assistant message id
}

// NewEncoder returns an observable-stream encoder.
func NewEncoder() *Encoder { return &Encoder{streamed: map[string]bool{}, calls: map[string]bool{}} }

var _ dialect.Exchange = (*Encoder)(nil)

// head is what every event carries.
type head struct {
	Type   string `json:"type"`
	TurnID string `json:"turn_id"`
	RunID  string `json:"run_id,omitempty"`
}

type iterationStart struct {
	head
	Iteration int `json:"iteration"`
}

type text struct {
	head
	Iteration int    `json:"iteration,omitempty"`
	MessageID string `json:"message_id"`
	Delta     string `json:"delta"`
}

type toolCall struct {
	head
	Iteration  int             `json:"iteration,omitempty"`
	ToolCallID string          `json:"tool_call_id"`
	ToolName   string          `json:"tool_name"`
	Args       json.RawMessage `json:"args"`
}

type toolResult struct {
	head
	Iteration  int             `json:"iteration,omitempty"`
	ToolCallID string          `json:"tool_call_id"`
	ToolName   string          `json:"tool_name"`
	Status     string          `json:"status"`
	Result     json.RawMessage `json:"result"`
	Content    string          `json:"content"`
	Error      string          `json:"error,omitempty"`
	Denied     bool            `json:"denied,omitempty"`
}

type retrieval struct {
	head
	Query string               `json:"query"`
	Hits  []event.RetrievalHit `json:"hits"`
}

type errorData struct {
	head
	Code    string `json:"code"`
	Message string `json:"message"`
}

type done struct {
	head
	Status     string `json:"status"`
	Iterations int    `json:"iterations"`
	ToolCalls  int    `json:"tool_calls"`
	MessageID  string `json:"message_id,omitempty"`
	// Usage is the turn's token usage and cost.
	Usage *dialect.Usage `json:"usage,omitempty"`
}

// Encode appends the frames of ev, each with its own id (dialect.ID): a
// tool_result that announces its call first is two frames, "S.1" and "S".
func (e *Encoder) Encode(dst []byte, ev event.Event) []byte {
	e.frames.Begin(ev.Seq)
	dst = e.encode(dst, ev)
	return e.frames.End(dst, false)
}

// Resume leaves out the frames up to after (dialect.Encoder).
func (e *Encoder) Resume(after dialect.ID) { e.frames.Resume(after) }

func (e *Encoder) encode(dst []byte, ev event.Event) []byte {
	if ev.Run != e.run {
		*e = Encoder{frames: e.frames, run: ev.Run, streamed: map[string]bool{}, calls: map[string]bool{}}
	}
	e.turn = ev.Turn
	h := func(name string) head { return head{Type: name, TurnID: ev.Turn, RunID: ev.Run} }
	switch p := ev.Payload.(type) {
	case event.IterationData:
		e.iterations = max(e.iterations, ev.Iteration)
		return e.frame(dst, iterationStart{h(IterationStart), ev.Iteration})
	case event.TextDeltaData:
		if p.Delta == "" {
			return dst
		}
		e.streamed[p.MessageID] = true
		e.message = p.MessageID
		return e.frame(dst, text{h(Text), ev.Iteration, p.MessageID, p.Delta})
	case event.MessageCompletedData:
		e.message = p.MessageID
		if e.streamed[p.MessageID] || p.Content == "" {
			return dst
		}
		e.streamed[p.MessageID] = true
		return e.frame(dst, text{h(Text), ev.Iteration, p.MessageID, p.Content})
	case event.ToolCallReadyData:
		return e.toolCall(dst, h(ToolCall), ev.Iteration, p.ToolCallID, p.Name, p.Args)
	case event.ToolAwaitingData:
		return e.toolCall(dst, h(ToolCall), ev.Iteration, p.ToolCallID, p.Name, p.Args)
	case event.ToolResultData:
		dst = e.toolCall(dst, h(ToolCall), ev.Iteration, p.ToolCallID, p.Name, p.Args)
		e.results++
		result := p.Output
		if !validJSON(result) {
			result, _ = json.Marshal(p.Content)
		}
		return e.frame(dst, toolResult{h(ToolResult), ev.Iteration, p.ToolCallID, p.Name,
			cmp.Or(p.Status, event.ToolSuccess), result, p.Content, p.Error, p.Denied})
	case event.RetrievalData:
		if len(p.Hits) == 0 {
			return dst
		}
		return e.frame(dst, retrieval{h(Retrieval), p.Query, p.Hits})
	case event.ErrorData:
		return e.frame(dst, errorData{h(Error), p.Code, p.Message})
	case event.RunFinishedData:
		return e.frame(dst, done{h(Done), p.Status, e.iterations, e.results, e.message, dialect.UsageTotal(p.Usage)})
	}
	return dst
}

// toolCall announces a call once, when its arguments are complete (or, for a
// stream joined late, with its result).
func (e *Encoder) toolCall(dst []byte, h head, iteration int, callID, name string, args json.RawMessage) []byte {
	if e.calls[callID] {
		return dst
	}
	e.calls[callID] = true
	if !validJSON(args) {
		args = json.RawMessage(`{}`)
	}
	return e.frame(dst, toolCall{h, iteration, callID, name, args})
}

// KeepAlive appends a `: keep-alive` comment.
func (e *Encoder) KeepAlive(dst []byte, _ time.Time) []byte {
	return dialect.AppendComment(dst, "keep-alive")
}

// Abort appends an error event without an id: the stream ends early and the
// client may reconnect with Last-Event-ID; the run goes on.
func (e *Encoder) Abort(dst []byte, info event.ErrorInfo) []byte {
	return e.frame(dst, errorData{head{Type: Error, TurnID: e.turn, RunID: e.run}, info.Code, info.Message})
}

type named interface{ name() string }

func (h head) name() string { return h.Type }

// frame marshals one event; outside Encode (Abort) it carries no id. Only
// plain data and checked RawMessages reach here; should Marshal still fail,
// an error event says so.
func (e *Encoder) frame(dst []byte, v named) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(errorData{head{Type: Error}, errcode.EncodeFailed, "an event could not be encoded"})
		return e.frames.Append(dst, Error, b)
	}
	return e.frames.Append(dst, v.name(), b)
}

func validJSON(raw []byte) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && string(raw) != "null" && json.Valid(raw)
}
