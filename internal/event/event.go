// Package event is the canonical event model: the one vocabulary in which a run
// reports what it does. Storage keeps these events, the bus fans them out, and
// every wire format (package dialect and its children) is a translation of them.
//
// Invariants:
//   - Every event belongs to one tenant, one thread (conversation) and one run.
//   - Seq increases by one per thread, across runs; it is the SSE id of
//     every replayable frame and the order of the event log. The one gap is
//     after a crash: seqs an executor reserved but never wrote are skipped,
//     never reused, and a SeqSkipped event at the end of the gap says so.
//   - Only the engine creates events; dialects only translate them.
//   - Payloads are plain data: no wire-format structs, no store types.
package event

import (
	"encoding/json"
	"fmt"
	"time"
)

// Type names a kind of canonical event. The names are internal (the wire
// names belong to each dialect) but they are stored, so they never change.
type Type string

// The canonical event types.
const (
	ConversationCreated Type = "conversation.created"
	RunStarted          Type = "run.started"
	RunResumed          Type = "run.resumed" // a paused run continues after a decision
	StepStarted         Type = "step.started"
	StepFinished        Type = "step.finished"
	IterationStarted    Type = "iteration.started" // one model call
	TextDelta           Type = "text.delta"
	ReasoningDelta      Type = "reasoning.delta"
	MessageCompleted    Type = "message.completed"
	ToolCallStarted     Type = "tool.call.started" // name and id known
	ToolCallArgs        Type = "tool.call.args"    // a fragment of the JSON arguments
	ToolCallReady       Type = "tool.call.ready"   // arguments complete; call pending
	ToolAwaiting        Type = "tool.awaiting"     // paused for a person's decision
	ToolRunning         Type = "tool.running"      // the tool is executing
	ToolResult          Type = "tool.result"       // the call ended
	Retrieval           Type = "retrieval"         // retrieval hits injected into context
	ContextPatch        Type = "context.patch"     // RFC 6902 patch of the run's shared state
	StateSnapshot       Type = "state.snapshot"    // the thread's whole shared state
	Plan                Type = "plan"              // a planner's structured plan
	Check               Type = "check"             // a checker's verdict
	Error               Type = "error"             // a failure, always followed by RunFinished
	RunFinished         Type = "run.finished"      // last event of a run
	// SeqSkipped marks seqs that were reserved but never written (their
	// executor died): the stream moves past them. No client ever sees it.
	SeqSkipped Type = "seq.skipped"
)

// Event is one thing that happened in a run.
type Event struct {
	Tenant string
	Thread string // the conversation id
	Run    string
	Seq    int64
	Time   time.Time
	Type   Type
	// Turn groups the events answering one user input (seed 002 turn_id).
	Turn string
	// Iteration is the 1-based model call within the run the event belongs to; 0 when none.
	Iteration int
	// Step is the named stage emitting the event (router, worker, planner, executor, check).
	Step    string
	Payload Payload
}

// Payload is the typed body of an event; its Type names the event kind.
type Payload interface {
	EventType() Type
}

// New builds an event of the payload's type. Tenant, thread, run, seq and time
// are filled in by the run's emitter.
func New(p Payload) Event { return Event{Type: p.EventType(), Payload: p} }

// Terminal reports whether e ends its run.
func (e Event) Terminal() bool { return e.Type == RunFinished }

// FirstSeq is the first seq e accounts for: From for a SeqSkipped event, Seq
// for any other.
func (e Event) FirstSeq() int64 {
	if p, ok := e.Payload.(SeqSkippedData); ok && p.From > 0 && p.From < e.Seq {
		return p.From
	}
	return e.Seq
}

// Run statuses carried by RunFinished and stored on runs.
const (
	StatusSucceeded = "succeeded"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
)

// ErrorInfo is a failure safe to show a user: a stable code and readable text.
type ErrorInfo struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Usage counts a run's model tokens and their cost: the totals, and the
// same counts per model (Models, in the order the models were first
// called), as the providers reported them at the time of each call.
type Usage struct {
	InputTokens     int `json:"inputTokens,omitempty"`
	OutputTokens    int `json:"outputTokens,omitempty"`
	ReasoningTokens int `json:"reasoningTokens,omitempty"`
	// CachedInputTokens are a part of InputTokens: those read from the
	// provider's prompt cache.
	CachedInputTokens int `json:"cachedInputTokens,omitempty"`
	// Estimated: some call's provider reported no usage, and its counts
	// are an approximation.
	Estimated bool `json:"estimated,omitempty"`
	// Cost is in nano-units (1e-9) of Currency, priced when each call was
	// made; 0 for models without a price. Currency is "" when no call was
	// priced, and "mixed" when calls were priced in several currencies
	// (Models keeps each one's).
	Cost     int64        `json:"cost,omitempty"`
	Currency string       `json:"currency,omitempty"`
	Models   []ModelUsage `json:"models,omitempty"`
}

// ModelUsage is the usage of one model (provider and model name) in a run.
type ModelUsage struct {
	Provider          string `json:"provider,omitempty"`
	Model             string `json:"model"`
	Calls             int    `json:"calls,omitempty"`
	InputTokens       int    `json:"inputTokens,omitempty"`
	OutputTokens      int    `json:"outputTokens,omitempty"`
	ReasoningTokens   int    `json:"reasoningTokens,omitempty"`
	CachedInputTokens int    `json:"cachedInputTokens,omitempty"`
	Estimated         bool   `json:"estimated,omitempty"`
	Cost              int64  `json:"cost,omitempty"`
	Currency          string `json:"currency,omitempty"`
}

// TotalTokens is input plus output tokens.
func (u Usage) TotalTokens() int { return u.InputTokens + u.OutputTokens }

// Empty reports whether u counts nothing.
func (u Usage) Empty() bool { return u.TotalTokens() == 0 && u.Cost == 0 && len(u.Models) == 0 }

// Add sums two usages; their models are merged by provider and model.
func (u Usage) Add(o Usage) Usage {
	out := Usage{
		InputTokens: u.InputTokens + o.InputTokens, OutputTokens: u.OutputTokens + o.OutputTokens,
		ReasoningTokens: u.ReasoningTokens + o.ReasoningTokens, CachedInputTokens: u.CachedInputTokens + o.CachedInputTokens,
		Estimated: u.Estimated || o.Estimated, Cost: u.Cost + o.Cost, Currency: sumCurrency(u.Currency, o.Currency),
	}
	if len(u.Models)+len(o.Models) > 0 {
		out.Models = append(make([]ModelUsage, 0, len(u.Models)+len(o.Models)), u.Models...)
		for _, m := range o.Models {
			out.Models = addModel(out.Models, m)
		}
	}
	return out
}

// AddCall counts one model call.
func (u Usage) AddCall(m ModelUsage) Usage {
	if m.Calls == 0 {
		m.Calls = 1
	}
	return u.Add(Usage{InputTokens: m.InputTokens, OutputTokens: m.OutputTokens, ReasoningTokens: m.ReasoningTokens,
		CachedInputTokens: m.CachedInputTokens, Estimated: m.Estimated, Cost: m.Cost, Currency: m.Currency, Models: []ModelUsage{m}})
}

func addModel(ms []ModelUsage, m ModelUsage) []ModelUsage {
	for i := range ms {
		if ms[i].Provider == m.Provider && ms[i].Model == m.Model {
			a := &ms[i]
			a.Calls += m.Calls
			a.InputTokens += m.InputTokens
			a.OutputTokens += m.OutputTokens
			a.ReasoningTokens += m.ReasoningTokens
			a.CachedInputTokens += m.CachedInputTokens
			a.Estimated = a.Estimated || m.Estimated
			a.Cost += m.Cost
			a.Currency = sumCurrency(a.Currency, m.Currency)
			return ms
		}
	}
	return append(ms, m)
}

// MixedCurrency is the Currency of a sum of costs in several currencies.
const MixedCurrency = "mixed"

func sumCurrency(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "" || a == b:
		return a
	}
	return MixedCurrency
}

// ConversationCreatedData announces a conversation created by the run's request.
type ConversationCreatedData struct {
	ConversationID string `json:"conversationId"`
	Title          string `json:"title,omitempty"`
}

// RunStartedData opens a run.
type RunStartedData struct {
	ConversationID string `json:"conversationId"`
	Input          string `json:"input"`
	UserMessageID  string `json:"userMessageId,omitempty"`
	Engine         string `json:"engine,omitempty"`
	// ClientRunID is the id a client chose for the run (AG-UI runId), when it chose one.
	ClientRunID string `json:"clientRunId,omitempty"`
	// AgentID and AgentVersion name the agent version that answers (0 for
	// the built-in default agent); empty for a run without agents.
	AgentID      string `json:"agentId,omitempty"`
	AgentVersion int    `json:"agentVersion,omitempty"`
}

// RunResumedData continues a paused run after a person decided.
type RunResumedData struct {
	ConfirmationID string `json:"confirmationId"`
	Decision       string `json:"decision"` // approve or reject
	ClientRunID    string `json:"clientRunId,omitempty"`
}

// StepData names a stage that starts or finishes.
type StepData struct {
	Name string `json:"name"`
}

// IterationData opens one model call; Event.Iteration numbers it.
type IterationData struct {
	Model string `json:"model,omitempty"`
}

// TextDeltaData is a piece of the assistant's answer.
type TextDeltaData struct {
	MessageID string `json:"messageId"`
	Delta     string `json:"delta"`
}

// ReasoningDeltaData is a piece of the model's visible reasoning.
type ReasoningDeltaData struct {
	MessageID string `json:"messageId"`
	Delta     string `json:"delta"`
}

// Answer is the structured form of a final answer (seed 004 TEXT_MESSAGE_END).
type Answer struct {
	Status           string          `json:"status"` // success, partial_success, failed
	Answer           string          `json:"answer"`
	KeyPoints        []string        `json:"key_points"`
	ResultType       string          `json:"result_type"` // execution_report, clarification, error_report, unknown
	SuggestedActions []string        `json:"suggested_actions"`
	UIHints          json.RawMessage `json:"ui_hints,omitempty"`
}

// MessageCompletedData carries a finished assistant message.
type MessageCompletedData struct {
	MessageID string  `json:"messageId"`
	Role      string  `json:"role"`
	Content   string  `json:"content"`
	Partial   bool    `json:"partial,omitempty"` // cut short by a failure or cancel
	Answer    *Answer `json:"answer,omitempty"`
}

// ToolCallStartedData opens a tool call.
type ToolCallStartedData struct {
	ToolCallID string `json:"toolCallId"`
	Name       string `json:"name"`
	MessageID  string `json:"messageId,omitempty"` // the assistant message that made the call
}

// ToolCallArgsData is a fragment of a call's JSON arguments.
type ToolCallArgsData struct {
	ToolCallID string `json:"toolCallId"`
	Delta      string `json:"delta"`
}

// ToolCallReadyData carries the complete arguments; the call is pending.
type ToolCallReadyData struct {
	ToolCallID string          `json:"toolCallId"`
	Name       string          `json:"name"`
	Args       json.RawMessage `json:"args"`
	// Frontend marks a tool the client executes (AG-UI frontend tools).
	Frontend bool `json:"frontend,omitempty"`
}

// ToolAwaitingData pauses the run until a person approves or rejects the call.
type ToolAwaitingData struct {
	ToolCallID     string          `json:"toolCallId"`
	Name           string          `json:"name"`
	Args           json.RawMessage `json:"args"`
	ConfirmationID string          `json:"confirmationId"`
	ExpiresAt      time.Time       `json:"expiresAt"`
	Message        string          `json:"message"`
}

// ToolRunningData says the tool is executing (after approval, when one was needed).
type ToolRunningData struct {
	ToolCallID string          `json:"toolCallId"`
	Name       string          `json:"name"`
	Args       json.RawMessage `json:"args"`
}

// Tool call outcomes, in seed 002/004 terms.
const (
	ToolSuccess = "success"
	ToolFailure = "failure"
	ToolPartial = "partial"
)

// ToolResultData ends a tool call.
type ToolResultData struct {
	ToolCallID string          `json:"toolCallId"`
	Name       string          `json:"name"`
	Args       json.RawMessage `json:"args"`
	Status     string          `json:"status"`           // success, failure, partial
	Output     json.RawMessage `json:"output,omitempty"` // structured result
	Content    string          `json:"content"`          // short text the model saw
	Error      string          `json:"error,omitempty"`
	// Denied is set when a person rejected the call.
	Denied bool `json:"denied,omitempty"`
	// MessageID is the stored role=tool message holding this result.
	MessageID string `json:"messageId,omitempty"`
}

// RetrievalHit is one retrieved snippet.
type RetrievalHit struct {
	Content string  `json:"content"`
	Source  string  `json:"source"`
	Score   float64 `json:"score"`
	// DocumentID and ChunkID name the knowledge chunk (for a remembered
	// message: its conversation and the message).
	DocumentID string `json:"documentId"`
	ChunkID    string `json:"chunkId"`
}

// RetrievalData reports what retrieval put into the model's context.
type RetrievalData struct {
	Query string         `json:"query"`
	Hits  []RetrievalHit `json:"hits"`
}

// ContextPatchData is an RFC 6902 patch of the run's shared state.
type ContextPatchData struct {
	Patch json.RawMessage `json:"patch"`
}

// StateSnapshotData is the whole shared state of the thread (AG-UI
// RunAgentInput.state, kept per conversation), as a run begins with it; the
// run's ContextPatch events change it from there.
type StateSnapshotData struct {
	State json.RawMessage `json:"state"`
}

// PlanData is a planner's plan.
type PlanData struct {
	Plan json.RawMessage `json:"plan"`
}

// CheckData is a checker's verdict.
type CheckData struct {
	Summary json.RawMessage `json:"summary"`
}

// ErrorData reports a failure; a RunFinished with status failed follows.
type ErrorData struct {
	ErrorInfo
	// Usage, when set, is the run's usage: on the error that ends a run,
	// emitted by the run service as it finishes it (formats whose failed
	// end is this error carry it there, as AG-UI's RUN_ERROR does).
	Usage *Usage `json:"usage,omitempty"`
}

// RunFinishedData closes a run.
type RunFinishedData struct {
	Status string     `json:"status"` // succeeded, failed, cancelled
	Error  *ErrorInfo `json:"error,omitempty"`
	Usage  Usage      `json:"usage"`
	// Answer is the final structured answer when there is one.
	Answer *Answer `json:"answer,omitempty"`
	// PendingToolCalls are frontend tool calls the run left for the client
	// to answer (AG-UI pendingToolCallIds); the client's tool results start
	// the next run.
	PendingToolCalls []string `json:"pendingToolCallIds,omitempty"`
}

func (ConversationCreatedData) EventType() Type { return ConversationCreated }
func (RunStartedData) EventType() Type          { return RunStarted }
func (RunResumedData) EventType() Type          { return RunResumed }
func (IterationData) EventType() Type           { return IterationStarted }
func (TextDeltaData) EventType() Type           { return TextDelta }
func (ReasoningDeltaData) EventType() Type      { return ReasoningDelta }
func (MessageCompletedData) EventType() Type    { return MessageCompleted }
func (ToolCallStartedData) EventType() Type     { return ToolCallStarted }
func (ToolCallArgsData) EventType() Type        { return ToolCallArgs }
func (ToolCallReadyData) EventType() Type       { return ToolCallReady }
func (ToolAwaitingData) EventType() Type        { return ToolAwaiting }
func (ToolRunningData) EventType() Type         { return ToolRunning }
func (ToolResultData) EventType() Type          { return ToolResult }
func (RetrievalData) EventType() Type           { return Retrieval }
func (ContextPatchData) EventType() Type        { return ContextPatch }
func (StateSnapshotData) EventType() Type       { return StateSnapshot }
func (PlanData) EventType() Type                { return Plan }
func (CheckData) EventType() Type               { return Check }
func (ErrorData) EventType() Type               { return Error }
func (RunFinishedData) EventType() Type         { return RunFinished }

// SeqSkippedData says the seqs From..Event.Seq-1 of the thread were never
// written: a client that saw some of them moves on to Event.Seq+1.
type SeqSkippedData struct {
	From int64 `json:"from"`
}

func (SeqSkippedData) EventType() Type { return SeqSkipped }

// StepStartedData and StepFinishedData share StepData's shape.
type (
	StepStartedData  StepData
	StepFinishedData StepData
)

func (StepStartedData) EventType() Type  { return StepStarted }
func (StepFinishedData) EventType() Type { return StepFinished }

// decoders maps each type to a function decoding its payload; adding a type
// without a decoder is caught by TestEveryTypeDecodes.
var decoders = map[Type]func([]byte) (Payload, error){
	ConversationCreated: decode[ConversationCreatedData],
	RunStarted:          decode[RunStartedData],
	RunResumed:          decode[RunResumedData],
	StepStarted:         decode[StepStartedData],
	StepFinished:        decode[StepFinishedData],
	IterationStarted:    decode[IterationData],
	TextDelta:           decode[TextDeltaData],
	ReasoningDelta:      decode[ReasoningDeltaData],
	MessageCompleted:    decode[MessageCompletedData],
	ToolCallStarted:     decode[ToolCallStartedData],
	ToolCallArgs:        decode[ToolCallArgsData],
	ToolCallReady:       decode[ToolCallReadyData],
	ToolAwaiting:        decode[ToolAwaitingData],
	ToolRunning:         decode[ToolRunningData],
	ToolResult:          decode[ToolResultData],
	Retrieval:           decode[RetrievalData],
	ContextPatch:        decode[ContextPatchData],
	StateSnapshot:       decode[StateSnapshotData],
	Plan:                decode[PlanData],
	Check:               decode[CheckData],
	Error:               decode[ErrorData],
	RunFinished:         decode[RunFinishedData],
	SeqSkipped:          decode[SeqSkippedData],
}

func decode[T Payload](b []byte) (Payload, error) {
	var p T
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, err
	}
	return p, nil
}

// Types lists every canonical type, for tests and documentation.
func Types() []Type {
	out := make([]Type, 0, len(decoders))
	for t := range decoders {
		out = append(out, t)
	}
	return out
}

// EncodePayload is the storage form of a payload: its JSON.
func EncodePayload(p Payload) ([]byte, error) { return json.Marshal(p) }

// DecodePayload restores a stored payload of type t.
func DecodePayload(t Type, b []byte) (Payload, error) {
	d, ok := decoders[t]
	if !ok {
		return nil, fmt.Errorf("event: unknown type %q", t)
	}
	p, err := d(b)
	if err != nil {
		return nil, fmt.Errorf("event: decode %s payload: %w", t, err)
	}
	return p, nil
}
