// Package chain is seed 003's chain stream: frames of exactly three lines,
// `event: <evt>`, `id: <seq>`, `data: <envelope>`, with the envelope
//
//	{"evt": <evt>, "seq": <seq>, "ts": <RFC 3339 UTC, ms>, "trace_id": <the run's trace id, as a UUID>, "schema": "v1", "payload": …}
//
// and `: keep-alive` comments. It owns the whole exchange: the request
// (ParseQuery, ParseBody), the response headers (Header), the rejection of a
// max_steps over the hard limit (Rejection), and the rule that the stream
// ends after `final` (Ends).
//
// # Numbering
//
// seq counts the frames of one chain (one run): 1, 2, 3… whatever else the
// run logs, and the SSE id is the same number. The count is a pure function
// of the run's events, so an encoder fed the run from its first event
// numbers every frame the same way each time; a stream resumed with
// Last-Event-ID N replays the run from its start through an encoder made
// with Options.After = N, which counts the first N frames without writing
// them. trace_id is the run's W3C trace id (Options.TraceID, which the
// caller reads from the run), one for the whole chain, so a chain's frames
// lead to its trace and its log lines. It is written in the seed's UUID
// shape (8-4-4-4-12): the same 128 bits as the 32 hex digits the API, the
// logs and trace backends show, with dashes. Events carry no trace: an
// encoder given none uses the run id (a UUIDv7), as a stand-in.
//
// # Mapping
//
//   - step.started of planner, executor or check → chain.step, payload the
//     step name. Other steps (the router's router and worker) are not chain
//     stages and are dropped.
//   - plan → planner.plan, payload the planner's plan object.
//   - tool call ready (or running, for a stream that missed ready) → call.start
//     {name, status:"start", input, output:"", server}; a call awaiting a person
//     → call.start {…, status:"awaiting_input", confirmationId, expiresAt,
//     message}, and call.start with status "start" again once it runs.
//   - tool result → call.end {name, status:"success"|"error", input, output,
//     server}: success with the tool's text (a partial result counts as
//     success), or error with the error text (a refused or failed call).
//   - check → check.summary, payload the checker's verdict.
//   - error → error {code, message}.
//   - run.finished → final, payload the final text: the run's last completed
//     assistant message; for a failed run the error's message; for a cancelled
//     run a short notice. One final per run, always last.
//
// input is the call's arguments and output the text the tool returned (its
// structured output as JSON text when it returned no text), both strings as
// in seed 003. server is the stage that made the call.
//
// # Dropped
//
// conversation.created, run.started, run.resumed, step.finished, steps that
// are not chain stages, iterations, text and reasoning deltas (final carries
// the text), tool-call argument fragments, retrieval, context patches, state
// snapshots, and every statistic.
package chain

import (
	"bytes"
	"cmp"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentchat/agentchat/internal/dialect"
	"github.com/agentchat/agentchat/internal/errcode"
	"github.com/agentchat/agentchat/internal/event"
)

// Event names (seed 003).
const (
	Step         = "chain.step"
	PlannerPlan  = "planner.plan"
	CallStart    = "call.start"
	CallEnd      = "call.end"
	CheckSummary = "check.summary"
	Final        = "final"
	Error        = "error"
)

// SchemaVersion is the envelope's "schema".
const SchemaVersion = "v1"

// Call statuses.
const (
	StatusStart         = "start"
	StatusAwaitingInput = "awaiting_input"
	StatusSuccess       = "success"
	StatusError         = "error"
)

// Stages are the step names the chain stream shows.
var stages = map[string]bool{"planner": true, "executor": true, "check": true}

// Options shape one stream.
type Options struct {
	// After is the Last-Event-ID the client resumes from: frames numbered up
	// to it are counted but not written. The encoder must then be fed the
	// run from its first event.
	After int64
	// TraceID is the trace id of the run the stream follows (chat.Run.TraceID),
	// every envelope's trace_id. Empty: the run id stands in.
	TraceID string
}

// Encoder writes chain envelopes. It is not safe for concurrent use.
type Encoder struct {
	after int64
	given string // Options.TraceID
	run   string
	trace string
	seq   int64             // frames of the run so far
	calls map[string]string // tool call id → last call.start status
	final string            // last completed assistant message
	ended bool              // the run's final frame was encoded
}

// NewEncoder returns a chain-stream encoder.
func NewEncoder(opts Options) *Encoder {
	t := traceUUID(opts.TraceID)
	return &Encoder{after: max(opts.After, 0), given: t, trace: t, calls: map[string]string{}}
}

var _ dialect.Exchange = (*Encoder)(nil)

type envelope struct {
	Evt     string `json:"evt"`
	Seq     int64  `json:"seq"`
	TS      string `json:"ts"`
	TraceID string `json:"trace_id"`
	Schema  string `json:"schema"`
	Payload any    `json:"payload"`
	// Usage is the run's total, on final only: a field seed 003's envelope
	// lacks, beside its own (its payload stays the answer's text).
	Usage *dialect.Usage `json:"usage,omitempty"`
}

type call struct {
	Name           string `json:"name"`
	Status         string `json:"status"`
	Input          string `json:"input"`
	Output         string `json:"output"`
	Server         string `json:"server"`
	ConfirmationID string `json:"confirmationId,omitempty"`
	ExpiresAt      string `json:"expiresAt,omitempty"`
	Message        string `json:"message,omitempty"`
}

type errorPayload struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Encode appends the envelope of ev, if the chain stream shows it.
func (e *Encoder) Encode(dst []byte, ev event.Event) []byte {
	if ev.Run != e.run {
		*e = Encoder{after: e.after, given: e.given, run: ev.Run, trace: cmp.Or(e.given, ev.Run), calls: map[string]string{}}
	}
	e.ended = e.ended || ev.Terminal()
	switch p := ev.Payload.(type) {
	case event.StepStartedData:
		if !stages[p.Name] {
			return dst
		}
		return e.frame(dst, ev, Step, p.Name)
	case event.PlanData:
		return e.frame(dst, ev, PlannerPlan, object(p.Plan))
	case event.CheckData:
		return e.frame(dst, ev, CheckSummary, object(p.Summary))
	case event.ToolCallReadyData:
		return e.start(dst, ev, call{Name: p.Name, Status: StatusStart, Input: text(p.Args), Server: ev.Step}, p.ToolCallID)
	case event.ToolRunningData:
		return e.start(dst, ev, call{Name: p.Name, Status: StatusStart, Input: text(p.Args), Server: ev.Step}, p.ToolCallID)
	case event.ToolAwaitingData:
		c := call{Name: p.Name, Status: StatusAwaitingInput, Input: text(p.Args), Server: ev.Step,
			ConfirmationID: p.ConfirmationID, Message: p.Message}
		if !p.ExpiresAt.IsZero() {
			c.ExpiresAt = dialect.Millis(p.ExpiresAt)
		}
		return e.start(dst, ev, c, p.ToolCallID)
	case event.ToolResultData:
		status, output := StatusSuccess, p.Content
		if output == "" {
			output = text(p.Output)
		}
		if p.Status == event.ToolFailure || p.Denied {
			status = StatusError
			if p.Error != "" && !p.Denied {
				output = p.Error
			}
		}
		return e.frame(dst, ev, CallEnd, call{Name: p.Name, Status: status, Input: text(p.Args), Output: output, Server: ev.Step})
	case event.MessageCompletedData:
		if p.Role == "" || p.Role == "assistant" {
			e.final = p.Content
		}
		return dst
	case event.ErrorData:
		return e.frame(dst, ev, Error, errorPayload{p.Code, p.Message})
	case event.RunFinishedData:
		final := e.final
		switch p.Status {
		case event.StatusSucceeded:
			if final == "" && p.Answer != nil {
				final = p.Answer.Answer
			}
		case event.StatusCancelled:
			final = "The run was cancelled."
		default:
			final = "The run failed."
			if p.Error != nil && p.Error.Message != "" {
				final = p.Error.Message
			}
		}
		return e.frameUsage(dst, ev, Final, final, dialect.UsageTotal(p.Usage))
	}
	return dst
}

// start writes call.start when the call's status changes: once when it is
// pending, once if it waits for a person, and once more when it then runs.
func (e *Encoder) start(dst []byte, ev event.Event, c call, id string) []byte {
	prev, seen := e.calls[id]
	if seen && (c.Status == prev || c.Status == StatusStart && prev != StatusAwaitingInput) {
		return dst
	}
	e.calls[id] = c.Status
	return e.frame(dst, ev, CallStart, c)
}

// Resume leaves out the frames up to after, as Options.After does
// (dialect.Encoder). A chain frame is an event of its own: its id is the
// frame's number, never "<n>.<k>", so after.Part is 0 (the caller refuses a
// Last-Event-ID with one).
func (e *Encoder) Resume(after dialect.ID) { e.after = max(after.Seq, 0) }

// KeepAlive appends a `: keep-alive` comment.
func (e *Encoder) KeepAlive(dst []byte, _ time.Time) []byte {
	return dialect.AppendComment(dst, "keep-alive")
}

// Abort appends an error envelope without an SSE id: the stream ends early and
// the client may reconnect; the run goes on.
func (e *Encoder) Abort(dst []byte, info event.ErrorInfo) []byte {
	b, _ := json.Marshal(envelope{Evt: Error, TS: dialect.Millis(time.Now()), TraceID: e.trace, Schema: SchemaVersion,
		Payload: errorPayload{info.Code, info.Message}})
	return dialect.AppendFrame(dst, dialect.Frame{Event: Error, Data: b})
}

// frame numbers a frame and writes it, unless the client has it already.
func (e *Encoder) frame(dst []byte, ev event.Event, evt string, payload any) []byte {
	return e.frameUsage(dst, ev, evt, payload, nil)
}

// frameUsage is frame with the run's usage in the envelope (final's).
func (e *Encoder) frameUsage(dst []byte, ev event.Event, evt string, payload any, usage *dialect.Usage) []byte {
	e.seq++
	if e.seq <= e.after {
		return dst
	}
	b, err := json.Marshal(envelope{Evt: evt, Seq: e.seq, TS: dialect.Millis(ev.Time), TraceID: e.trace, Schema: SchemaVersion, Payload: payload, Usage: usage})
	if err != nil { // only plain data and checked RawMessages reach here
		evt = Error
		b, _ = json.Marshal(envelope{Evt: Error, Seq: e.seq, TS: dialect.Millis(ev.Time), TraceID: e.trace, Schema: SchemaVersion,
			Payload: errorPayload{errcode.EncodeFailed, "an event could not be encoded"}})
	}
	return dialect.AppendFrame(dst, dialect.Frame{ID: strconv.FormatInt(e.seq, 10), Event: evt, Data: b})
}

// traceUUID writes a W3C trace id (32 hex digits) in the UUID shape of
// seed 003's trace_id; anything else is returned as it is.
func traceUUID(id string) string {
	if len(id) != 32 || strings.Trim(id, "0123456789abcdef") != "" {
		return id
	}
	return id[:8] + "-" + id[8:12] + "-" + id[12:16] + "-" + id[16:20] + "-" + id[20:]
}

// Frames is how many frames the encoder has numbered, written or not.
func (e *Encoder) Frames() int64 { return e.seq }

// text is a JSON value as compact text: seed 003 carries input and output as strings.
func text(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// object passes a structured payload through, as {} when it is missing or invalid.
func object(raw json.RawMessage) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" || !json.Valid(raw) {
		return json.RawMessage(`{}`)
	}
	return raw
}

// Header is the chain stream's response header.
func (e *Encoder) Header() http.Header { return Header() }

// Preamble appends nothing: the first frame is the chain's first step.
func (e *Encoder) Preamble(dst []byte) []byte { return dst }

// Ended reports whether the run's final frame was encoded: the connection
// closes after it (seed 003).
func (e *Encoder) Ended() bool { return e.ended }

// Idle never ends the response: only the final frame does.
func (e *Encoder) Idle(dst []byte) ([]byte, bool) { return dst, false }
