// Package vercel is the AI SDK UI message stream (AI SDK 5, 6 and 7; the
// response carries the header `x-vercel-ai-ui-message-stream: v1`, see
// HeaderName). Frames are `id: <id>` and `data: <json chunk>`, the stream
// ends with `data: [DONE]`, and keep-alives are `: keep-alive` comments. The
// id is the canonical event's seq, or "<seq>.<k>" for a chunk that more
// chunks of the same event follow (dialect.ID); the tail that ends a paused
// response is numbered after the event it follows, `[DONE]` last with the
// bare seq. The AI SDK reads the stream with eventsource-parser, which
// accepts id lines and comments; it skips [DONE].
//
// The client validates every chunk against a union of strict objects, so
// only the protocol's chunk types and fields are written (an unknown field
// fails the chunk), plus `data-*` parts whose data is free. Seed 000's
// conversation.created and tool.awaiting_input travel as
// data-conversation.created and data-tool.awaiting_input with the same key
// fields.
//
// # Mapping
//
//   - the run's first event → `start` {messageId}: Options.MessageID, or the
//     run id. A continuation (after a confirmation) sends `start` again with
//     the same messageId, so the client keeps building the same message.
//   - iteration.started → `start-step` (closing the previous step with
//     `finish-step`); text deltas → `text-start` once, then `text-delta`;
//     message.completed → `text-end` (a message completed without deltas is
//     sent whole); reasoning → `reasoning-start`/`-delta`/`-end`, closed before
//     text or a tool call. Open text and reasoning are always ended before
//     `finish-step`, because the client forgets open parts at a step's end.
//   - tool call started → `tool-input-start`, args → `tool-input-delta`, ready →
//     `tool-input-available` (input always present); result → `tool-output-available`
//     (output: the structured output, or the text), a failure → `tool-output-error`,
//     a person's refusal → `tool-output-denied`.
//   - tool awaiting → `tool-approval-request` {approvalId: confirmationId},
//     `data-tool.awaiting_input` {confirmationId, toolCallId, toolName, args,
//     expiresAt, message}, then `finish-step` and `finish` {finishReason:"tool-calls"}:
//     the message is complete until the run resumes. What the paused run still
//     reports (a concurrent call ending, a second call awaiting) follows without
//     a new `start`; run.resumed sends `start` again.
//   - conversation.created → `data-conversation.created` {conversationId, title};
//     retrieval → `data-retrieval` {query, hits} and one `source-document` per
//     hit; context patch → `data-context.patch` {patch}; plan and check →
//     `data-plan` / `data-check`; error → `error` {errorText}.
//   - run.finished → `finish-step` if a step is open, `finish` {finishReason:
//     stop, error (failed) or other (cancelled)}, then `data: [DONE]`.
//
// Options.ExplicitPause is for a response that ends when its run pauses (the
// chat endpoint): awaiting a person no longer finishes the message by
// itself; the caller calls Pause once the run has reported everything it
// does before it waits, so `finish` is the response's last chunk even when
// a concurrent call ends after the approval request. A resumed run seen in
// the same stream (a replay) then continues the one message without a second
// `start`.
//
// Options.AISDK5 targets AI SDK 5 clients, whose strict schemas predate
// tool approvals (6.0) and finish reasons (5.0.92): `tool-approval-request` is
// left out (the data part still says what waits), `tool-output-denied` becomes
// `tool-output-error`, and `finish` has no finishReason.
//
// # Dropped
//
// Steps (router, worker…), tool.running, run.resumed (the new `start` says it),
// the model name and every statistic but the run's usage (on `finish`, as
// messageMetadata.usage), the structured
// answer (the text is the answer), and retrieval without hits.
package vercel

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentchat/agentchat/internal/dialect"
	"github.com/agentchat/agentchat/internal/event"
)

// HeaderName and HeaderValue mark a response as a UI message stream.
const (
	HeaderName  = "x-vercel-ai-ui-message-stream"
	HeaderValue = "v1"
)

// Finish reasons written on `finish`.
const (
	FinishStop      = "stop"
	FinishToolCalls = "tool-calls"
	FinishError     = "error"
	FinishOther     = "other"
)

// Options configure an Encoder.
type Options struct {
	// MessageID fixes the assistant message id on every `start`, for a client
	// continuing a message it already holds. Empty means the run id.
	MessageID string
	// AISDK5 writes only chunks and fields that AI SDK 5 clients accept.
	AISDK5 bool
	// ExplicitPause leaves the `finish` of a paused run to Pause.
	ExplicitPause bool
}

// Encoder writes UI message stream frames for one stream. It is not safe for
// concurrent use.
type Encoder struct {
	opts   Options
	frames dialect.Framer
	hold   bool // the Exchange sees the run paused: Pause may follow this event

	run       string
	started   bool // a `start` was sent and no `finish` since
	paused    bool // a confirmation ended the message; only a resume reopens it
	step      bool // a `start-step` is open
	text      string
	reasoning string
	streamed  map[string]bool // text ids that got deltas
	inputs    map[string]bool // tool calls with a `tool-input-start`
	available map[string]bool // tool calls with a `tool-input-available`
}

// NewEncoder returns a UI message stream encoder.
func NewEncoder(opts Options) *Encoder {
	return &Encoder{opts: opts, streamed: map[string]bool{}, inputs: map[string]bool{}, available: map[string]bool{}}
}

var _ dialect.Encoder = (*Encoder)(nil)

// Encode appends the chunks of ev, each with its own id (dialect.ID).
func (e *Encoder) Encode(dst []byte, ev event.Event) []byte {
	e.frames.Begin(ev.Seq)
	dst = e.encode(dst, ev)
	// The tail Pause writes once the stream is idle continues this event's
	// numbering: it must sort before the bare seq, which it then ends with.
	return e.frames.End(dst, e.hold)
}

// Resume leaves out the frames up to after (dialect.Encoder).
func (e *Encoder) Resume(after dialect.ID) { e.frames.Resume(after) }

func (e *Encoder) encode(dst []byte, ev event.Event) []byte {
	switch p := ev.Payload.(type) {
	case event.ConversationCreatedData:
		dst = e.start(dst, ev)
		return e.data(dst, "data-conversation.created", p.ConversationID, conversationCreated{p.ConversationID, p.Title})
	case event.RunStartedData:
		return e.start(dst, ev)
	case event.RunResumedData:
		if ev.Run == e.run {
			e.paused = false
		}
		return e.start(dst, ev)
	case event.IterationData:
		dst = e.start(dst, ev)
		dst = e.finishStep(dst)
		e.step = true
		return e.chunk(dst, typed{"start-step"})
	case event.TextDeltaData:
		if p.Delta == "" {
			return dst
		}
		p.MessageID = dialect.MessageID(p.MessageID, ev)
		dst = e.start(dst, ev)
		dst = e.closeReasoning(dst)
		if e.text != p.MessageID {
			dst = e.closeText(dst)
			dst = e.chunk(dst, part{"text-start", p.MessageID, ""})
			e.text = p.MessageID
		}
		e.streamed[p.MessageID] = true
		return e.chunk(dst, part{"text-delta", p.MessageID, p.Delta})
	case event.ReasoningDeltaData:
		if p.Delta == "" {
			return dst
		}
		p.MessageID = dialect.MessageID(p.MessageID, ev)
		dst = e.start(dst, ev)
		dst = e.closeText(dst)
		if e.reasoning != p.MessageID {
			dst = e.closeReasoning(dst)
			dst = e.chunk(dst, part{"reasoning-start", p.MessageID, ""})
			e.reasoning = p.MessageID
		}
		return e.chunk(dst, part{"reasoning-delta", p.MessageID, p.Delta})
	case event.MessageCompletedData:
		p.MessageID = dialect.MessageID(p.MessageID, ev)
		dst = e.start(dst, ev)
		dst = e.closeReasoning(dst)
		if e.text == p.MessageID {
			return e.closeText(dst)
		}
		if e.streamed[p.MessageID] || p.Content == "" {
			return dst // already ended (a tool call or step end closed it)
		}
		dst = e.closeText(dst)
		dst = e.chunk(dst, part{"text-start", p.MessageID, ""})
		dst = e.chunk(dst, part{"text-delta", p.MessageID, p.Content})
		e.streamed[p.MessageID] = true
		return e.chunk(dst, part{"text-end", p.MessageID, ""})
	case event.ToolCallStartedData:
		dst = e.start(dst, ev)
		return e.inputStart(dst, p.ToolCallID, p.Name)
	case event.ToolCallArgsData:
		if p.Delta == "" || !e.inputs[p.ToolCallID] || e.available[p.ToolCallID] {
			return dst // the complete input comes with tool-input-available
		}
		dst = e.start(dst, ev)
		return e.chunk(dst, inputDelta{"tool-input-delta", p.ToolCallID, p.Delta})
	case event.ToolCallReadyData:
		dst = e.start(dst, ev)
		return e.inputAvailable(dst, p.ToolCallID, p.Name, p.Args)
	case event.ToolAwaitingData:
		return e.awaiting(dst, ev, p)
	case event.ToolResultData:
		return e.toolResult(dst, ev, p)
	case event.RetrievalData:
		if len(p.Hits) == 0 {
			return dst
		}
		dst = e.start(dst, ev)
		dst = e.data(dst, "data-retrieval", "", retrieval{p.Query, p.Hits})
		for i, h := range p.Hits {
			// The chunk id names the source when there is one, so a client can
			// match a source part to its hit in data-retrieval.
			id := cmp.Or(h.ChunkID, fmt.Sprintf("%s-%d-%d", ev.Run, ev.Seq, i+1))
			dst = e.chunk(dst, sourceDocument{Type: "source-document", SourceID: id,
				MediaType: "text/plain", Title: cmp.Or(h.Source, "retrieved")})
		}
		return dst
	case event.ContextPatchData:
		if !validJSON(p.Patch) {
			return dst
		}
		dst = e.start(dst, ev)
		return e.data(dst, "data-context.patch", "", struct {
			Patch json.RawMessage `json:"patch"`
		}{p.Patch})
	case event.StateSnapshotData:
		if !validJSON(p.State) {
			return dst
		}
		dst = e.start(dst, ev)
		return e.data(dst, "data-state.snapshot", "", struct {
			State json.RawMessage `json:"state"`
		}{p.State})
	case event.PlanData:
		if !validJSON(p.Plan) {
			return dst
		}
		dst = e.start(dst, ev)
		return e.data(dst, "data-plan", "", p.Plan)
	case event.CheckData:
		if !validJSON(p.Summary) {
			return dst
		}
		dst = e.start(dst, ev)
		return e.data(dst, "data-check", "", p.Summary)
	case event.ErrorData:
		dst = e.start(dst, ev)
		return e.chunk(dst, errorChunk{"error", cmp.Or(p.Message, "The run failed.")})
	case event.RunFinishedData:
		dst = e.start(dst, ev)
		reason := FinishStop
		switch p.Status {
		case event.StatusSucceeded:
		case event.StatusCancelled:
			reason = FinishOther
		default:
			reason = FinishError
		}
		dst = e.finish(dst, reason, p.Usage)
		e.paused = false
		return e.frames.Append(dst, "", done)
	}
	return dst // step.*, tool.running
}

// KeepAlive appends a `: keep-alive` comment.
func (e *Encoder) KeepAlive(dst []byte, _ time.Time) []byte {
	return dialect.AppendComment(dst, "keep-alive")
}

// Abort appends an `error` chunk: the stream ends early and the client may
// reconnect; the run goes on.
func (e *Encoder) Abort(dst []byte, info event.ErrorInfo) []byte {
	return e.chunk(dst, errorChunk{"error", cmp.Or(info.Message, "The stream ended early.")})
}

// start opens the message when needed: on the run's first event, and on its
// resumption after a pause ended it with `finish`. Events a paused run still
// reports (a concurrent call ending) follow the `finish` without a new
// `start`: the client applies them to the message it holds.
func (e *Encoder) start(dst []byte, ev event.Event) []byte {
	if e.run == ev.Run && (e.started || e.paused) {
		return dst
	}
	if e.started { // a previous run never finished on this stream
		dst = e.finish(dst, FinishOther)
	}
	if e.run != ev.Run {
		e.run = ev.Run
		e.streamed, e.inputs, e.available = map[string]bool{}, map[string]bool{}, map[string]bool{}
	}
	e.started, e.paused = true, false
	return e.chunk(dst, startChunk{"start", cmp.Or(e.opts.MessageID, ev.Run)})
}

func (e *Encoder) finishStep(dst []byte) []byte {
	dst = e.closeText(dst)
	dst = e.closeReasoning(dst)
	if !e.step {
		return dst
	}
	e.step = false
	return e.chunk(dst, typed{"finish-step"})
}

func (e *Encoder) finish(dst []byte, reason string, usage ...event.Usage) []byte {
	dst = e.finishStep(dst)
	e.started = false
	if e.opts.AISDK5 {
		reason = ""
	}
	c := finishChunk{Type: "finish", FinishReason: reason}
	if len(usage) > 0 {
		if u := dialect.UsageTotal(usage[0]); u != nil {
			c.MessageMetadata = &finishMetadata{Usage: u}
		}
	}
	return e.chunk(dst, c)
}

func (e *Encoder) closeText(dst []byte) []byte {
	if e.text == "" {
		return dst
	}
	id := e.text
	e.text = ""
	return e.chunk(dst, part{"text-end", id, ""})
}

func (e *Encoder) closeReasoning(dst []byte) []byte {
	if e.reasoning == "" {
		return dst
	}
	id := e.reasoning
	e.reasoning = ""
	return e.chunk(dst, part{"reasoning-end", id, ""})
}

func (e *Encoder) inputStart(dst []byte, id, name string) []byte {
	if e.inputs[id] || e.available[id] {
		return dst
	}
	dst = e.closeText(dst)
	dst = e.closeReasoning(dst)
	e.inputs[id] = true
	return e.chunk(dst, toolInput{Type: "tool-input-start", ToolCallID: id, ToolName: name})
}

func (e *Encoder) inputAvailable(dst []byte, id, name string, args json.RawMessage) []byte {
	if e.available[id] {
		return dst
	}
	dst = e.closeText(dst)
	dst = e.closeReasoning(dst)
	e.available[id] = true
	return e.chunk(dst, toolInput{Type: "tool-input-available", ToolCallID: id, ToolName: name, Input: value(args, `{}`)})
}

func (e *Encoder) awaiting(dst []byte, ev event.Event, p event.ToolAwaitingData) []byte {
	dst = e.start(dst, ev)
	dst = e.inputAvailable(dst, p.ToolCallID, p.Name, p.Args)
	if !e.opts.AISDK5 {
		dst = e.chunk(dst, approval{"tool-approval-request", p.ConfirmationID, p.ToolCallID})
	}
	d := awaitingInput{ConfirmationID: p.ConfirmationID, ToolCallID: p.ToolCallID, ToolName: p.Name,
		Args: value(p.Args, `{}`), Message: p.Message}
	if !p.ExpiresAt.IsZero() {
		d.ExpiresAt = dialect.Millis(p.ExpiresAt)
	}
	dst = e.data(dst, "data-tool.awaiting_input", p.ConfirmationID, d)
	if e.paused || e.opts.ExplicitPause {
		return dst // a second call awaiting in the same pause: the message is already finished
	}
	e.paused = true
	return e.finish(dst, FinishToolCalls)
}

// Pause ends the message of a run that waits for a person (Options.ExplicitPause):
// `finish-step` if a step is open and `finish` {finishReason:"tool-calls"}.
// It writes nothing when no message is open. Its chunks follow the last
// event encoded, numbered with it.
func (e *Encoder) Pause(dst []byte) []byte {
	e.frames.Continue()
	dst = e.pauseChunks(dst)
	return e.frames.End(dst, false)
}

func (e *Encoder) pauseChunks(dst []byte) []byte {
	if !e.started {
		return dst
	}
	e.paused = true
	return e.finish(dst, FinishToolCalls)
}

func (e *Encoder) toolResult(dst []byte, ev event.Event, p event.ToolResultData) []byte {
	dst = e.start(dst, ev)
	// The client refuses an output for a call it has no part for.
	dst = e.inputAvailable(dst, p.ToolCallID, p.Name, p.Args)
	switch {
	case p.Denied && !e.opts.AISDK5:
		return e.chunk(dst, toolOutput{Type: "tool-output-denied", ToolCallID: p.ToolCallID})
	case p.Denied || p.Status == event.ToolFailure:
		text := cmp.Or(p.Error, p.Content, "The tool failed.")
		return e.chunk(dst, toolOutput{Type: "tool-output-error", ToolCallID: p.ToolCallID, ErrorText: text})
	}
	out := p.Output
	if !validJSON(out) || isNull(out) {
		out, _ = json.Marshal(p.Content)
	}
	return e.chunk(dst, toolOutput{Type: "tool-output-available", ToolCallID: p.ToolCallID, Output: out})
}

// data appends a data part; a non-empty id lets a later part replace it.
func (e *Encoder) data(dst []byte, typ, id string, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return dst
	}
	return e.chunk(dst, dataChunk{Type: typ, ID: id, Data: b})
}

// chunk marshals one chunk into one frame. The chunks are plain data and
// checked RawMessages, so Marshal does not fail; if it did, an `error` chunk
// says so rather than a broken frame.
func (e *Encoder) chunk(dst []byte, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(errorChunk{"error", "an event could not be encoded"})
	}
	return e.frames.Append(dst, "", b) // outside Encode (Abort): no id
}

// done is the data of the stream's last frame.
var done = []byte("[DONE]")

// The chunk shapes, field for field as the AI SDK's uiMessageChunkSchema.

type typed struct {
	Type string `json:"type"`
}

type startChunk struct {
	Type      string `json:"type"`
	MessageID string `json:"messageId,omitempty"`
}

type finishChunk struct {
	Type         string `json:"type"`
	FinishReason string `json:"finishReason,omitempty"`
	// MessageMetadata carries the run's usage on its finish.
	MessageMetadata *finishMetadata `json:"messageMetadata,omitempty"`
}

// finishMetadata is the message metadata of a run's finish: its usage in
// the AI SDK's LanguageModelUsage shape, with cost.
type finishMetadata struct {
	Usage *dialect.Usage `json:"usage"`
}

// part is text-* and reasoning-*: delta only on the -delta chunks.
type part struct {
	Type  string `json:"type"`
	ID    string `json:"id"`
	Delta string `json:"delta,omitempty"`
}

type errorChunk struct {
	Type      string `json:"type"`
	ErrorText string `json:"errorText"`
}

type toolInput struct {
	Type       string          `json:"type"`
	ToolCallID string          `json:"toolCallId"`
	ToolName   string          `json:"toolName"`
	Input      json.RawMessage `json:"input,omitempty"` // tool-input-available always sets it
}

type inputDelta struct {
	Type           string `json:"type"`
	ToolCallID     string `json:"toolCallId"`
	InputTextDelta string `json:"inputTextDelta"`
}

type approval struct {
	Type       string `json:"type"`
	ApprovalID string `json:"approvalId"`
	ToolCallID string `json:"toolCallId"`
}

type toolOutput struct {
	Type       string          `json:"type"`
	ToolCallID string          `json:"toolCallId"`
	Output     json.RawMessage `json:"output,omitempty"` // tool-output-available always sets it
	ErrorText  string          `json:"errorText,omitempty"`
}

type sourceDocument struct {
	Type      string `json:"type"`
	SourceID  string `json:"sourceId"`
	MediaType string `json:"mediaType"`
	Title     string `json:"title"`
}

type dataChunk struct {
	Type string          `json:"type"`
	ID   string          `json:"id,omitempty"`
	Data json.RawMessage `json:"data"`
}

type conversationCreated struct {
	ConversationID string `json:"conversationId"`
	Title          string `json:"title,omitempty"`
}

type awaitingInput struct {
	ConfirmationID string          `json:"confirmationId"`
	ToolCallID     string          `json:"toolCallId"`
	ToolName       string          `json:"toolName"`
	Args           json.RawMessage `json:"args"`
	ExpiresAt      string          `json:"expiresAt,omitempty"`
	Message        string          `json:"message,omitempty"`
}

type retrieval struct {
	Query string               `json:"query"`
	Hits  []event.RetrievalHit `json:"hits"`
}

// value returns raw when it is valid JSON other than null, else fallback.
func value(raw json.RawMessage, fallback string) json.RawMessage {
	if !validJSON(raw) || isNull(raw) {
		return json.RawMessage(fallback)
	}
	return raw
}

func isNull(raw []byte) bool { return string(bytes.TrimSpace(raw)) == "null" }

func validJSON(raw []byte) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && json.Valid(raw)
}
