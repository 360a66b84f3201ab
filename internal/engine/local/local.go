package local

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/engine"
	"github.com/agentchat/agentchat/internal/errcode"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/llm"
	"github.com/agentchat/agentchat/internal/telemetry"
	"github.com/agentchat/agentchat/internal/tool"
)

// Config configures the agent loop.
type Config struct {
	Model llm.Model
	Tools *tool.Registry
	// MaxIterations bounds model calls per run. Default engine.DefaultMaxIterations.
	MaxIterations int
	SystemPrompt  string
	Logger        *slog.Logger
	// Retriever, when set, adds retrieved context to each new turn (context.go).
	Retriever Retriever
	// Prompt, when set, assembles the system prompt per tenant in place of SystemPrompt.
	Prompt PromptSource
	// Blobs and InlineBytes: a tool output over InlineBytes is stored out of
	// line and its message keeps {"_ref": id}. Zero InlineBytes keeps all inline.
	Blobs       BlobStore
	InlineBytes int
	// Files reads the files user messages attach (files.go); nil shows the
	// model a note in place of each.
	Files FileReader
}

// Agent is the local engine. It is safe for concurrent runs.
type Agent struct {
	model   llm.Model
	tools   *tool.Registry
	maxIter int
	system  string
	log     *slog.Logger

	retriever   Retriever
	prompt      PromptSource
	blobs       BlobStore
	inlineBytes int
	files       FileReader
}

var _ engine.Engine = (*Agent)(nil)

// New returns the local agent loop.
func New(cfg Config) *Agent {
	return &Agent{
		model: cfg.Model, tools: cfg.Tools, maxIter: cmp.Or(max(cfg.MaxIterations, 0), engine.DefaultMaxIterations), system: cfg.SystemPrompt,
		log:       cmpLogger(cfg.Logger),
		retriever: cfg.Retriever, prompt: cfg.Prompt, blobs: cfg.Blobs, inlineBytes: cfg.InlineBytes, files: cfg.Files,
	}
}

func cmpLogger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}

// paused is the state of a run waiting for decisions.
type paused struct {
	Iteration int         `json:"iteration"`
	Awaiting  []string    `json:"awaiting"` // tool call ids still to be decided
	Usage     event.Usage `json:"usage"`
	// Frontend are calls of the same turn the client must answer; once the
	// decisions are in, the run ends with them pending.
	Frontend []string `json:"frontend,omitempty"`
	// Options are the request's choices (structured answer, frontend tools,
	// context), kept for the continuation: a decision carries none.
	Options *engine.Options `json:"options,omitempty"`
}

type runner struct {
	a     *Agent
	t     *engine.Task // the caller's (engine.TaskExecutor); resuming sets its Options
	h     engine.Host
	log   *slog.Logger // lines about the run: they carry its run_id and trace_id
	usage event.Usage
	// retrieved is the turn's retrieval until the first assistant message
	// stored keeps it (assistantMeta).
	retrieved *event.RetrievalData
	// interrupted: the run was stopped by a new input (engine.ErrInterrupted).
	interrupted bool
}

// assistantMeta completes the metadata of an assistant message the run
// stores with what the live stream showed around it: the call's reasoning,
// and on the turn's first message its retrieval.
func (r *runner) assistantMeta(m chat.AssistantMeta, reasoning string) json.RawMessage {
	m.Reasoning, m.Retrieval, r.retrieved = reasoning, r.retrieved, nil
	return m.Marshal()
}

// Execute runs or resumes t.
func (a *Agent) Execute(ctx context.Context, t engine.Task, h engine.Host) engine.Outcome {
	return *a.runner(&t, h).execute(ctx)
}

// ExecuteTask is Execute with t and the outcome by pointer (engine.TaskExecutor).
func (a *Agent) ExecuteTask(ctx context.Context, t *engine.Task, h engine.Host, o *engine.Outcome) {
	*o = *a.runner(t, h).execute(ctx)
}

// runner returns the runner of t.
//
//go:noinline
func (a *Agent) runner(t *engine.Task, h engine.Host) *runner {
	return &runner{a: a, t: t, h: h, log: telemetry.RunLogger(a.log, t.Run)}
}

// execute runs the model calls and tools of r.t. Its frame and Execute's
// stay below the stream its model calls wait on (see iterate), so what is
// done only between calls is in functions of their own.
//
//go:noinline
func (r *runner) execute(ctx context.Context) *engine.Outcome {
	iteration, history := 0, r.t.History
	if r.t.Resume != nil {
		var o *engine.Outcome
		if iteration, history, o = r.resume(ctx); o != nil {
			return o
		}
	}
	msgs := BuildContext(r.systemPrompt(), history)
	msgs = r.loadFiles(ctx, msgs) // files.go
	if r.t.Resume == nil {
		msgs = r.retrieve(ctx, msgs) // context.go
	}
	maxIter := r.maxIterations()
	for iteration < maxIter {
		if o := r.between(ctx, iteration); o != nil {
			return o
		}
		iteration++
		out, o := r.iterate(ctx, iteration, msgs)
		if o != nil {
			return o
		}
		if len(out.calls) == 0 {
			return &engine.Outcome{Status: engine.StatusSucceeded, Usage: r.usage, Answer: out.answer}
		}
		if msgs, o = r.tools(ctx, iteration, msgs, &out); o != nil {
			return o
		}
	}
	text := fmt.Sprintf("I stopped after %d steps without reaching a final answer. Ask me to continue, or narrow the request.", maxIter)
	r.completeMessage(ctx, iteration, chat.NewID(), text, "", false)
	return &engine.Outcome{Status: engine.StatusSucceeded, Usage: r.usage}
}

// resume takes up a paused run: its iteration, the history with the
// confirmation's decision, or the Outcome that ends it at once.
//
//go:noinline
func (r *runner) resume(ctx context.Context) (int, []chat.Message, *engine.Outcome) {
	var st paused
	if err := json.Unmarshal(r.t.Run.State, &st); err != nil {
		o := failed(errcode.ResumeFailed, "The paused run's state could not be read.", r.usage)
		return 0, nil, &o
	}
	iteration := st.Iteration
	r.usage = st.Usage
	if st.Options != nil {
		r.t.Options = *st.Options
	}
	c := r.t.Resume.Confirmation
	decision := "approve"
	if c.Status != chat.ConfirmApproved {
		decision = "reject"
	}
	r.h.Emit(ctx, event.Event{Iteration: iteration, Payload: event.RunResumedData{ConfirmationID: c.ID, Decision: decision, ClientRunID: r.t.Resume.ClientRunID}})
	msg, expired := r.decided(ctx, iteration, c)
	history := append(r.t.History, msg)
	st.Awaiting = slices.DeleteFunc(st.Awaiting, func(id string) bool { return id == c.ToolCallID })
	var o engine.Outcome
	switch {
	case expired:
		o = r.finishExpired(ctx, iteration, c)
	case len(st.Awaiting) > 0:
		st.Usage = r.usage
		o = r.pause(st)
	case len(st.Frontend) > 0:
		o = engine.Outcome{Status: engine.StatusSucceeded, Usage: r.usage, Pending: st.Frontend}
	default:
		return iteration, history, nil
	}
	return iteration, history, &o
}

// between ends the run before its next model call when it was stopped or,
// after its first call (or on resuming), when its budgets are spent.
//
//go:noinline
func (r *runner) between(ctx context.Context, iteration int) *engine.Outcome {
	if o := engine.Stopped(ctx); o != nil {
		o.Usage = r.usage
		return o
	}
	if iteration > 0 || r.t.Resume != nil {
		return engine.OverBudget(ctx, *r.t, r.usage)
	}
	return nil
}

// tools runs the tool calls of a model call's answer and returns the
// messages for the next call, or the Outcome that ends the run.
//
//go:noinline
func (r *runner) tools(ctx context.Context, iteration int, msgs []llm.Message, out *turnOut) ([]llm.Message, *engine.Outcome) {
	calls, frontend := r.frontendCalls(ctx, iteration, out.calls)
	results, awaiting, announce := r.runTools(ctx, iteration, calls)
	if o := engine.Stopped(ctx); o != nil {
		o.Usage = r.usage
		return nil, o
	}
	if len(awaiting) > 0 {
		o := r.pause(paused{Iteration: iteration, Awaiting: awaiting, Usage: r.usage, Frontend: frontend})
		o.Announce = announce
		return nil, &o
	}
	if len(frontend) > 0 {
		return nil, &engine.Outcome{Status: engine.StatusSucceeded, Usage: r.usage, Pending: frontend}
	}
	msgs = append(msgs, out.assistant)
	return append(msgs, results...), nil
}

// model answers the run's model calls: the agent's, else the engine's.
func (r *runner) model() llm.Model {
	if ag := r.t.Agent; ag != nil && ag.Model != nil {
		return ag.Model
	}
	return r.a.model
}

// maxIterations bounds the run's model calls: the agent's, else the engine's.
func (r *runner) maxIterations() int {
	if ag := r.t.Agent; ag != nil && ag.MaxIterations > 0 {
		return ag.MaxIterations
	}
	return r.a.maxIter
}

// temperature is the agent's sampling temperature, nil for the provider's default.
func (r *runner) temperature() *float64 {
	if ag := r.t.Agent; ag != nil {
		return ag.Temperature
	}
	return nil
}

func failed(code, msg string, u event.Usage) engine.Outcome {
	return engine.Outcome{Status: engine.StatusFailed, Error: &event.ErrorInfo{Code: code, Message: msg}, Usage: u}
}

func (r *runner) pause(st paused) engine.Outcome {
	if o := r.t.Options; o.Structured || len(o.FrontendTools) > 0 || len(o.Context) > 0 || o.Allowed != nil || o.State != nil {
		st.Options = &o
	}
	b, _ := json.Marshal(st)
	return engine.Outcome{Status: engine.StatusAwaiting, State: b, Usage: r.usage, Awaiting: st.Awaiting}
}

type turnOut struct {
	assistant llm.Message
	calls     []llm.ToolCall
	answer    *event.Answer
}

// iterate makes one model call, streaming its events. A non-nil Outcome ends the run.
//
// It waits for every token of the call, deep in the run goroutine's stack,
// so what it does before and after the stream is in functions of their
// own (open, streamed, callFailed) and events go out through emit: their
// locals would otherwise sit in iterate's frame through the whole stream,
// and the stack a run waits on is the largest part of an active stream's
// memory (docs/benchmarks.md, issue 25, eighth round).
func (r *runner) iterate(ctx context.Context, it int, msgs []llm.Message) (turnOut, *engine.Outcome) {
	model := r.model()
	stream, err := r.open(ctx, it, model, msgs)
	msgID := chat.NewID()
	var acc llm.Accumulator
	if err != nil {
		return r.callFailed(ctx, it, msgID, &acc, err)
	}
	var shown answerText // what a structured answer shows of its JSON
	var started map[int]string
	for stream.Next() {
		c := stream.Chunk()
		acc.Add(c)
		switch {
		case c.Text != "":
			if d := r.visible(&shown, c.Text); d != "" {
				r.emit(ctx, it, event.TextDeltaData{MessageID: msgID, Delta: d})
			}
		case c.Reasoning != "":
			r.emit(ctx, it, event.ReasoningDeltaData{MessageID: msgID, Delta: c.Reasoning})
		case c.ToolCall != nil:
			started = r.toolCallDelta(ctx, it, msgID, c.ToolCall, started)
		}
	}
	err = stream.Err()
	stream.Close()
	return r.streamed(ctx, it, model, msgID, &acc, started, err)
}

// emit announces an event of the run's iteration it.
//
//go:noinline
func (r *runner) emit(ctx context.Context, it int, p event.Payload) {
	r.h.Emit(ctx, event.Event{Iteration: it, Step: "worker", Payload: p})
}

// open announces the iteration and starts its model call. The request is
// made and the call started off the run's goroutine (offRun): toolSpecs'
// frame alone is ~2 KiB, and under the run's ~5.5 KiB it took the stack
// past 8 KiB; the start itself (the provider's SDK, net/http's client, the
// request's JSON) goes ~10 KiB deep.
//
//go:noinline
func (r *runner) open(ctx context.Context, it int, model llm.Model, msgs []llm.Message) (s llm.Stream, err error) {
	r.emit(ctx, it, event.IterationData{Model: model.Name()})
	offRun(func() {
		s, err = model.Stream(ctx, llm.Request{Messages: msgs, Tools: r.toolSpecs(), JSONObject: r.t.Options.Structured, Temperature: r.temperature()})
	})
	return s, err
}

// offRun runs f on a goroutine that ends with it, and waits for it; a panic
// there is raised again here. It is for work of a run that goes deep before
// its model streams: a run waits for every token at ~6 KiB of stack, and one
// excursion past 8 KiB doubles its stack to 16 KiB for good (the runtime
// halves a stack at a collection only when under a quarter of it is in
// use), which is most of an active stream's memory (docs/benchmarks.md,
// issue 25, eighth round). The goroutine and its stack are gone once f
// returns; the run's goroutine blocks meanwhile, so f may use what the run
// owns.
func offRun(f func()) {
	done := make(chan any, 1)
	go func() {
		defer func() { done <- recover() }()
		f()
	}()
	if p := <-done; p != nil {
		panic(p)
	}
}

// toolCallDelta announces a streamed tool call's start and its arguments;
// started holds the ids of the calls started so far, by index.
//
//go:noinline
func (r *runner) toolCallDelta(ctx context.Context, it int, msgID string, d *llm.ToolCallDelta, started map[int]string) map[int]string {
	id, ok := started[d.Index]
	if !ok {
		id = d.ID
		if id == "" {
			id = "call_" + chat.NewID()
		}
		if started == nil {
			started = map[int]string{}
		}
		started[d.Index] = id
		r.emit(ctx, it, event.ToolCallStartedData{ToolCallID: id, Name: d.Name, MessageID: msgID})
	}
	if d.ArgsDelta != "" {
		r.emit(ctx, it, event.ToolCallArgsData{ToolCallID: id, Delta: d.ArgsDelta})
	}
	return started
}

// streamed ends a model call whose stream ended with err (nil: complete):
// its usage, and its answer or tool calls stored.
//
//go:noinline
func (r *runner) streamed(ctx context.Context, it int, model llm.Model, msgID string, acc *llm.Accumulator, started map[int]string, err error) (turnOut, *engine.Outcome) {
	if u := acc.Usage(); u != nil {
		r.usage = r.usage.AddCall(engine.CallUsage(*u, model.Name()))
	}
	// Calls whose ids the model left out get the ids their events used.
	calls := acc.ToolCalls()
	for i := range calls {
		if calls[i].ID == "" {
			calls[i].ID = started[i]
		}
	}
	if err != nil {
		return r.callFailed(ctx, it, msgID, acc, err)
	}
	text := acc.Text()
	if len(calls) == 0 {
		answer := r.completeMessage(ctx, it, msgID, text, acc.Reasoning(), false)
		return turnOut{answer: answer}, nil
	}
	text = r.shownText(text)
	assistant := llm.Message{Role: llm.RoleAssistant, Content: text, ToolCalls: calls}
	meta := r.assistantMeta(chat.AssistantMeta{ToolCalls: storedCalls(calls)}, acc.Reasoning())
	if _, err := r.h.AppendMessage(ctx, chat.Message{ID: msgID, Role: chat.RoleAssistant, Content: text, Metadata: meta, RunID: r.t.Run.ID}); err != nil {
		o := failed(errcode.StoreFailed, "The answer could not be saved.", r.usage)
		return turnOut{}, &o
	}
	return turnOut{assistant: assistant, calls: calls}, nil
}

// callFailed ends a model call that failed: what streamed is kept, marked
// partial, and the run ends.
//
//go:noinline
func (r *runner) callFailed(ctx context.Context, it int, msgID string, acc *llm.Accumulator, err error) (turnOut, *engine.Outcome) {
	r.interrupted = errors.Is(context.Cause(ctx), engine.ErrInterrupted)
	if text := r.shownText(acc.Text()); text != "" {
		r.completeMessage(context.WithoutCancel(ctx), it, msgID, text, acc.Reasoning(), true)
	}
	if o := engine.Stopped(ctx); o != nil {
		o.Usage = r.usage
		return turnOut{}, o
	}
	info := ModelError(err)
	r.h.Emit(ctx, event.Event{Iteration: it, Step: "worker", Payload: event.ErrorData{ErrorInfo: info}})
	return turnOut{}, &engine.Outcome{Status: engine.StatusFailed, Error: &info, Usage: r.usage}
}

// ModelError turns a provider failure into text a person can act on.
func ModelError(err error) event.ErrorInfo {
	var le *llm.Error
	if errors.As(err, &le) {
		msg := map[string]string{
			llm.CodeUnauthorized: "The model provider refused our credentials.",
			llm.CodeRateLimited:  "The model provider is rate limiting us; try again shortly.",
			llm.CodeUnavailable:  "The model provider is unavailable.",
			llm.CodeTimeout:      "The model provider did not answer in time.",
			llm.CodeBadRequest:   "The model provider rejected the request.",
			llm.CodeStreamCut:    "The model's answer was cut off mid-stream.",
			llm.CodeBadStream:    "The model's answer could not be read.",
		}[le.Code]
		if msg == "" {
			msg = "The model call failed."
		}
		if le.Message != "" {
			msg += " (" + le.Message + ")"
		}
		return event.ErrorInfo{Code: le.Code, Message: msg}
	}
	return event.ErrorInfo{Code: llm.CodeUnknown, Message: "The model call failed."}
}

// completeMessage stores and announces a final (or partial) assistant message.
func (r *runner) completeMessage(ctx context.Context, it int, id, text, reasoning string, partial bool) *event.Answer {
	var answer *event.Answer
	switch {
	case partial: // what streamed, as shown; not a result
	case r.t.Options.Structured:
		answer = ParseAnswer(text)
		text = answer.Answer
	default:
		answer = DeriveAnswer(text)
	}
	meta := r.assistantMeta(chat.AssistantMeta{Partial: partial, Interrupted: partial && r.interrupted, Answer: answer}, reasoning)
	stored, err := r.h.AppendMessage(ctx, chat.Message{ID: id, Role: chat.RoleAssistant, Content: text, Metadata: meta, RunID: r.t.Run.ID})
	if err != nil {
		r.log.Error("store assistant message", "err", err)
	} else if !partial {
		r.remember(ctx, stored) // context.go
	}
	r.h.Emit(ctx, event.Event{Iteration: it, Step: "worker", Payload: event.MessageCompletedData{MessageID: id, Role: chat.RoleAssistant, Content: text, Partial: partial, Answer: answer}})
	return answer
}

// DeriveAnswer gives a plain-text answer the structured shape of seed 004.
func DeriveAnswer(text string) *event.Answer {
	a := &event.Answer{Status: "success", Answer: text, KeyPoints: []string{}, ResultType: "execution_report", SuggestedActions: []string{}}
	trimmed := strings.TrimSpace(text)
	if strings.HasSuffix(trimmed, "?") {
		a.ResultType = "clarification"
	}
	for _, line := range strings.Split(trimmed, "\n") {
		l := strings.TrimSpace(line)
		if p, ok := strings.CutPrefix(l, "- "); ok {
			a.KeyPoints = append(a.KeyPoints, p)
		} else if p, ok := strings.CutPrefix(l, "* "); ok {
			a.KeyPoints = append(a.KeyPoints, p)
		}
	}
	return a
}

func (r *runner) toolSpecs() []llm.ToolSpec {
	var specs []llm.ToolSpec
	if r.a.tools != nil {
		allowed := r.t.AllowedTools()
		for _, s := range r.a.tools.List() {
			if !allowed.Allows(s.Name) {
				continue
			}
			specs = append(specs, llm.ToolSpec{Name: s.Name, Description: s.Description, Parameters: s.Parameters})
		}
	}
	if r.hasStateTool() {
		specs = append(specs, r.stateSpec()) // state.go
	}
	for _, f := range r.t.Options.FrontendTools {
		if _, backend := r.spec(f.Name); backend || f.Name == engine.UpdateStateTool && r.hasStateTool() {
			continue // the registry's (or the built-in) tool of that name wins
		}
		specs = append(specs, llm.ToolSpec{Name: f.Name, Description: f.Description, Parameters: f.Parameters})
	}
	return specs
}

// runTools announces each call, asks for approval where needed, and runs the
// rest concurrently. It returns the results of the calls that ran, in call
// order, the ids of the calls waiting for a person, and the events that
// announce the wait.
func (r *runner) runTools(ctx context.Context, it int, calls []llm.ToolCall) ([]llm.Message, []string, []event.Event) {
	results := make([]*chat.Message, len(calls))
	var awaiting []string
	var announce []event.Event
	var wg sync.WaitGroup
	for i, c := range calls {
		args := normaliseArgs(c.Arguments)
		r.h.Emit(ctx, event.Event{Iteration: it, Step: "worker", Payload: event.ToolCallReadyData{ToolCallID: c.ID, Name: c.Name, Args: args}})
		if c.Name == engine.UpdateStateTool && r.hasStateTool() {
			// In call order, one at a time: each patch applies to the last's state.
			m := r.record(context.WithoutCancel(ctx), it, c.ID, c.Name, args, r.updateState(ctx, it, c.ID, args), false, "")
			results[i] = &m
			continue
		}
		spec, known := r.spec(c.Name)
		var verr error
		if known {
			verr = r.a.tools.Validate(c.Name, args)
		}
		// The agent may add confirmation to a tool, never take it away.
		if known && verr == nil && (spec.Confirm == tool.ConfirmAlways || r.t.Agent.NeedsConfirm(c.Name)) {
			ev, err := r.requestConfirmation(ctx, it, c.ID, c.Name, args)
			if err != nil {
				m := r.record(ctx, it, c.ID, c.Name, args, tool.Result{Status: tool.StatusFailure, Error: "the confirmation could not be stored"}, false, "")
				results[i] = &m
				continue
			}
			awaiting = append(awaiting, c.ID)
			announce = append(announce, ev)
			continue
		}
		wg.Go(func() {
			var res tool.Result
			switch {
			case !known:
				res = tool.Result{Status: tool.StatusFailure, Error: fmt.Sprintf("unknown tool %q", c.Name)}
			case verr != nil:
				res = tool.Result{Status: tool.StatusFailure, Error: verr.Error()}
			default:
				r.h.Emit(ctx, event.Event{Iteration: it, Step: "worker", Payload: event.ToolRunningData{ToolCallID: c.ID, Name: c.Name, Args: args}})
				res = r.a.tools.Call(ctx, c.Name, args)
			}
			m := r.record(context.WithoutCancel(ctx), it, c.ID, c.Name, args, res, false, "")
			results[i] = &m
		})
	}
	wg.Wait()
	var out []llm.Message
	for _, m := range results {
		if m != nil {
			out = append(out, llm.Message{Role: llm.RoleTool, Content: m.Content, ToolCallID: m.ToolCallID, Name: m.ToolName})
		}
	}
	return out, awaiting, announce
}

// spec is the registry's tool of that name, if this run may use it: a tool
// the run is not allowed (by its agent, or by the request) is as unknown as
// one that does not exist.
func (r *runner) spec(name string) (tool.Spec, bool) {
	if r.a.tools == nil || !r.t.AllowedTools().Allows(name) {
		return tool.Spec{}, false
	}
	return r.a.tools.Get(name)
}

func normaliseArgs(a json.RawMessage) json.RawMessage {
	if len(strings.TrimSpace(string(a))) == 0 || !json.Valid(a) {
		if len(a) == 0 {
			return json.RawMessage(`{}`)
		}
		b, _ := json.Marshal(string(a)) // keep the model's text visible, as a JSON string
		return b
	}
	return a
}

// requestConfirmation stores a pending confirmation and returns the event
// that announces it.
func (r *runner) requestConfirmation(ctx context.Context, it int, callID, name string, args json.RawMessage) (event.Event, error) {
	c, err := r.h.RequestConfirmation(ctx, chat.Confirmation{ToolCallID: callID, ToolName: name, Args: args})
	if err != nil {
		return event.Event{}, err
	}
	return event.Event{Iteration: it, Step: "worker", Payload: event.ToolAwaitingData{
		ToolCallID: callID, Name: name, Args: args, ConfirmationID: c.ID, ExpiresAt: c.ExpiresAt,
		Message: fmt.Sprintf("Allow %s to run with these arguments?", name),
	}}, nil
}

// record stores a tool result as a role=tool message and announces it.
func (r *runner) record(ctx context.Context, it int, callID, name string, args json.RawMessage, res tool.Result, denied bool, confirmationID string) chat.Message {
	content := res.Content
	if res.Error != "" && (content == "" || content == res.Error) {
		// Say plainly that the call failed: the model must not read an error as output.
		content = "Error: " + res.Error
	}
	meta := chat.ToolResultMeta{ToolName: name, ToolCallID: callID, ToolCallArgs: args, Status: string(res.Status),
		Result: content, Error: res.Error, Denied: denied, ToolAgentOutput: r.offload(ctx, res.Output), ConfirmationID: confirmationID}.Marshal()
	m := chat.Message{Role: chat.RoleTool, Content: content, Metadata: meta, RunID: r.t.Run.ID, ToolName: name, ToolCallID: callID}
	stored, err := r.h.AppendMessage(ctx, m)
	if err != nil {
		r.log.Error("store tool message", "tool", name, "err", err)
		stored = m
	}
	r.h.Emit(ctx, event.Event{Iteration: it, Step: "worker", Payload: event.ToolResultData{
		ToolCallID: callID, Name: name, Args: args, Status: string(res.Status), Output: res.Output, Content: content,
		Error: res.Error, Denied: denied, MessageID: stored.ID,
	}})
	return stored
}

// decided runs (or declines) the tool a person decided on, and stores the result.
func (r *runner) decided(ctx context.Context, it int, c chat.Confirmation) (chat.Message, bool) {
	args := c.Args
	if len(c.DecidedArgs) > 0 {
		args = c.DecidedArgs
	}
	var res tool.Result
	denied, expired := false, false
	switch c.Status {
	case chat.ConfirmApproved:
		if err := r.a.tools.Validate(c.ToolName, args); err != nil {
			res = tool.Result{Status: tool.StatusFailure, Error: err.Error()}
			break
		}
		r.h.Emit(ctx, event.Event{Iteration: it, Step: "worker", Payload: event.ToolRunningData{ToolCallID: c.ToolCallID, Name: c.ToolName, Args: args}})
		res = r.a.tools.Call(ctx, c.ToolName, args)
	case chat.ConfirmExpired:
		expired = true
		res = tool.Result{Status: tool.StatusFailure, Error: "Nobody approved this call in time, so it did not run.", Content: "The confirmation expired; the tool did not run."}
	default:
		denied = true
		why := "The person declined this call; it did not run."
		if c.Reason != "" {
			why += " Their reason: " + c.Reason
		}
		res = tool.Result{Status: tool.StatusFailure, Error: "declined by the person", Content: why}
	}
	return r.record(context.WithoutCancel(ctx), it, c.ToolCallID, c.ToolName, args, res, denied, c.ID), expired
}

func (r *runner) finishExpired(ctx context.Context, it int, c chat.Confirmation) engine.Outcome {
	text := fmt.Sprintf("Nobody approved %s in time, so I did not run it. Ask again when you are ready.", c.ToolName)
	r.completeMessage(ctx, it, chat.NewID(), text, "", false)
	return failed(errcode.ConfirmationExpired, "The confirmation expired before anyone decided.", r.usage)
}

// BuildContext rebuilds the model's view of a conversation from stored
// messages. A tool call left without a result (a run that failed mid-way) gets
// a stand-in result, since providers reject a call with no answer.
func BuildContext(system string, history []chat.Message) []llm.Message {
	var out []llm.Message
	if system != "" {
		out = append(out, llm.Message{Role: llm.RoleSystem, Content: system})
	}
	answered := map[string]bool{}
	for _, m := range history {
		if m.Role == chat.RoleTool {
			answered[m.ToolCallID] = true
		}
	}
	var open []llm.ToolCall // calls of the last assistant message not yet answered
	flush := func() {
		for _, c := range open {
			out = append(out, llm.Message{Role: llm.RoleTool, ToolCallID: c.ID, Name: c.Name, Content: "This call did not complete."})
		}
		open = nil
	}
	for _, m := range history {
		switch m.Role {
		case chat.RoleUser:
			flush()
			msg := llm.Message{Role: llm.RoleUser, Content: m.Content}
			if len(m.Parts) > 0 {
				msg.Parts = modelParts(chat.ParseParts(m.Parts))
			}
			out = append(out, msg)
		case chat.RoleAssistant:
			flush()
			meta := chat.ParseAssistantMeta(m.Metadata)
			if meta.Partial && m.Content == "" {
				continue
			}
			var calls []llm.ToolCall
			for _, c := range meta.ToolCalls {
				calls = append(calls, llm.ToolCall(c))
			}
			out = append(out, llm.Message{Role: llm.RoleAssistant, Content: m.Content, ToolCalls: calls})
			for _, c := range calls {
				if !answered[c.ID] {
					open = append(open, c)
				}
			}
		case chat.RoleTool:
			out = append(out, llm.Message{Role: llm.RoleTool, Content: m.Content, ToolCallID: m.ToolCallID, Name: m.ToolName})
		case chat.RoleSystem:
			flush()
			out = append(out, llm.Message{Role: llm.RoleSystem, Content: m.Content})
		}
	}
	// Calls still open at the end are the ones a resumed run is about to answer;
	// they are left for it.
	return out
}

// storedCalls gives calls the shape an assistant message's metadata records.
func storedCalls(calls []llm.ToolCall) []chat.ToolCall {
	out := make([]chat.ToolCall, len(calls))
	for i, c := range calls {
		out[i] = chat.ToolCall(c)
	}
	return out
}
