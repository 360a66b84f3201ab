// Package engine defines what executes a run: an Engine turns a Task into
// canonical events through a Host, and says how the run ended.
//
// Engines never talk to clients and never decide wire formats. They are
// resumable: a run paused for a person's decision returns StatusAwaiting with
// its state, and a later Execute with Task.Resume continues it, possibly in
// another process, after a restart. No goroutine waits for a person.
package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/errcode"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/llm"
)

// Host is what an engine may do to the run it executes. It is safe for
// concurrent use (parallel tool calls emit from several goroutines).
type Host interface {
	// Emit records and publishes an event of the run; the host fills in
	// tenant, thread, run, seq and time, and the turn when empty.
	Emit(ctx context.Context, ev event.Event)
	// AppendMessage stores a message in the run's conversation.
	AppendMessage(ctx context.Context, m chat.Message) (chat.Message, error)
	// RequestConfirmation makes a pending confirmation for a tool call; the
	// host fills in its id, tenant, owner, run, conversation and expiry. It
	// is stored when the run pauses (Outcome StatusAwaiting), together with
	// the events announcing it, so that nobody sees it before the wait is
	// durable; a run that does not pause stores none.
	RequestConfirmation(ctx context.Context, c chat.Confirmation) (chat.Confirmation, error)
	// UpdateState applies patch, an RFC 6902 JSON Patch, to the thread's
	// shared state (Options.State), stores the result and announces the
	// change (a context.patch event); it returns the new state. A patch
	// that does not apply is an error wrapping chat.ErrInvalidPatch, whose
	// text may be shown to the model; the state is then unchanged.
	UpdateState(ctx context.Context, patch json.RawMessage) (json.RawMessage, error)
}

// UpdateStateTool is the built-in tool through which the model changes the
// thread's shared state (Host.UpdateState): offered when the run has a
// state (Options.State), it takes {"patch": <an RFC 6902 JSON Patch, or its
// JSON text>}.
const UpdateStateTool = "update_state"

// UpdateStateParameters is the JSON Schema of UpdateStateTool's arguments.
// The patch is JSON text: models write arrays of mixed-type values as
// strings more reliably than as nested JSON, and the host accepts either.
var UpdateStateParameters = json.RawMessage(`{"type":"object","properties":{"patch":{"type":"string",` +
	`"description":"An RFC 6902 JSON Patch of the shared state, as JSON text: an array of operations such as [{\"op\":\"add\",\"path\":\"/key\",\"value\":1}]."}},` +
	`"required":["patch"]}`)

// Task is one execution of a run.
type Task struct {
	Scope        chat.Scope
	Run          chat.Run
	Conversation chat.Conversation
	// History is the conversation's stored messages up to and including this
	// run's user message (and, on resume, what the run stored since).
	History []chat.Message
	// Resume, when set, continues a paused run after a decision.
	Resume *Resume
	// Options carry request-level choices (frontend tools, forwarded properties).
	Options Options
	// Agent is the agent version the run executes, resolved once when the
	// run started (and again, to the same version, for each continuation),
	// so an execution never mixes two versions. Nil keeps the engine's own
	// configuration: its model, prompt, tools and bounds.
	Agent *Agent
	// Budget, when set, is asked before each model call after the run's
	// first whether the run's token and cost budgets allow another, given
	// its usage so far; nil always allows.
	Budget Budget
}

// Budget says whether a run that has used used may make another model
// call: nil, or the failure that ends the run (errcode.QuotaExceeded).
type Budget func(ctx context.Context, used event.Usage) *event.ErrorInfo

// OverBudget checks t's budget before a model call after the first; a
// non-nil Outcome ends the run failed, with what it answered so far kept
// (the engine stored it as it went). The host emits the failure, with the
// run's usage, as it ends the run.
func OverBudget(ctx context.Context, t Task, used event.Usage) *Outcome {
	if t.Budget == nil {
		return nil
	}
	info := t.Budget(ctx, used)
	if info == nil {
		return nil
	}
	return &Outcome{Status: StatusFailed, Error: info, Usage: used}
}

// Agent is the resolved definition of one agent version: what an engine
// uses in place of its configured defaults.
type Agent struct {
	ID      string
	Version int
	// Model answers the run's model calls; nil keeps the engine's own
	// (an OpenClaw run's model is its gateway). ModelName is its name in
	// the models file.
	Model     llm.Model
	ModelName string
	// Accepts are the media types the model takes as files beyond
	// images, PDFs and text (the models file's accepts).
	Accepts []string
	// Instructions are the agent's own part of the system prompt: the
	// engine's prompt components wrap them in their fixed order.
	Instructions string
	// Tools limits the registry's tools the run may use; nil is the
	// server's default set.
	Tools *AllowedTools
	// Confirm names tools that wait for a person besides those the server
	// marks as needing it (an agent adds confirmation, never removes it).
	Confirm []string
	// Knowledge names the knowledge collections retrieval searches; nil is
	// every collection, empty none.
	Knowledge []string
	// Engine is the engine the agent runs on ("" lets the router choose);
	// Gateway, for the openclaw engine, names the OpenClaw gateway.
	Engine  string
	Gateway string
	// MaxIterations bounds the run's model calls; 0 keeps the engine's bound.
	MaxIterations int
	// Temperature is the sampling temperature; nil is the provider's default.
	Temperature *float64
	// Multitask is what a new input does by default while the agent's
	// conversation has an active run ("" rejects it); the run service
	// applies it.
	Multitask chat.MultitaskStrategy
}

// NeedsConfirm reports whether the agent makes the tool named wait for a person.
func (a *Agent) NeedsConfirm(name string) bool {
	return a != nil && slices.Contains(a.Confirm, name)
}

// AllowedTools is what a run may use: the agent's tool subset, narrowed
// further by the request's own (a chain's plan); nil when neither limits.
func (t Task) AllowedTools() *AllowedTools {
	var agent *AllowedTools
	if t.Agent != nil {
		agent = t.Agent.Tools
	}
	switch {
	case agent == nil:
		return t.Options.Allowed
	case t.Options.Allowed == nil:
		return agent
	}
	both := &AllowedTools{Names: []string{}}
	for _, n := range t.Options.Allowed.Names {
		if agent.Allows(n) {
			both.Names = append(both.Names, n)
		}
	}
	return both
}

// Resume is a decided confirmation that continues a paused run.
type Resume struct {
	Confirmation chat.Confirmation
	// ClientRunID is the run id the deciding client chose for the
	// continuation (AG-UI), carried on the run.resumed event; may be empty.
	ClientRunID string
}

// Options are per-request choices a client made.
type Options struct {
	// Engine names the engine the client asked for; empty lets the router choose.
	Engine string
	// Structured asks the engine for a structured final answer (seed 004 worker output).
	Structured bool
	// FrontendTools are tools the client executes itself (AG-UI), as JSON Schema specs.
	FrontendTools []chat.FrontendTool
	// Context is ambient information the client gives the run (AG-UI
	// RunAgentInput.context); engines show it to the model beside the system prompt.
	Context []chat.ContextItem
	// State is the thread's shared state as the run began (AG-UI
	// RunAgentInput.state, kept per conversation); nil when the thread has
	// none. Engines show it to the model, and the local engine offers
	// UpdateStateTool to change it.
	State json.RawMessage `json:",omitempty"`
	// MaxSteps bounds the chain engine's steps (planner, executor and check
	// count one each); 0 means the engine's default. Other engines ignore it.
	MaxSteps int
	// Allowed, when set, limits the registry's tools the model is offered,
	// and may call, to these names (a chain's plan selects them).
	Allowed *AllowedTools
}

// AllowedTools names the tools a run may use; an empty list allows none.
type AllowedTools struct {
	Names []string
}

// Allows reports whether the tool named may be used: always without a list.
func (a *AllowedTools) Allows(name string) bool {
	return a == nil || slices.Contains(a.Names, name)
}

// DefaultMaxIterations bounds the model (or gateway) calls of one run when
// an engine's configuration names no bound.
const DefaultMaxIterations = 8

// Run statuses an engine reports.
const (
	StatusSucceeded = event.StatusSucceeded
	StatusFailed    = event.StatusFailed
	StatusCancelled = event.StatusCancelled
	StatusAwaiting  = chat.RunAwaitingInput
)

// Outcome is how an execution ended.
type Outcome struct {
	Status string
	Error  *event.ErrorInfo
	Usage  event.Usage
	Answer *event.Answer
	// State is what a paused run needs to continue (StatusAwaiting only).
	State json.RawMessage
	// Awaiting lists the tool call ids waiting for a person (StatusAwaiting only).
	Awaiting []string
	// Pending lists frontend tool calls the client must answer (StatusSucceeded
	// only): the run ends, and the client's tool results start the next one.
	Pending []string
	// Announce holds the events that tell clients the run waits (tool.awaiting
	// events). The host stores them with the wait and its confirmations, in
	// one step, before it publishes them: a client that sees them finds the
	// wait durable, whatever crashes next.
	Announce []event.Event
}

// Engine executes runs.
type Engine interface {
	Execute(ctx context.Context, t Task, h Host) Outcome
}

// TaskExecutor is an Engine that also takes its task, and gives its
// outcome, by pointer: a Task is ~800 bytes and an Outcome ~220, and every
// frame that passes one by value holds a copy (an Outcome two: the callee's
// result and its own) below the run's model stream for the whole run, where
// the run goroutine waits for each token (docs/benchmarks.md, issue 25,
// eighth round). ExecuteTask does what Execute does and sets *o to its
// outcome; t is the caller's, which it may change (a resumed run takes the
// options it paused with) and does not keep past its return.
type TaskExecutor interface {
	Engine
	ExecuteTask(ctx context.Context, t *Task, h Host, o *Outcome)
}

// Execute runs t on e and sets *o to its outcome, by pointer where e takes
// it so.
//
//go:noinline
func Execute(ctx context.Context, e Engine, t *Task, h Host, o *Outcome) {
	if te, ok := e.(TaskExecutor); ok {
		te.ExecuteTask(ctx, t, h, o)
		return
	}
	executeCopy(ctx, e, t, h, o)
}

// executeCopy passes a copy of t, in a frame of its own.
//
//go:noinline
func executeCopy(ctx context.Context, e Engine, t *Task, h Host, o *Outcome) {
	*o = e.Execute(ctx, *t, h)
}

// ErrCancelled is the cause of a context cancelled because a person stopped the run.
var ErrCancelled = errors.New("run cancelled")

// ErrInterrupted is the cause of a context cancelled because a new input on
// the conversation interrupted the run (double-texting): a cancel.
var ErrInterrupted = fmt.Errorf("%w: a new input interrupted it", ErrCancelled)

// ErrShutdown is the cause of a context cancelled because the server is stopping.
var ErrShutdown = errors.New("server shutting down")

// Stopped reports the outcome of an execution whose context ended, or nil
// while the context is live.
func Stopped(ctx context.Context) *Outcome {
	if ctx.Err() == nil {
		return nil
	}
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, ErrInterrupted):
		return &Outcome{Status: StatusCancelled, Error: &event.ErrorInfo{Code: errcode.RunInterrupted, Message: "A new message interrupted the run."}}
	case errors.Is(cause, ErrCancelled):
		return &Outcome{Status: StatusCancelled}
	case errors.Is(cause, ErrShutdown):
		return &Outcome{Status: StatusFailed, Error: &event.ErrorInfo{Code: errcode.ServerShutdown, Message: "The server stopped while the run was in progress."}}
	default:
		return &Outcome{Status: StatusFailed, Error: &event.ErrorInfo{Code: errcode.RunTimeout, Message: "The run took too long and was stopped."}}
	}
}

// CallUsage is one model call's usage as a run counts it. fallback names
// the model when the usage names none (a model that is not Metered).
func CallUsage(u llm.Usage, fallback string) event.ModelUsage {
	model := u.Model
	if model == "" {
		model = fallback
	}
	return event.ModelUsage{
		Provider: u.Provider, Model: model, Calls: 1,
		InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, ReasoningTokens: u.ReasoningTokens,
		CachedInputTokens: u.CachedInputTokens, Estimated: u.Estimated, Cost: u.Cost, Currency: u.Currency,
	}
}

type afterStartKey struct{}

// WithAfterStart is ctx for an execution that begins before its run's start
// is stored (the run service's early runs): AfterStart hands its writes to
// defer, which runs each once the start is stored, or drops it should the
// start fail.
func WithAfterStart(ctx context.Context, deferWrite func(write func())) context.Context {
	return context.WithValue(ctx, afterStartKey{}, deferWrite)
}

// AfterStart runs write, a write that names the run's stored rows (its
// conversation, its user message), once the run's start is stored: at once,
// unless ctx is an execution's that began before (WithAfterStart).
func AfterStart(ctx context.Context, write func()) {
	if deferWrite, ok := ctx.Value(afterStartKey{}).(func(func())); ok {
		deferWrite(write)
		return
	}
	write()
}
