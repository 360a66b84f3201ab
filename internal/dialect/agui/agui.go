package agui

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/agentchat/agentchat/internal/dialect"
	"github.com/agentchat/agentchat/internal/errcode"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/uischema"
)

// AG-UI event types written by this package.
const (
	RunStarted              = "RUN_STARTED"
	RunFinished             = "RUN_FINISHED"
	RunError                = "RUN_ERROR"
	StepStarted             = "STEP_STARTED"
	StepFinished            = "STEP_FINISHED"
	TextMessageStart        = "TEXT_MESSAGE_START"
	TextMessageContent      = "TEXT_MESSAGE_CONTENT"
	TextMessageEnd          = "TEXT_MESSAGE_END"
	ReasoningStart          = "REASONING_START"
	ReasoningMessageStart   = "REASONING_MESSAGE_START"
	ReasoningMessageContent = "REASONING_MESSAGE_CONTENT"
	ReasoningMessageEnd     = "REASONING_MESSAGE_END"
	ReasoningEnd            = "REASONING_END"
	ToolCallStart           = "TOOL_CALL_START"
	ToolCallArgs            = "TOOL_CALL_ARGS"
	ToolCallEnd             = "TOOL_CALL_END"
	ToolCallResult          = "TOOL_CALL_RESULT"
	StateSnapshot           = "STATE_SNAPSHOT"
	StateDelta              = "STATE_DELTA"
	MessagesSnapshot        = "MESSAGES_SNAPSHOT"
	Custom                  = "CUSTOM"
)

// OnInterrupt is the name of the CUSTOM event that carries an interrupt to
// CopilotKit (and LangGraph-style clients) beside RUN_FINISHED's outcome.
const OnInterrupt = "on_interrupt"

// InterruptReason is the reason of every interrupt this package writes.
const InterruptReason = "confirmation"

// CodeCancelled is RUN_ERROR's code for a cancelled run, for clients before
// AG-UI 1.0 (Options.PreV1); 1.0 clients get RUN_FINISHED with the
// cancelled outcome.
const CodeCancelled = "cancelled"

// Outcome types of RUN_FINISHED (AG-UI 1.0).
const (
	OutcomeSuccess   = "success"
	OutcomeInterrupt = "interrupt"
	OutcomeCancelled = "cancelled"
)

// Mode selects the fields an Encoder writes.
type Mode int

const (
	// Standard writes only AG-UI schema fields.
	Standard Mode = iota
	// Seed adds seed 004's business fields.
	Seed
)

// Options configure an Encoder. The zero value is Standard mode.
type Options struct {
	Mode Mode
	// ThreadID is the threadId the client knows the thread by, written on
	// every frame in place of the canonical thread id (a client's threadId
	// names a conversation in the client's own namespace). Empty writes the
	// canonical id.
	ThreadID string
	// PreV1 writes for a client of AG-UI before 1.0 (@ag-ui/client 0.0.x,
	// which CopilotKit 1.x ships): its schemas know neither the cancelled
	// outcome nor a success outcome with fields, and refuse the event. A
	// cancelled run then ends with RUN_ERROR (code "cancelled"), and a run
	// that left frontend tool calls with a RUN_FINISHED without outcome
	// (the client finds the calls in the stream, as 0.0.x always did).
	PreV1 bool
}

// ResponseSchema is the JSON schema of an interrupt's resume payload: the
// person's decision and, optionally, corrected arguments.
var ResponseSchema = json.RawMessage(`{"type":"object","properties":{"approved":{"type":"boolean"},"args":{"type":"object"}},"required":["approved"]}`)

// Encoder writes AG-UI frames for one stream. It is not safe for concurrent use.
type Encoder struct {
	seed       bool
	preV1      bool
	frames     dialect.Framer // numbers the frames; its state outlives a canonical run
	threadName string         // Options.ThreadID
	nextRunID  string         // NameNextRun

	// Per canonical run.
	thread    string
	run       string
	runID     string // AG-UI runId of the current (or last) AG-UI run
	live      bool   // an AG-UI run is open: RUN_STARTED sent, no RUN_FINISHED/RUN_ERROR since
	opened    int    // AG-UI runs opened for run
	errored   bool   // RUN_ERROR written for run
	text      string // open text message
	reasoning string // open reasoning message (canonical id)
	started   map[string]bool
	calls     map[string]*toolCall
	steps     []string // open steps, in start order
	suspended []string // steps an interrupt closed, started again on resume
	paused    bool     // an interrupt ended the AG-UI run; events are held
	held      []event.Event

	ends int // RUN_FINISHED and RUN_ERROR frames written
	// unrecorded: a run's error event has been written as RUN_ERROR, and
	// its end (published once the store has recorded the run's end and
	// usage) has not come yet.
	unrecorded bool
	onFrame    func(typ string, v any) // observes every frame (RunIndex)
}

type toolCall struct {
	name, parent string
	args         []byte // streamed fragments
	open, ended  bool
}

// NewEncoder returns an AG-UI encoder.
func NewEncoder(opts Options) *Encoder {
	return &Encoder{seed: opts.Mode == Seed, preV1: opts.PreV1, threadName: opts.ThreadID, started: map[string]bool{}, calls: map[string]*toolCall{}}
}

var _ dialect.Encoder = (*Encoder)(nil)

// Encode appends the AG-UI frames of ev. One event may become several
// frames (TEXT_MESSAGE_START before its first CONTENT, the frames that close
// a run before RUN_FINISHED, held events released on resume): each carries
// its own id (dialect.ID).
func (e *Encoder) Encode(dst []byte, ev event.Event) []byte {
	e.frames.Begin(ev.Seq)
	dst = e.encode(dst, ev)
	return e.frames.End(dst, false)
}

// Resume leaves out the frames up to after (dialect.Encoder).
func (e *Encoder) Resume(after dialect.ID) { e.frames.Resume(after) }

// KeepAlive appends a `: keep-alive` comment.
func (e *Encoder) KeepAlive(dst []byte, _ time.Time) []byte {
	return dialect.AppendComment(dst, "keep-alive")
}

// Abort appends a RUN_ERROR carrying info: AG-UI has no way to say "reconnect",
// so the client sees the run end with info's code; the run itself goes on.
func (e *Encoder) Abort(dst []byte, info event.ErrorInfo) []byte {
	v := runError{Type: RunError, Message: info.Message, Code: info.Code}
	if e.seed && e.live {
		v.scope = &scope{ThreadID: e.thread, RunID: e.runID}
	}
	e.live, e.errored = false, true
	return e.frame(dst, RunError, v)
}

func (e *Encoder) encode(dst []byte, ev event.Event) []byte {
	if e.paused && ev.Run == e.run {
		switch ev.Payload.(type) {
		case event.RunResumedData, event.RunFinishedData:
		default:
			e.held = append(e.held, ev)
			return dst
		}
	}
	e.thread = cmp.Or(e.threadName, ev.Thread)
	switch p := ev.Payload.(type) {
	case event.RunStartedData:
		if ev.Run == e.run && e.live {
			return dst
		}
		dst = e.abandon(dst, ev)
		e.reset(ev.Run)
		return e.openRun(dst, ev, cmp.Or(p.ClientRunID, ev.Run))
	case event.RunResumedData:
		if ev.Run == e.run && e.live {
			return dst
		}
		dst = e.abandon(dst, ev)
		return e.resume(dst, ev, cmp.Or(p.ClientRunID, e.derivedRunID(ev)), false)
	case event.StepStartedData:
		dst = e.ensureRun(dst, ev)
		if slices.Contains(e.steps, p.Name) {
			return dst
		}
		e.steps = append(e.steps, p.Name)
		return e.frame(dst, StepStarted, step{Type: StepStarted, Timestamp: ts(ev), scope: e.scope(), StepName: p.Name})
	case event.StepFinishedData:
		e.suspended = slices.DeleteFunc(e.suspended, func(s string) bool { return s == p.Name })
		i := slices.Index(e.steps, p.Name)
		if ev.Run != e.run || !e.live || i < 0 {
			return dst // never started in this AG-UI run: a STEP_FINISHED would be fatal
		}
		e.steps = slices.Delete(e.steps, i, i+1)
		return e.frame(dst, StepFinished, step{Type: StepFinished, Timestamp: ts(ev), scope: e.scope(), StepName: p.Name})
	case event.TextDeltaData:
		if p.Delta == "" {
			return dst // AG-UI 0.x clients reject an empty delta
		}
		p.MessageID = dialect.MessageID(p.MessageID, ev)
		dst = e.ensureRun(dst, ev)
		dst = e.closeReasoning(dst, ev)
		if e.text != p.MessageID {
			dst = e.closeText(dst, ev)
			dst = e.startText(dst, ev, p.MessageID, "assistant")
		}
		return e.frame(dst, TextMessageContent, textContent{Type: TextMessageContent, Timestamp: ts(ev), scope: e.scope(), MessageID: p.MessageID, Delta: p.Delta})
	case event.ReasoningDeltaData:
		if p.Delta == "" {
			return dst
		}
		p.MessageID = dialect.MessageID(p.MessageID, ev)
		dst = e.ensureRun(dst, ev)
		dst = e.closeText(dst, ev)
		if e.reasoning != p.MessageID {
			dst = e.closeReasoning(dst, ev)
			e.reasoning = p.MessageID
			id := reasoningID(p.MessageID)
			dst = e.frame(dst, ReasoningStart, reasoning{Type: ReasoningStart, Timestamp: ts(ev), scope: e.scope(), MessageID: id})
			dst = e.frame(dst, ReasoningMessageStart, reasoning{Type: ReasoningMessageStart, Timestamp: ts(ev), scope: e.scope(), MessageID: id, Role: "reasoning"})
		}
		return e.frame(dst, ReasoningMessageContent, reasoning{Type: ReasoningMessageContent, Timestamp: ts(ev), scope: e.scope(), MessageID: reasoningID(p.MessageID), Delta: p.Delta})
	case event.MessageCompletedData:
		return e.messageCompleted(dst, ev, p)
	case event.ToolCallStartedData:
		dst = e.ensureRun(dst, ev)
		return e.startCall(dst, ev, p.ToolCallID, p.Name, p.MessageID)
	case event.ToolCallArgsData:
		dst = e.ensureRun(dst, ev)
		c := e.call(p.ToolCallID)
		if c.ended || p.Delta == "" {
			return dst
		}
		dst = e.startCall(dst, ev, p.ToolCallID, c.name, c.parent)
		c.args = append(c.args, p.Delta...)
		v := toolArgs{Type: ToolCallArgs, Timestamp: ts(ev), scope: e.scope(), ToolCallID: p.ToolCallID, Delta: p.Delta}
		if e.seed {
			v.seedToolRef = e.seedRef(ev, c)
			if json.Valid(c.args) {
				v.Args = object(c.args)
			}
		}
		return e.frame(dst, ToolCallArgs, v)
	case event.ToolCallReadyData:
		dst = e.ensureRun(dst, ev)
		return e.endCall(dst, ev, p.ToolCallID, p.Name, p.Args)
	case event.ToolAwaitingData:
		return e.interrupt(dst, ev, p)
	case event.ToolResultData:
		return e.toolResult(dst, ev, p)
	case event.RetrievalData:
		if len(p.Hits) == 0 {
			return dst
		}
		dst = e.ensureRun(dst, ev)
		value, _ := json.Marshal(struct {
			Query string               `json:"query"`
			Hits  []event.RetrievalHit `json:"hits"`
		}{p.Query, p.Hits})
		return e.frame(dst, Custom, custom{Type: Custom, Timestamp: ts(ev), scope: e.scope(), Name: "retrieval", Value: value})
	case event.ContextPatchData:
		ops := bytes.TrimSpace(p.Patch)
		if len(ops) == 0 || ops[0] != '[' || !json.Valid(ops) {
			return dst // STATE_DELTA must be an RFC 6902 array
		}
		dst = e.ensureRun(dst, ev)
		return e.frame(dst, StateDelta, stateDelta{Type: StateDelta, Timestamp: ts(ev), scope: e.scope(), Delta: ops})
	case event.StateSnapshotData:
		state := bytes.TrimSpace(p.State)
		if len(state) == 0 || !json.Valid(state) {
			state = json.RawMessage(`{}`)
		}
		dst = e.ensureRun(dst, ev)
		return e.frame(dst, StateSnapshot, stateSnapshot{Type: StateSnapshot, Timestamp: ts(ev), scope: e.scope(), Snapshot: compact(state)})
	case event.PlanData:
		return e.custom(dst, ev, "plan", p.Plan)
	case event.CheckData:
		return e.custom(dst, ev, "check", p.Summary)
	case event.ErrorData:
		if ev.Run == e.run && e.errored {
			return dst
		}
		dst = e.ensureRun(dst, ev)
		e.unrecorded = true
		if p.Usage != nil {
			return e.runError(dst, ev, p.Message, p.Code, *p.Usage)
		}
		return e.runError(dst, ev, p.Message, p.Code)
	case event.RunFinishedData:
		e.unrecorded = false
		return e.finish(dst, ev, p)
	}
	return dst // conversation.created, iteration.started, tool.running
}

// reset forgets the previous canonical run.
func (e *Encoder) reset(run string) {
	*e = Encoder{seed: e.seed, preV1: e.preV1, frames: e.frames, threadName: e.threadName, nextRunID: e.nextRunID, thread: e.thread, run: run, ends: e.ends, onFrame: e.onFrame,
		started: map[string]bool{}, calls: map[string]*toolCall{}}
}

// NameNextRun makes id the runId of the next AG-UI run the encoder opens,
// whatever opens it. A stream that answers a resume request names the
// continuation with the request's runId this way, including when the run
// resumed through another door (the confirmations endpoint, another
// replica, a restart) or ended without resuming (an expired interrupt): the
// runId on the run's events is then not the one this client sent.
func (e *Encoder) NameNextRun(id string) { e.nextRunID = id }

// RunsEnded counts the AG-UI runs this encoder has ended (RUN_FINISHED or
// RUN_ERROR frames written, interrupts included). A stream that carries one
// AG-UI run compares it before and after each event to know when to close.
func (e *Encoder) RunsEnded() int { return e.ends }

// EndUnrecorded reports that the last RUN_ERROR came from the run's error
// event and the run's end has not been encoded yet: the run service
// publishes the end only once the run's end and usage are stored.
func (e *Encoder) EndUnrecorded() bool { return e.unrecorded }

// openRun writes RUN_STARTED and starts again the steps an interrupt closed.
func (e *Encoder) openRun(dst []byte, ev event.Event, runID string) []byte {
	if e.run != ev.Run {
		e.reset(ev.Run)
	}
	if e.nextRunID != "" {
		runID, e.nextRunID = e.nextRunID, ""
	}
	e.opened++
	e.runID, e.live, e.errored = runID, true, false
	dst = e.frame(dst, RunStarted, runStarted{Type: RunStarted, Timestamp: ts(ev), ThreadID: e.thread, RunID: runID})
	for _, s := range e.suspended {
		e.steps = append(e.steps, s)
		dst = e.frame(dst, StepStarted, step{Type: StepStarted, Timestamp: ts(ev), scope: e.scope(), StepName: s})
	}
	e.suspended = nil
	return dst
}

// derivedRunID names an AG-UI run the client did not name: the canonical run
// id for its first AG-UI run, then "<run>-<seq>" (stable across replays).
func (e *Encoder) derivedRunID(ev event.Event) string {
	if ev.Run != e.run || e.opened == 0 {
		return ev.Run
	}
	return fmt.Sprintf("%s-%d", ev.Run, ev.Seq)
}

// ensureRun opens an AG-UI run for ev's run if none is open.
func (e *Encoder) ensureRun(dst []byte, ev event.Event) []byte {
	if ev.Run == e.run && e.live {
		return dst
	}
	dst = e.abandon(dst, ev)
	return e.openRun(dst, ev, e.derivedRunID(ev))
}

// abandon ends an AG-UI run whose canonical run never finished when another
// run's events arrive (a stream missing the end of a run).
func (e *Encoder) abandon(dst []byte, ev event.Event) []byte {
	if !e.live || ev.Run == e.run {
		return dst
	}
	return e.runError(dst, ev, "The run ended without a final event.", errcode.RunIncomplete)
}

// resume opens the continuation run after an interrupt and releases the held
// events. A finishing run drops held interrupts: they are moot.
func (e *Encoder) resume(dst []byte, ev event.Event, runID string, finishing bool) []byte {
	held := e.held
	wasPaused := e.paused && ev.Run == e.run
	e.held, e.paused = nil, false
	if wasPaused {
		// A step the held events start again (the router re-routing the
		// continuation) starts in their order, not ahead of them.
		for _, h := range held {
			if p, ok := h.Payload.(event.StepStartedData); ok {
				e.suspended = slices.DeleteFunc(e.suspended, func(s string) bool { return s == p.Name })
			}
		}
	}
	dst = e.openRun(dst, ev, runID)
	if !wasPaused {
		return dst
	}
	for _, h := range held {
		if _, ok := h.Payload.(event.ToolAwaitingData); ok && finishing {
			continue
		}
		dst = e.encode(dst, h)
	}
	return dst
}

func (e *Encoder) messageCompleted(dst []byte, ev event.Event, p event.MessageCompletedData) []byte {
	p.MessageID = dialect.MessageID(p.MessageID, ev)
	dst = e.ensureRun(dst, ev)
	dst = e.closeReasoning(dst, ev)
	if e.text == p.MessageID {
		e.text = ""
		return e.frame(dst, TextMessageEnd, e.textEnd(ev, p.MessageID, &p))
	}
	dst = e.closeText(dst, ev)
	if e.started[p.MessageID] {
		// Closed early (a tool call followed its text). Standard clients
		// already have the text; seed clients need END's fields, so the
		// message is reopened (AG-UI appends nothing to it) and ended again.
		if !e.seed || p.Answer == nil {
			return dst
		}
		dst = e.startText(dst, ev, p.MessageID, p.Role)
		e.text = ""
		return e.frame(dst, TextMessageEnd, e.textEnd(ev, p.MessageID, &p))
	}
	dst = e.startText(dst, ev, p.MessageID, p.Role)
	if p.Content != "" {
		dst = e.frame(dst, TextMessageContent, textContent{Type: TextMessageContent, Timestamp: ts(ev), scope: e.scope(), MessageID: p.MessageID, Delta: p.Content})
	}
	e.text = ""
	return e.frame(dst, TextMessageEnd, e.textEnd(ev, p.MessageID, &p))
}

func (e *Encoder) startText(dst []byte, ev event.Event, id, role string) []byte {
	switch role {
	case "developer", "system", "assistant", "user":
	default:
		role = "assistant"
	}
	e.text = id
	e.started[id] = true
	return e.frame(dst, TextMessageStart, textStart{Type: TextMessageStart, Timestamp: ts(ev), scope: e.scope(), MessageID: id, Role: role})
}

// textEnd builds TEXT_MESSAGE_END; m is the completed message, nil when the
// message is closed early (by a tool call, an interrupt or the run's end).
func (e *Encoder) textEnd(ev event.Event, id string, m *event.MessageCompletedData) textEnd {
	v := textEnd{Type: TextMessageEnd, Timestamp: ts(ev), scope: e.scope(), MessageID: id}
	if !e.seed || m == nil {
		return v
	}
	a := Result(*m)
	v.seedAnswer = &seedAnswer{
		Role: cmp.Or(m.Role, "assistant"), Stage: ev.Step, Status: a.Status, Answer: a.Answer,
		KeyPoints: a.KeyPoints, ResultType: a.ResultType, SuggestedActions: a.SuggestedActions,
		UISchema: uischema.Compile(a.UIHints, a),
	}
	return v
}

// Result is the structured result of a completed message, as seed 004's
// TEXT_MESSAGE_END carries it (and the history endpoint shows it): the
// worker's answer, or for a plain message its text with result_type
// "unknown", status "failed" when it was cut short. Lists are never nil.
func Result(m event.MessageCompletedData) event.Answer {
	a := event.Answer{Answer: m.Content, ResultType: "unknown", Status: "success"}
	if m.Answer != nil {
		a = *m.Answer
	} else if m.Partial {
		a.Status = "failed" // cut short by a failure or a cancel: the worker did not finish
	}
	a.KeyPoints, a.SuggestedActions = nonNil(a.KeyPoints), nonNil(a.SuggestedActions)
	return a
}

func (e *Encoder) closeText(dst []byte, ev event.Event) []byte {
	if e.text == "" {
		return dst
	}
	id := e.text
	e.text = ""
	return e.frame(dst, TextMessageEnd, e.textEnd(ev, id, nil))
}

func (e *Encoder) closeReasoning(dst []byte, ev event.Event) []byte {
	if e.reasoning == "" {
		return dst
	}
	id := reasoningID(e.reasoning)
	e.reasoning = ""
	dst = e.frame(dst, ReasoningMessageEnd, reasoning{Type: ReasoningMessageEnd, Timestamp: ts(ev), scope: e.scope(), MessageID: id})
	return e.frame(dst, ReasoningEnd, reasoning{Type: ReasoningEnd, Timestamp: ts(ev), scope: e.scope(), MessageID: id})
}

func reasoningID(messageID string) string { return messageID + "-reasoning" }

func (e *Encoder) call(id string) *toolCall {
	c, ok := e.calls[id]
	if !ok {
		c = &toolCall{}
		e.calls[id] = c
	}
	return c
}

// startCall writes TOOL_CALL_START once per call, closing streamed text first.
func (e *Encoder) startCall(dst []byte, ev event.Event, id, name, parent string) []byte {
	c := e.call(id)
	if c.open || c.ended {
		return dst
	}
	dst = e.closeText(dst, ev)
	dst = e.closeReasoning(dst, ev)
	c.name, c.parent, c.open = name, parent, true
	v := toolStart{Type: ToolCallStart, Timestamp: ts(ev), scope: e.scope(), ToolCallID: id, ToolCallName: name, ParentMessageID: parent}
	if e.seed {
		v.seedToolRef = e.seedRef(ev, c) // its toolCallName is shadowed by the standard one
	}
	return e.frame(dst, ToolCallStart, v)
}

// endCall writes TOOL_CALL_END, preceded by what the call still lacks.
func (e *Encoder) endCall(dst []byte, ev event.Event, id, name string, args json.RawMessage) []byte {
	c := e.call(id)
	if c.ended {
		return dst
	}
	if c.name == "" {
		c.name = name
	}
	dst = e.startCall(dst, ev, id, c.name, c.parent)
	if len(c.args) == 0 {
		// Arguments never streamed: send them whole, as seed 004 does.
		full := object(args)
		c.args = full
		v := toolArgs{Type: ToolCallArgs, Timestamp: ts(ev), scope: e.scope(), ToolCallID: id, Delta: string(full)}
		if e.seed {
			v.seedToolRef, v.Args = e.seedRef(ev, c), full
		}
		dst = e.frame(dst, ToolCallArgs, v)
	}
	c.open, c.ended = false, true
	v := toolEnd{Type: ToolCallEnd, Timestamp: ts(ev), scope: e.scope(), ToolCallID: id}
	if e.seed {
		v.seedToolRef = e.seedRef(ev, c)
	}
	return e.frame(dst, ToolCallEnd, v)
}

func (e *Encoder) seedRef(ev event.Event, c *toolCall) *seedToolRef {
	return &seedToolRef{MessageID: c.parent, ToolCallName: c.name, Stage: ev.Step}
}

// closeAll ends the open text, reasoning and tool calls, as RUN_FINISHED
// requires; steps are the caller's to finish or suspend.
func (e *Encoder) closeAll(dst []byte, ev event.Event) []byte {
	dst = e.closeText(dst, ev)
	dst = e.closeReasoning(dst, ev)
	for _, id := range e.openCalls() {
		dst = e.endCall(dst, ev, id, "", nil)
	}
	return dst
}

// openCalls lists the calls started and not ended, in a stable order.
func (e *Encoder) openCalls() []string {
	var ids []string
	for id, c := range e.calls {
		if c.open {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

func (e *Encoder) finishSteps(dst []byte, ev event.Event) []byte {
	for i := len(e.steps) - 1; i >= 0; i-- {
		dst = e.frame(dst, StepFinished, step{Type: StepFinished, Timestamp: ts(ev), scope: e.scope(), StepName: e.steps[i]})
	}
	e.steps = nil
	return dst
}

func (e *Encoder) interrupt(dst []byte, ev event.Event, p event.ToolAwaitingData) []byte {
	dst = e.ensureRun(dst, ev)
	dst = e.endCall(dst, ev, p.ToolCallID, p.Name, p.Args)
	dst = e.closeAll(dst, ev)
	e.suspended = slices.Clone(e.steps)
	dst = e.finishSteps(dst, ev)
	in := interrupt{ID: p.ConfirmationID, Reason: InterruptReason, Message: p.Message, ToolCallID: p.ToolCallID,
		ResponseSchema: ResponseSchema, Metadata: interruptMeta{ToolName: p.Name, Args: object(p.Args)}}
	if !p.ExpiresAt.IsZero() {
		in.ExpiresAt = dialect.Millis(p.ExpiresAt)
	}
	// CopilotKit's interrupt hooks (useInterrupt, useLangGraphInterrupt)
	// know no RUN_FINISHED outcome: they listen for this CUSTOM event.
	ci := copilotInterrupt{ID: in.ID, Reason: in.Reason, Message: in.Message, ToolCallID: in.ToolCallID,
		ToolName: p.Name, Args: in.Metadata.Args, ExpiresAt: in.ExpiresAt}
	value, _ := json.Marshal(ci)
	dst = e.frame(dst, Custom, custom{Type: Custom, Timestamp: ts(ev), scope: e.scope(), Name: OnInterrupt, Value: value})
	v := runFinished{Type: RunFinished, Timestamp: ts(ev), ThreadID: e.thread, RunID: e.runID,
		Outcome: &outcome{Type: OutcomeInterrupt, Interrupts: []interrupt{in}}}
	e.live, e.paused = false, true
	return e.frame(dst, RunFinished, v)
}

func (e *Encoder) toolResult(dst []byte, ev event.Event, p event.ToolResultData) []byte {
	dst = e.ensureRun(dst, ev)
	c := e.call(p.ToolCallID)
	if c.open {
		dst = e.endCall(dst, ev, p.ToolCallID, p.Name, p.Args)
	}
	content := p.Content
	if content == "" && len(p.Output) > 0 && json.Valid(p.Output) {
		content = string(compact(p.Output))
	}
	v := toolResult{Type: ToolCallResult, Timestamp: ts(ev), scope: e.scope(),
		MessageID: cmp.Or(p.MessageID, p.ToolCallID+"-result"), ToolCallID: p.ToolCallID, Content: content, Role: "tool"}
	if e.seed {
		v.seedResult = &seedResult{Stage: ev.Step, ToolName: cmp.Or(p.Name, c.name), ToolCallID: p.ToolCallID,
			ToolCallArgs: object(p.Args), Status: cmp.Or(p.Status, event.ToolSuccess), Result: content, Error: p.Error}
	}
	return e.frame(dst, ToolCallResult, v)
}

func (e *Encoder) custom(dst []byte, ev event.Event, name string, value json.RawMessage) []byte {
	value = bytes.TrimSpace(value)
	if len(value) == 0 || string(value) == "null" || !json.Valid(value) {
		return dst
	}
	dst = e.ensureRun(dst, ev)
	return e.frame(dst, Custom, custom{Type: Custom, Timestamp: ts(ev), scope: e.scope(), Name: name, Value: value})
}

// runError ends the open AG-UI run with RUN_ERROR. Text and reasoning are
// closed first so the client keeps them as whole messages.
func (e *Encoder) runError(dst []byte, ev event.Event, message, code string, usage ...event.Usage) []byte {
	dst = e.closeText(dst, ev)
	dst = e.closeReasoning(dst, ev)
	v := runError{Type: RunError, Timestamp: ts(ev), scope: e.scope(), Message: cmp.Or(message, "The run failed."), Code: code}
	if len(usage) > 0 {
		v.Usage = dialect.UsageList(usage[0])
	}
	e.live, e.errored, e.steps = false, true, nil
	return e.frame(dst, RunError, v)
}

func (e *Encoder) finish(dst []byte, ev event.Event, p event.RunFinishedData) []byte {
	if ev.Run == e.run && e.errored && !e.live && !e.paused {
		return dst // RUN_ERROR already ended it
	}
	if e.paused && ev.Run == e.run {
		dst = e.resume(dst, ev, e.derivedRunID(ev), true)
		if ev.Run == e.run && e.errored && !e.live {
			return dst
		}
	}
	dst = e.ensureRun(dst, ev)
	switch p.Status {
	case event.StatusSucceeded:
		dst = e.closeAll(dst, ev)
		dst = e.finishSteps(dst, ev)
		v := runFinished{Type: RunFinished, Timestamp: ts(ev), ThreadID: e.thread, RunID: e.runID, Usage: dialect.UsageList(p.Usage)}
		if p.Answer != nil {
			v.Result, _ = json.Marshal(publicAnswer(*p.Answer))
		}
		if len(p.PendingToolCalls) > 0 && !e.preV1 {
			v.Outcome = &outcome{Type: OutcomeSuccess, PendingToolCallIDs: p.PendingToolCalls}
		}
		e.live = false
		return e.frame(dst, RunFinished, v)
	case event.StatusCancelled:
		if !e.preV1 {
			// AG-UI 1.0: stopped by whoever ran it, not failed.
			dst = e.closeAll(dst, ev)
			dst = e.finishSteps(dst, ev)
			v := runFinished{Type: RunFinished, Timestamp: ts(ev), ThreadID: e.thread, RunID: e.runID, Usage: dialect.UsageList(p.Usage),
				Outcome: &outcome{Type: OutcomeCancelled}}
			e.live = false
			return e.frame(dst, RunFinished, v)
		}
		msg := "The run was cancelled."
		if p.Error != nil && p.Error.Message != "" {
			msg = p.Error.Message
		}
		return e.runError(dst, ev, msg, CodeCancelled, p.Usage)
	default:
		var info event.ErrorInfo
		if p.Error != nil {
			info = *p.Error
		}
		return e.runError(dst, ev, info.Message, info.Code, p.Usage)
	}
}

// Answer is the public form of a structured answer: RUN_FINISHED's result.
// The worker's raw ui_hints become the compiled ui_schema.
type Answer struct {
	Status           string          `json:"status"`
	Answer           string          `json:"answer"`
	KeyPoints        []string        `json:"key_points"`
	ResultType       string          `json:"result_type"`
	SuggestedActions []string        `json:"suggested_actions"`
	UISchema         uischema.Schema `json:"ui_schema"`
}

func publicAnswer(a event.Answer) Answer {
	return Answer{Status: a.Status, Answer: a.Answer, KeyPoints: nonNil(a.KeyPoints), ResultType: a.ResultType,
		SuggestedActions: nonNil(a.SuggestedActions), UISchema: uischema.Compile(a.UIHints, a)}
}

func (e *Encoder) scope() *scope {
	if !e.seed {
		return nil
	}
	return &scope{ThreadID: e.thread, RunID: e.runID}
}

// frame marshals v as one frame. Only plain data and checked RawMessages
// reach here, so Marshal does not fail; if it did, the frame is a RUN_ERROR
// rather than a broken stream.
func (e *Encoder) frame(dst []byte, typ string, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		typ = RunError
		b, _ = json.Marshal(runError{Type: RunError, Message: "an event could not be encoded", Code: errcode.EncodeFailed})
	}
	if typ == RunFinished || typ == RunError {
		e.ends++
	}
	if e.onFrame != nil {
		e.onFrame(typ, v)
	}
	return e.frames.Append(dst, typ, b) // outside Encode (Abort): no id
}

func ts(ev event.Event) int64 { return millis(ev.Time) }

// object returns raw as a JSON object, or {} when it is empty, invalid, null
// or not an object: AG-UI clients parse tool arguments as an object.
func object(raw []byte) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' || !json.Valid(raw) {
		return json.RawMessage(`{}`)
	}
	return compact(raw)
}

func compact(raw []byte) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return json.RawMessage(raw)
	}
	return b.Bytes()
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
