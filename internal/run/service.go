package run

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentchat/agentchat/internal/agent"
	"github.com/agentchat/agentchat/internal/bus"
	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/compaction"
	"github.com/agentchat/agentchat/internal/engine"
	"github.com/agentchat/agentchat/internal/errcode"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/file"
	"github.com/agentchat/agentchat/internal/store"
	"github.com/agentchat/agentchat/internal/telemetry"
	"github.com/agentchat/agentchat/internal/usage"
)

// Errors the service returns besides the store's sentinels.
var (
	// ErrInvalidInput: the request is well-formed but cannot start a run.
	// The service returns it as an *InputError, which carries the reason.
	ErrInvalidInput = errors.New("invalid input")
	// ErrTooManyRuns: the tenant has as many runs executing as it may. The
	// service returns it as a *TooManyRunsError, which carries the limit.
	ErrTooManyRuns = errors.New("too many executing runs for this tenant")
	// ErrShuttingDown: the server no longer starts runs.
	ErrShuttingDown = errors.New("server is shutting down")
	// ErrNoPendingToolCall: tool answers answer no call the thread waits for.
	ErrNoPendingToolCall = errors.New("no pending tool call")
	// ErrAgentNotFound: the request names an agent the tenant does not have.
	ErrAgentNotFound = errors.New("agent not found")
	// ErrAgentVersionNotFound: the request pins a version the agent does not have.
	ErrAgentVersionNotFound = errors.New("agent version not found")
)

// AgentMismatchError refuses a run that names another agent than the one
// its conversation is bound to: a conversation keeps one agent for life.
type AgentMismatchError struct {
	Bound, Asked string
}

func (e *AgentMismatchError) Error() string {
	return fmt.Sprintf("the conversation is bound to agent %s, not %s", e.Bound, e.Asked)
}

// Defaults of Config.
const (
	DefaultConfirmTTL    = 15 * time.Minute
	DefaultRunRetention  = 30 * 24 * time.Hour
	DefaultMaxInputChars = 32000
	DefaultLeaseTTL      = 15 * time.Second
)

// Config configures the service. Zero values mean the defaults.
type Config struct {
	Store  store.Store
	Bus    bus.Bus
	Engine engine.Engine
	Logger *slog.Logger
	// ReplicaID names this process in the replicas' liveness table. Default: a new id.
	ReplicaID string
	// Sole says this process is the only one using the store (the embedded
	// SQLite file): it writes no heartbeat and is never fenced, and at start
	// it ends the runs a previous process left executing.
	Sole bool
	// ConfirmTTL is how long a confirmation waits. Default DefaultConfirmTTL.
	ConfirmTTL time.Duration
	// RunRetention is how long finished runs are kept. Default DefaultRunRetention.
	RunRetention time.Duration
	// MaxInputChars bounds one input. Default DefaultMaxInputChars.
	MaxInputChars int
	// MaxRunsPerTenant bounds a tenant's executing (queued or running) runs,
	// counted across every replica sharing the store. 0: no bound.
	MaxRunsPerTenant int
	// MaxExecutions bounds the runs this process executes at once, each
	// holding a connection to the model provider: beyond it Start refuses
	// a new run with ErrOverloaded (continuations are never refused; see
	// capacity). serve sets it from the open-files limit. 0: no bound.
	MaxExecutions int
	// LeaseTTL is how long a replica's heartbeat may go unrenewed before
	// other replicas end its runs. Default DefaultLeaseTTL.
	LeaseTTL time.Duration
	// SweepInterval is the period of the housekeeping loop (expired
	// confirmations, orphaned runs, unapplied decisions, retention).
	// Default 1s, or LeaseTTL/4 when that is shorter.
	SweepInterval time.Duration
	// Compactor, when set, gives runs the compacted context (context.go).
	Compactor *compaction.Compactor
	// Telemetry receives the runs' metrics and spans; nil records nothing.
	Telemetry *telemetry.Telemetry
	// Agents resolves the agent version each run executes (package agent);
	// nil runs every run on the engine's own configuration, naming no agent.
	Agents Agents
	// Files stores the files messages attach (attach.go) and sweeps those
	// no conversation references; nil refuses attachments.
	Files *file.Service
	// Limits are the runs limits and budgets of tenants, users and agents
	// (package usage): checked by the store as a run starts, and between
	// the model calls of a running run. Nil limits nothing.
	Limits *usage.Limits
	// Now is the clock of the limits' windows and of the runs' start
	// times. Default time.Now.
	Now func() time.Time
}

// Agents resolves agent versions for runs (package agent implements it).
type Agents interface {
	// Resolve returns the version a new run executes (see agent.Ref).
	Resolve(ctx context.Context, sc chat.Scope, ref agent.Ref) (*engine.Agent, error)
	// Exact returns the version a run recorded, for its continuation.
	Exact(ctx context.Context, sc chat.Scope, id string, version int) (*engine.Agent, error)
}

// Service runs agents. Create it with New, stop it with Shutdown.
type Service struct {
	cfg   Config
	st    store.Store
	bus   bus.Bus
	eng   engine.Engine
	log   *slog.Logger
	evlog *eventLog
	pub   *publisher
	// lossless: this process is the only one emitting events (Sole) and
	// its bus delivers every publish (bus.Lossless), so every event of a
	// thread reaches each of its subscriptions in seq order, and a stream
	// has no lost publish to look for in the log (Stream.CheckAfter).
	lossless bool

	ctx    context.Context // the service's life; runs derive from it
	cancel context.CancelCauseFunc
	runs   *spread        // ctx's children, which runs derive from (spread.go)
	wg     sync.WaitGroup // executions and background loops
	// halt ends when Shutdown gives up on what still runs: store calls of
	// executions and starts end, and nothing retries an unavailable store.
	halt    context.Context
	haltNow context.CancelFunc
	halts   *spread // halt's children, which starts hang from (spread.go)

	mu        sync.Mutex
	executing map[string]*execution // run id → execution in this process

	// admitting guards stopping: admissions share it (a burst of starts
	// takes it at once, where one mutex made them queue: 5000 starts at
	// the same instant convoyed there on 16 cores), Shutdown takes it
	// alone to set stopping.
	admitting sync.RWMutex
	stopping  bool // Shutdown began: nothing more is admitted

	// admitted counts the work Shutdown waits for: starts past admission
	// (until their execution ends) and continuations.
	admitted sync.WaitGroup
	stopOnce sync.Once
	endOnce  sync.Once
	drained  chan struct{} // closed when admitted work is done, after Shutdown began
	down     chan struct{} // closed when everything has returned and the log is written

	live liveness // this replica's term

	exec capacity // executions in this process, against MaxExecutions

	// continuations maps a confirmation id to the run id its deciding client
	// chose (DecideFor), for whichever resume of this process continues the
	// run: another may claim it first (resumeDecided, when the decision
	// arrives while the run is still pausing).
	continuations continuations
}

// New starts the service's background loops.
func New(cfg Config) *Service {
	if cfg.ReplicaID == "" {
		cfg.ReplicaID = chat.NewID()
	}
	cfg.ConfirmTTL = cmp.Or(cfg.ConfirmTTL, DefaultConfirmTTL)
	cfg.RunRetention = cmp.Or(cfg.RunRetention, DefaultRunRetention)
	cfg.MaxInputChars = cmp.Or(cfg.MaxInputChars, DefaultMaxInputChars)
	cfg.LeaseTTL = cmp.Or(cfg.LeaseTTL, DefaultLeaseTTL)
	if cfg.SweepInterval == 0 {
		cfg.SweepInterval = min(time.Second, cfg.LeaseTTL/4)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	halt, haltNow := context.WithCancel(context.Background())
	s := &Service{
		cfg: cfg, st: cfg.Store, bus: cfg.Bus, eng: cfg.Engine, log: cfg.Logger,
		evlog: newEventLog(cfg.Store, cfg.Logger), ctx: ctx, cancel: cancel, halt: halt, haltNow: haltNow,
		drained: make(chan struct{}), down: make(chan struct{}),
		executing: map[string]*execution{}, live: liveness{ready: make(chan struct{}), next: make(chan struct{}), recovered: make(chan struct{})},
		exec: capacity{max: int64(max(cfg.MaxExecutions, 0))},
	}
	s.runs, s.halts = newSpread(ctx), newSpread(halt)
	s.lossless = cfg.Sole && bus.Lossless(cfg.Bus)
	s.pub = &publisher{bus: cfg.Bus, s: s, bounded: !s.lossless}
	context.AfterFunc(halt, s.evlog.GiveUp) // an execution waiting for room in the log stops waiting
	s.wg.Add(3)
	go s.livenessLoop()
	go s.controlLoop()
	go s.sweepLoop()
	return s
}

// StartRequest asks for a new run.
type StartRequest struct {
	// ConversationID continues a conversation; empty creates one.
	ConversationID string
	// CreateWithID, when ConversationID is empty, is the id for the new
	// conversation (a client-chosen chat id); empty means a new id. When a
	// concurrent request created it first, the run goes into it.
	CreateWithID string
	Title        string
	Input        string
	// Parts is the multi-part form of the input (chat.Content), JSON.
	Parts json.RawMessage
	// ClientRunID is the run id a client chose (AG-UI), echoed on its stream.
	ClientRunID string
	// Engine names the engine the client asked for; empty lets the router choose.
	Engine string
	// Structured asks the engine for a structured final answer (seed 004).
	Structured bool
	// FrontendTools are tools the client runs itself, offered to the model.
	FrontendTools []chat.FrontendTool
	// Context is ambient information the client gives the run.
	Context []chat.ContextItem
	// MaxSteps bounds a chain's steps (0 for the engine's default).
	MaxSteps int
	// ToolAnswers, when Input is empty, continue a conversation whose last
	// run left frontend tool calls: each answers one of those calls and is
	// stored as its role=tool message in place of a user message, and the
	// run starts from them. Answers to calls not open are history the
	// client resends, and skipped; none open is ErrNoPendingToolCall.
	ToolAnswers []chat.ToolAnswer
	// AgentID names the agent that answers: a new conversation is bound to
	// it, and an existing one must be bound to it already (else
	// ErrAgentMismatch). Empty: the conversation's agent, or for a new
	// conversation the tenant's default.
	AgentID string
	// AgentVersion pins a version of the agent (trying a draft); 0 runs
	// the published one.
	AgentVersion int
	// Regenerates, when set, names a message of the conversation whose
	// answer this run gives again: an answer (the user message it answers
	// is answered again) or a user message. No user message is written:
	// the run takes the input of the message it answers again, and its
	// answer is a sibling of the old one, which stays in the tree.
	Regenerates string
	// Edits, when set, names a user message of the conversation that Input
	// is a new version of: the new user message is its sibling (it follows
	// the same message) and its branch becomes the active one.
	Edits string
	// ParentID, when set, is the message the new user message follows (""
	// for a new first message) in place of the active leaf: an explicit
	// fork point. Its branch becomes the active one.
	ParentID *string
	// State, when set, is the thread's shared state as the client holds it
	// (AG-UI RunAgentInput.state): it replaces the stored one as the run
	// starts. Nil keeps the stored state (state.go).
	State json.RawMessage
	// Multitask is what the input does when the conversation has an active
	// run (multitask.go); "" follows the agent's default, else reject.
	Multitask chat.MultitaskStrategy
	// RunID, when set, is the new run's id: given to a queued input's
	// client before the run exists (multitask.go).
	RunID string
}

// Started is a run that has begun.
type Started struct {
	Run          chat.Run
	Conversation chat.Conversation
	// Created tells whether this request created the conversation.
	Created bool
	// Stream follows the run from its first event; nil unless Start was asked to follow.
	Stream *Stream
	// Queued: the input waits behind the conversation's active run
	// (multitaskStrategy enqueue); Run has the id and status queued its run
	// will start with, and Stream follows it from its first event.
	Queued bool
}

// Start creates a run and executes it in the background. With follow set, the
// returned Stream is subscribed before the first event, so it misses nothing
// without reading the log. The run does not depend on ctx.
func (s *Service) Start(ctx context.Context, sc chat.Scope, req StartRequest, follow bool) (Started, error) {
	started, err := s.start(ctx, sc, req, follow)
	if req.CreateWithID != "" && errors.Is(err, store.ErrConflict) && !store.IsBusy(err) {
		// Another request created the conversation first: the run goes into it.
		req.ConversationID, req.CreateWithID = req.CreateWithID, ""
		started, err = s.start(ctx, sc, req, follow)
	}
	// A run whose end is in the log is finishing: its executor records the
	// end in the run's row next. A client that read the end from the log
	// (a replay, a stream's check) may start the next run at once, so that
	// start waits for the row, briefly, rather than answer busy.
	var busy *store.BusyError
	for wait := 0; wait < finishingWaits && errors.As(err, &busy) && s.finishing(ctx, sc, busy.ActiveRunID); wait++ {
		select {
		case <-ctx.Done():
			return Started{}, err
		case <-time.After(finishingPoll):
		}
		started, err = s.start(ctx, sc, req, follow)
	}
	if errors.As(err, &busy) {
		return s.multitask(ctx, sc, req, follow, busy, err) // multitask.go
	}
	return started, err
}

// How long a start waits for a finishing run's row: 40 polls of 25 ms.
const (
	finishingWaits = 40
	finishingPoll  = 25 * time.Millisecond
)

// finishing reports whether the run's end is already in its thread's log:
// the last event of the thread, since no other run emits on it meanwhile.
func (s *Service) finishing(ctx context.Context, sc chat.Scope, runID string) bool {
	r, err := s.st.GetRun(ctx, sc, runID)
	if err != nil || !chat.Active(r.Status) {
		return err == nil // ended meanwhile: starting again succeeds
	}
	last, err := s.st.LastSeq(ctx, sc.Tenant, r.ConversationID)
	if err != nil || last == 0 {
		return false
	}
	evs, err := s.st.ListEvents(ctx, sc, store.ListEventsParams{Thread: r.ConversationID, AfterSeq: last - 1, UntilSeq: last, Limit: 1})
	return err == nil && len(evs) == 1 && evs[0].Run == runID && evs[0].Terminal()
}

func (s *Service) start(ctx context.Context, sc chat.Scope, req StartRequest, follow bool) (Started, error) {
	parent, again, err := s.place(ctx, sc, &req) // replace.go
	if err != nil {
		return Started{}, err
	}
	if again != nil {
		req.Input, req.Parts, req.ToolAnswers = again.Content, again.Parts, nil
	}
	input := strings.TrimSpace(req.Input)
	var toolResults []chat.Message
	if len(req.ToolAnswers) > 0 && input == "" && len(req.Parts) == 0 {
		var err error
		if toolResults, err = s.toolResults(ctx, sc, req.ConversationID, req.ToolAnswers); err != nil {
			return Started{}, err
		}
	}
	if input == "" && len(req.Parts) == 0 && len(toolResults) == 0 {
		return Started{}, invalidInput("input is empty")
	}
	if !chat.ValidText(req.Input) {
		return Started{}, invalidInput("input must be UTF-8 text without NUL characters")
	}
	if n := utf8.RuneCountInString(req.Input); n > s.cfg.MaxInputChars {
		return Started{}, invalidInput("input has %d characters, the limit is %d", n, s.cfg.MaxInputChars)
	}
	// Refused before anything is written: the client tries again.
	if !s.exec.tryTake() {
		return Started{}, ErrOverloaded
	}
	placed := true
	defer func() {
		if placed {
			s.exec.give()
		}
	}()
	ag, err := s.resolveAgent(ctx, sc, req)
	if err != nil {
		return Started{}, err
	}
	if !s.admit() {
		return Started{}, ErrShuttingDown
	}
	admitted := true
	defer func() {
		if admitted {
			s.release()
		}
	}()
	// Shutdown waits for this start; should it give up waiting, the start's
	// store calls end (the subscription of a follower stays the request's).
	sctx, stop := s.haltable(ctx)
	defer stop()
	t, err := s.term(sctx)
	if err != nil {
		return Started{}, err
	}

	var fileIDs []string
	if len(req.Parts) > 0 {
		parts, ids, err := s.attach(sctx, sc, chat.ParseParts(req.Parts), ag)
		if err != nil {
			return Started{}, err
		}
		_, req.Parts = chat.Content(parts)
		fileIDs = ids
	}

	// The run's span begins before the run is stored: the row names its trace.
	tel := s.cfg.Telemetry.NewRun(ctx)
	// in is made in place on the heap: a RunStart literal is built in a
	// temporary of start's frame, which the stream handler's stack holds
	// while the start waits for its group commit (begin).
	in := &store.RunStart{MaxExecuting: s.cfg.MaxRunsPerTenant, ReserveSeqs: reserveBlock}
	in.Run.ID, in.Run.ConversationID, in.Run.Status, in.Run.Input, in.Run.Engine = req.RunID, req.ConversationID, chat.RunRunning, req.Input, req.Engine
	in.Run.LeaseOwner, in.Run.LeaseEpoch, in.Run.TraceID, in.Run.SpanID = s.cfg.ReplicaID, t.epoch, tel.TraceID(), tel.SpanID()
	in.Message.Role, in.Message.Content, in.Message.Parts = chat.RoleUser, req.Input, req.Parts
	if ag != nil {
		in.Run.AgentID, in.Run.AgentVersion, in.Run.Model = ag.ID, ag.Version, ag.ModelName
	}
	// The runs limits count starts by their time: the limits' clock.
	now := s.now()
	in.Run.CreatedAt = now
	if s.cfg.Limits != nil {
		in.Limits = s.cfg.Limits.For(sc.Tenant, sc.User, in.Run.AgentID).StoreLimits(sc.Tenant, sc.User, in.Run.AgentID, now)
	}
	in.Parent = parent
	extra := toolResults
	switch {
	case again != nil:
		in.Message = chat.Message{} // the run answers again: no message of its own
	case input == "" && len(req.Parts) == 0:
		in.Message, extra = toolResults[0], toolResults[1:]
	}
	if req.ConversationID == "" {
		title := req.Title
		if title == "" {
			title = titleFrom(input)
		}
		in.NewConversation = &chat.Conversation{ID: req.CreateWithID, Title: title, Engine: req.Engine, AgentID: in.Run.AgentID}
	}
	var x *execution // the run's execution, when it begins before its start is stored
	if early(in, again, extra) {
		x = s.launchEarly(t, sc, in, &req, ag, tel)
		admitted, placed = false, false // the execution releases both
	}
	// fail ends a start that did not launch its run, or discards the run
	// that began early: its model call is cancelled, nothing was published.
	fail := func(err error) (Started, error) {
		if x != nil {
			x.discard()
		}
		tel.Abort(err)
		return Started{}, err
	}
	// One call writes the conversation, the run and the user message, and
	// reads the thread's last seq: no other run can emit on the thread now.
	started, err := s.st.StartRun(sctx, sc, in)
	if errors.Is(err, store.ErrTooManyRuns) {
		fail(err)
		return Started{}, &TooManyRunsError{Limit: s.cfg.MaxRunsPerTenant}
	}
	if qe := (*store.QuotaError)(nil); errors.As(err, &qe) {
		fail(err)
		return Started{}, usage.Refused(qe, now)
	}
	if err != nil {
		return fail(err)
	}
	if x == nil {
		tel.Bind(started.Run)
	}
	out, launched, err := s.begin(ctx, sctx, sc, &req, ag, t, tel, x, in.NewConversation != nil, &started, again, extra, fileIDs, follow, fail)
	if launched {
		admitted, placed = false, false // the execution releases both
	}
	if err == nil && x != nil {
		// Here rather than in begin: publishing the events it held goes
		// ~2 KiB deep, which under begin's frame took the handler's
		// stack past 16 KiB.
		x.open(started.LastSeq, started.Run.SeqReserved) // early.go
	}
	return out, err
}

// begin goes on with a start once it is stored: the run's files, its
// thread's state, the messages that come with it, the follower's
// subscription, then the run launched, unless it began early (x: start
// opens it then). It reports whether it launched a new execution. It is start's tail
// in a frame of its own: start's frame is on the stream handler's stack
// while the start waits for its group commit, and with this tail's locals
// and calls it took that stack past 16 KiB (docs/benchmarks.md, issue 25,
// eighth round: run stacks).
//
//go:noinline
func (s *Service) begin(ctx, sctx context.Context, sc chat.Scope, req *StartRequest, ag *engine.Agent, t *term, tel *telemetry.Run, x *execution,
	created bool, started *store.RunStarted, again *chat.Message, extra []chat.Message, fileIDs []string, follow bool,
	fail func(error) (Started, error)) (Started, bool, error) {
	failed := func(err error) (Started, bool, error) {
		out, err := fail(err)
		return out, false, err
	}
	if err := s.st.ReferenceFiles(sctx, sc, started.Conversation.ID, fileIDs); err != nil {
		s.abandon(started.Run, err)
		return failed(err)
	}
	out := Started{Run: started.Run, Conversation: started.Conversation, Created: created}
	r, conv, last, userMsg := started.Run, started.Conversation, started.LastSeq, started.Message
	// The thread's shared state, as the run begins with it (state.go).
	state := req.State
	var err error
	if state != nil {
		err = s.st.SetThreadState(sctx, sc, conv.ID, state)
	} else if !out.Created {
		state, err = s.st.ThreadState(sctx, sc, conv.ID)
	}
	if err != nil {
		s.abandon(r, err)
		return failed(err)
	}
	// leaf is where the run's branch ends as it begins: the model's context
	// is the branch down to it.
	leaf := cmp.Or(userMsg.ID, r.ParentID)
	for _, m := range extra {
		m.ConversationID, m.RunID = conv.ID, r.ID
		stored, err := s.st.AppendMessage(sctx, sc, m)
		if err != nil {
			s.abandon(r, err)
			return failed(err)
		}
		leaf = stored.ID
	}
	if again != nil {
		userMsg = *again
	}
	if s.halt.Err() != nil {
		// Shutdown gave up waiting: the store may be closing. The run is
		// left to the next start's recovery, as after a crash.
		return failed(ErrShuttingDown)
	}
	if userMsg.Role != chat.RoleUser {
		userMsg = chat.Message{}
	}
	if follow {
		q, err := s.bus.Subscribe(ctx, sc.Tenant, conv.ID, last)
		if err != nil {
			s.abandon(r, err)
			return failed(err)
		}
		out.Stream = &Stream{s: s, sc: sc, thread: conv.ID, runID: r.ID, q: q, last: last}
	}
	if x != nil {
		return out, false, nil // start opens it (early.go)
	}
	x = s.newExecution(t, sc, r, last, tel)
	x.placed = true
	s.launch(x, s.newRunBody(x, sc, *req, ag, r, conv, userMsg, state, leaf, out.Created, len(extra) > 0))
	return out, true, nil
}

// launchEarly begins executing the run that in starts, before the start is
// stored (early.go): in gets the ids its run, conversation and message will
// be stored with, and the run's events are held until Execution.open.
func (s *Service) launchEarly(t *term, sc chat.Scope, in *store.RunStart, req *StartRequest, ag *engine.Agent, tel *telemetry.Run) *execution {
	store.FillConversation(in.NewConversation, sc, in.Run.CreatedAt)
	in.Run.ConversationID = in.NewConversation.ID
	store.FillRun(&in.Run, sc, in.Run.CreatedAt)
	store.FillMessage(&in.Message, in.Run.CreatedAt)
	r, conv, userMsg := in.Run, *in.NewConversation, in.Message
	userMsg.ConversationID, userMsg.RunID = conv.ID, r.ID
	// The run's metrics name it now: its execution begins before the start
	// returns (and Bind is not called twice: the engine reads what it set).
	tel.Bind(r)
	x := s.newExecution(t, sc, r, 0, tel)
	x.placed, x.early = true, true
	x.opening = &opening{decided: make(chan struct{})}
	s.launch(x, s.newRunBody(x, sc, *req, ag, r, conv, userMsg, req.State, userMsg.ID, true, false))
	// The run's goroutine is next on this thread: yielding lets it send
	// the model request before the start's write takes the thread (a
	// group commit's leader runs SQLite for the whole batch). The start
	// has until the model's first token to be stored.
	runtime.Gosched()
	return x
}

// newRunBody is what a new run executes: its announcements, its context
// (the branch down to leaf, compacted) and the engine. The closure's frame
// stays under the whole run (the run waits for every token below it), so
// what is done before the engine starts is in newRunTask's frame, gone once
// the engine runs: the run's stack is meant to stay at 8 KiB
// (docs/benchmarks.md, issue 25, eighth round: run stacks).
func (s *Service) newRunBody(x *execution, sc chat.Scope, req StartRequest, ag *engine.Agent, r chat.Run, conv chat.Conversation,
	userMsg chat.Message, state json.RawMessage, leaf string, created, extra bool) func(ctx context.Context, o *engine.Outcome) {
	return func(ctx context.Context, o *engine.Outcome) {
		if x.early {
			ctx = engine.WithAfterStart(ctx, x.deferWrite) // early.go
		}
		t, failed := s.newRunTask(ctx, x, sc, &req, ag, &r, &conv, &userMsg, state, leaf, created, extra)
		if failed != nil {
			*o = *failed
			return
		}
		engine.Execute(ctx, s.eng, t, x, o)
	}
}

// newRunTask makes a new run's announcements and reads its context: the
// task to execute, or the Outcome that ends the run before the engine.
//
//go:noinline
func (s *Service) newRunTask(ctx context.Context, x *execution, sc chat.Scope, req *StartRequest, ag *engine.Agent, r *chat.Run, conv *chat.Conversation,
	userMsg *chat.Message, state json.RawMessage, leaf string, created, extra bool) (*engine.Task, *engine.Outcome) {
	if created {
		x.Emit(ctx, event.New(event.ConversationCreatedData{ConversationID: conv.ID, Title: conv.Title}))
	}
	x.Emit(ctx, event.New(event.RunStartedData{ConversationID: conv.ID, Input: req.Input, UserMessageID: userMsg.ID, Engine: req.Engine, ClientRunID: req.ClientRunID,
		AgentID: r.AgentID, AgentVersion: r.AgentVersion}))
	if state != nil {
		x.Emit(ctx, event.Event{Step: "worker", Payload: event.StateSnapshotData{State: state}})
	}
	// A conversation this request created holds just the message it
	// wrote: no read stands between the start and the model call.
	history := []chat.Message{*userMsg}
	var err error
	if !created || extra || userMsg.ID == "" {
		if history, err = s.history(ctx, sc, conv.ID, leaf); err != nil {
			return nil, &engine.Outcome{Status: engine.StatusFailed, Error: &event.ErrorInfo{Code: errcode.StoreFailed, Message: "The conversation history could not be read."}}
		}
	}
	// An early run's new conversation has no compaction yet: it reads
	// none, and compacts (which writes) only once its start is stored.
	if !x.early || s.compactionDue(history) {
		if !x.started() {
			return nil, &engine.Outcome{Status: engine.StatusCancelled}
		}
		history = s.withCompaction(ctx, sc, conv.ID, r.ID, x, history, true) // context.go
	}
	opts := engine.Options{Engine: req.Engine, Structured: req.Structured, FrontendTools: req.FrontendTools,
		Context: req.Context, MaxSteps: req.MaxSteps, State: state}
	return &engine.Task{Scope: sc, Run: *r, Conversation: *conv, History: history, Options: opts, Agent: ag, Budget: s.budget(*r)}, nil
}

// resolveAgent finds the agent version a new run executes: the request's
// agent (which an existing conversation must be bound to), else the
// conversation's, else the tenant's default, at the version the request
// pins, else the published one. Nil without agents.
func (s *Service) resolveAgent(ctx context.Context, sc chat.Scope, req StartRequest) (*engine.Agent, error) {
	if s.cfg.Agents == nil {
		if req.AgentID != "" || req.AgentVersion != 0 {
			return nil, fmt.Errorf("%w: this server has no agents", ErrAgentNotFound)
		}
		return nil, nil
	}
	ref := agent.Ref{AgentID: req.AgentID, Version: req.AgentVersion}
	if req.ConversationID != "" {
		c, err := s.st.GetConversation(ctx, sc, req.ConversationID)
		if err != nil {
			return nil, err
		}
		switch {
		case c.AgentID == "": // made before agents: it follows the tenant's default
		case ref.AgentID != "" && ref.AgentID != c.AgentID:
			return nil, &AgentMismatchError{Bound: c.AgentID, Asked: ref.AgentID}
		default:
			ref.AgentID = c.AgentID
		}
	}
	ag, err := s.cfg.Agents.Resolve(ctx, sc, ref)
	switch {
	case errors.Is(err, agent.ErrVersionNotFound):
		return nil, fmt.Errorf("%w: version %d of agent %s", ErrAgentVersionNotFound, ref.Version, cmp.Or(ref.AgentID, "default"))
	case errors.Is(err, store.ErrNotFound):
		return nil, fmt.Errorf("%w: %s", ErrAgentNotFound, ref.AgentID)
	}
	return ag, err
}

func titleFrom(input string) string {
	input = strings.Join(strings.Fields(input), " ")
	if utf8.RuneCountInString(input) <= 60 {
		return input
	}
	return string([]rune(input)[:59]) + "…"
}

// admit counts work about to begin (a start, a continuation), unless the
// service is stopping: Shutdown waits for everything it admitted. Every
// admission happens before Shutdown waits (both hold s.admitting around
// stopping), as sync.WaitGroup requires.
func (s *Service) admit() bool {
	s.admitting.RLock()
	defer s.admitting.RUnlock()
	if s.stopping {
		return false
	}
	s.admitted.Add(1)
	return true
}

// release ends what admit counted: a start that did not launch, or the
// execution it launched.
func (s *Service) release() { s.admitted.Done() }

// haltable is ctx that also ends when Shutdown gives up waiting; stop
// releases it.
func (s *Service) haltable(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	unhook := context.AfterFunc(s.halts.pick(), cancel)
	return ctx, func() {
		unhook()
		cancel()
	}
}

// runLog is the logger of lines about run r.
func (s *Service) runLog(r chat.Run) *slog.Logger { return telemetry.RunLogger(s.log, r) }

// abandon ends a run that failed before it could execute.
func (s *Service) abandon(r chat.Run, cause error) {
	log := s.runLog(r)
	log.Error("run could not start", "err", cause)
	now := time.Now()
	_, err := s.st.UpdateRun(s.halt, r.Tenant, r.ID, store.RunUpdate{
		Status: chat.RunFailed, EndedAt: &now, Error: &event.ErrorInfo{Code: errcode.StartFailed, Message: "The run could not start."},
	})
	if err != nil {
		log.Error("mark run failed", "err", err)
	}
}

// history reads the messages of a conversation's context, oldest first:
// its branch from the root down to leaf.
func (s *Service) history(ctx context.Context, sc chat.Scope, conv, leaf string) ([]chat.Message, error) {
	all, err := s.messages(ctx, sc, conv)
	if err != nil {
		return nil, err
	}
	return chat.Branch(all, leaf), nil
}

// messages reads every stored message of a conversation, oldest first.
func (s *Service) messages(ctx context.Context, sc chat.Scope, conv string) ([]chat.Message, error) {
	var all []chat.Message
	cursor := ""
	for {
		page, next, err := s.st.ListMessages(ctx, sc, conv, store.MessageFilter{}, store.Page{Limit: 500, Cursor: cursor})
		if err != nil {
			return nil, err
		}
		all = append(all, page...)
		if next == "" {
			return all, nil
		}
		cursor = next
	}
}

// LastSeq is the thread's last event seq, read once this process's events
// are in the log, so a client that loads stored state and then follows the
// thread from there misses nothing written here.
func (s *Service) LastSeq(ctx context.Context, sc chat.Scope, thread string) (int64, error) {
	if err := s.evlog.Flush(ctx); err != nil {
		return 0, err
	}
	return s.st.LastSeq(ctx, sc.Tenant, thread)
}

// Get returns one of the principal's runs.
func (s *Service) Get(ctx context.Context, sc chat.Scope, runID string) (chat.Run, error) {
	r, err := s.st.GetRun(ctx, sc, runID)
	if !errors.Is(err, store.ErrNotFound) {
		return r, err
	}
	// Not started yet: a queued input (multitask.go) is its run, queued.
	if r, err := s.getQueued(ctx, sc, runID); !errors.Is(err, store.ErrNotFound) {
		return r, err
	}
	// Taken from the queue between the two reads: started now, or dropped.
	return s.st.GetRun(ctx, sc, runID)
}

// Timeline returns a run with every event it emitted, in seq order.
func (s *Service) Timeline(ctx context.Context, sc chat.Scope, runID string) (chat.Run, []event.Event, error) {
	r, err := s.st.GetRun(ctx, sc, runID)
	if err != nil {
		return chat.Run{}, nil, err
	}
	if err := s.evlog.Flush(ctx); err != nil {
		return chat.Run{}, nil, err
	}
	evs, err := s.st.ListEvents(ctx, sc, store.ListEventsParams{Thread: r.ConversationID, RunID: r.ID})
	return r, slices.DeleteFunc(evs, func(ev event.Event) bool { return ev.Type == event.SeqSkipped }), err
}

// Cancel stops a run, on whichever replica executes it. Cancelling a
// finished run changes nothing. It waits a little for the run to end so the
// answer usually shows its final status.
func (s *Service) Cancel(ctx context.Context, sc chat.Scope, runID string) (chat.Run, error) {
	r, err := s.cancelFor(ctx, sc, runID, "")
	if !errors.Is(err, store.ErrNotFound) {
		return r, err
	}
	// A queued input leaves the queue and never starts.
	if r, err := s.cancelQueued(ctx, sc, runID); !errors.Is(err, store.ErrNotFound) {
		return r, err
	}
	// Taken from the queue meanwhile: its run has started, cancel it.
	return s.cancelFor(ctx, sc, runID, "")
}

// cancelFor is Cancel saying why (bus.Control.Reason).
func (s *Service) cancelFor(ctx context.Context, sc chat.Scope, runID, reason string) (chat.Run, error) {
	r, err := s.st.GetRun(ctx, sc, runID)
	if err != nil || !chat.Active(r.Status) {
		return r, err
	}
	if r.Status != chat.RunAwaitingInput {
		if err := s.requestCancelFor(ctx, r, reason); err != nil {
			return r, err
		}
		if r, err = s.awaitEnd(ctx, sc, runID, 5*time.Second); err != nil || r.Status != chat.RunAwaitingInput {
			return r, err
		}
		// It paused as the cancel came: cancel the wait.
	}
	if err := s.cancelWaiting(ctx, r); err != nil {
		return r, err
	}
	return s.awaitEnd(ctx, sc, runID, 5*time.Second)
}

// cancelWaiting ends a run waiting for a person, cancelled.
func (s *Service) cancelWaiting(ctx context.Context, r chat.Run) error {
	// Its confirmations end first: a decision from now on is refused
	// rather than approved with nothing left to run it.
	if _, err := s.st.EndConfirmations(ctx, r.Tenant, r.ID, time.Now()); err != nil {
		return err
	}
	if x := s.claimRun(ctx, r, "", telemetry.Cause{}); x != nil {
		if s.admit() {
			s.launch(x, func(_ context.Context, o *engine.Outcome) { *o = engine.Outcome{Status: engine.StatusCancelled} })
		} else {
			// Shutting down: store the cancel; the replica that takes the
			// run over when this one's term ends finds it.
			_ = s.requestCancel(ctx, x.run)
		}
	}
	return nil
}

// Decide records a person's decision on a confirmation and continues its run.
// Exactly one decision wins; repeating it returns the same confirmation.
func (s *Service) Decide(ctx context.Context, sc chat.Scope, id string, d chat.Decision) (chat.Confirmation, error) {
	return s.DecideFor(ctx, sc, id, d, "")
}

// DecideFor is Decide for a client that names the continuation (an AG-UI
// resume): clientRunID goes on the run.resumed event when this decision is
// the one that resumes the run.
func (s *Service) DecideFor(ctx context.Context, sc chat.Scope, id string, d chat.Decision, clientRunID string) (chat.Confirmation, error) {
	d.At = time.Now()
	// Stored before the decision is, so every resume that can see the
	// decision finds it; the resume that continues the run takes it.
	// Entries no resume takes (the run was cancelled) are expired by the
	// sweep.
	s.continuations.put(id, continuation{clientRunID: clientRunID, status: d.Status, cause: telemetry.CauseOf(ctx), at: d.At})
	c, err := s.st.DecideConfirmation(ctx, sc, id, d)
	if err != nil && !errors.Is(err, store.ErrExpired) {
		s.continuations.drop(id)
	}
	if errors.Is(err, store.ErrExpired) && c.ID != "" {
		s.resume(c, clientRunID, telemetry.CauseOf(ctx)) // the run learns of the expiry now rather than at the next sweep
	}
	if err != nil {
		return c, err
	}
	s.resume(c, clientRunID, telemetry.CauseOf(ctx))
	return c, nil
}

// Confirmations lists the principal's confirmations in a status ("" for all).
func (s *Service) Confirmations(ctx context.Context, sc chat.Scope, status string) ([]chat.Confirmation, error) {
	return s.st.ListConfirmations(ctx, sc, status)
}

// resume continues the run of a decided confirmation, if it is waiting and no
// one else has claimed it.
// cause is the request that decided, if one did: the continuation's span links it.
func (s *Service) resume(c chat.Confirmation, clientRunID string, cause telemetry.Cause) {
	r, err := s.st.GetRunAnyOwner(s.ctx, c.Tenant, c.RunID)
	if err != nil {
		return
	}
	s.continueRun(r, c, clientRunID, cause)
}

// continueRun is resume once the run is read.
func (s *Service) continueRun(r chat.Run, c chat.Confirmation, clientRunID string, cause telemetry.Cause) {
	ctx := s.ctx
	if r.Status != chat.RunAwaitingInput {
		return
	}
	if !s.admit() {
		return // shutting down: the next start's sweep continues the run
	}
	// What the deciding request left, whichever resume gets here.
	if v, ok := s.continuations.get(c.ID); ok && v.status == c.Status {
		clientRunID, cause = v.clientRunID, v.cause
	}
	x := s.claimRun(ctx, r, c.ID, cause)
	if x == nil {
		s.release()
		return
	}
	s.continuations.drop(c.ID)
	sc := chat.Scope{Tenant: r.Tenant, User: r.Owner}
	s.launch(x, func(ctx context.Context, o *engine.Outcome) {
		telemetry.Waited(ctx, c)
		conv, err := s.st.GetConversation(ctx, sc, r.ConversationID)
		if err != nil {
			*o = engine.Outcome{Status: engine.StatusFailed, Error: &event.ErrorInfo{Code: errcode.StoreFailed, Message: "The conversation could not be read."}}
			return
		}
		all, err := s.messages(ctx, sc, conv.ID)
		history := chat.Branch(all, chat.RunLeaf(all, x.run))
		if err != nil {
			*o = engine.Outcome{Status: engine.StatusFailed, Error: &event.ErrorInfo{Code: errcode.StoreFailed, Message: "The conversation history could not be read."}}
			return
		}
		history = s.withCompaction(ctx, sc, conv.ID, x.run.ID, x, history, false) // context.go
		// The continuation runs the version the run started with, whatever
		// was published (or archived) since.
		var ag *engine.Agent
		if s.cfg.Agents != nil && x.run.AgentID != "" {
			if ag, err = s.cfg.Agents.Exact(ctx, sc, x.run.AgentID, x.run.AgentVersion); err != nil {
				x.log.Error("agent version of a continued run", "agent_id", x.run.AgentID, "agent_version", x.run.AgentVersion, "err", err)
				*o = engine.Outcome{Status: engine.StatusFailed, Error: &event.ErrorInfo{Code: errcode.AgentUnavailable,
					Message: fmt.Sprintf("The run's agent version (%s v%d) can no longer run.", x.run.AgentID, x.run.AgentVersion)}}
				return
			}
		}
		engine.Execute(ctx, s.eng, &engine.Task{Scope: sc, Run: x.run, Conversation: conv, History: history, Resume: &engine.Resume{Confirmation: c, ClientRunID: clientRunID}, Agent: ag, Budget: s.budget(x.run)}, x, o)
	})
}

// windDown is how long, once Shutdown's context has ended, the executions
// it cut short get to record their end (failed, server_shutdown) and the
// event log to be written out, before the service gives up on the store.
const windDown = 2 * time.Second

// Shutdown stops the service, as centrifuge's Node.Shutdown does. It admits
// no new work, and gives the work it admitted (starts in progress, the
// executions they launched, continuations) until ctx ends to finish. Then
// it ends what still executes (failed, server_shutdown), stops the
// background loops and writes the event log out, and returns nil once all
// of it has returned: the store may be closed then.
//
// When ctx ends first, Shutdown returns ctx's error, after the executions
// it cut short had windDown to record their end; past that it gives up on
// the store (no more retries; store calls still in flight are cancelled,
// and events still held are dropped and logged), waits for what it
// started to return, and a start still inside the store then launches
// nothing. Runs it could not end are ended by recovery, as after a crash
// (the next start on a store used alone, another replica's takeover
// otherwise). Shutdown may be called more than once, also
// concurrently; each call waits as its ctx allows.
func (s *Service) Shutdown(ctx context.Context) error {
	s.stopOnce.Do(func() {
		s.admitting.Lock()
		s.stopping = true
		s.admitting.Unlock()
		go func() {
			s.admitted.Wait()
			close(s.drained)
		}()
	})
	var err error
	select {
	case <-s.drained:
	case <-ctx.Done():
		err = ctx.Err()
	}
	s.endOnce.Do(func() {
		s.cancel(engine.ErrShutdown) // what still executes ends now; the loops stop
		go func() {
			<-s.drained
			s.wg.Wait()
			s.evlog.Close(s.halt)
			close(s.down)
		}()
	})
	if err == nil {
		select {
		case <-s.down:
			return nil
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	wind := time.NewTimer(windDown)
	defer wind.Stop()
	select {
	case <-s.down:
	case <-wind.C:
		s.haltNow()
		<-s.down
	}
	return err
}

// controlLoop applies control messages meant for runs executing here.
func (s *Service) controlLoop() {
	defer s.wg.Done()
	ch, err := s.bus.Controls(s.ctx)
	if err != nil {
		s.log.Error("control stream unavailable: cancel reaches only local runs", "err", err)
		return
	}
	for c := range ch {
		if c.Kind != bus.ControlCancel {
			continue
		}
		s.mu.Lock()
		x := s.executing[c.RunID]
		s.mu.Unlock()
		if x != nil && x.run.Tenant == c.Tenant {
			cause := engine.ErrCancelled
			if c.Reason == bus.ReasonInterrupt {
				cause = engine.ErrInterrupted
			}
			x.cancel(cause)
		}
	}
}

// sweepLoop does the housekeeping every replica shares: it expires
// confirmations, ends runs whose executor vanished, continues runs whose
// decision no replica applied, and applies retention.
func (s *Service) sweepLoop() {
	defer s.wg.Done()
	t := time.NewTicker(s.cfg.SweepInterval)
	defer t.Stop()
	lastRetention := time.Time{}
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		s.sweep(now)
		s.sweepQueues() // multitask.go
		if now.Sub(lastRetention) > time.Hour {
			lastRetention = now
			if s.cfg.Files != nil {
				if n, err := s.cfg.Files.Sweep(s.ctx, now); err != nil {
					s.log.Warn("file retention", "err", err)
				} else if n > 0 {
					s.log.Info("retention removed unreferenced files", "files", n)
				}
			}
			if n, err := s.st.DeleteRunsEndedBefore(s.ctx, now.Add(-s.cfg.RunRetention)); err != nil {
				s.log.Warn("retention", "err", err)
			} else if n > 0 {
				s.log.Info("retention removed old runs", "runs", n)
			}
		}
	}
}

func (s *Service) sweep(now time.Time) {
	s.continuations.expire(now.Add(-continuationTTL))
	expired, err := s.st.ExpireConfirmations(s.ctx, now)
	if err != nil {
		s.log.Warn("expire confirmations", "err", err)
	}
	for _, c := range expired {
		s.resume(c, "", telemetry.Cause{})
	}
	s.resumeUnapplied(now)
	if s.cfg.Sole {
		return // no other process executes runs: none is orphaned while this one lives
	}
	orphans, err := s.st.OrphanedRuns(s.ctx, now, 100)
	if err != nil {
		s.log.Warn("orphaned runs", "err", err)
		return
	}
	for _, r := range orphans {
		if t, ok := s.takeOver(r); ok {
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				s.endTakenOver(t, r)
			}()
		}
	}
}
