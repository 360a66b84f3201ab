package run

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/engine"
	"github.com/agentchat/agentchat/internal/errcode"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/store"
	"github.com/agentchat/agentchat/internal/telemetry"
)

// execution is one run executing in this process: the engine's Host.
type execution struct {
	s      *Service
	sc     chat.Scope
	run    chat.Run
	cancel context.CancelCauseFunc
	done   chan struct{}
	placed bool // holds its place in the service's capacity already (a new run's)

	mu        sync.Mutex
	seq       int64 // last seq given out on the thread
	reserved  int64 // highest seq the store has reserved for this run (publishable before written)
	extending bool  // a reservation extension is in flight
	errored   bool  // an error event was emitted
	calls     openCalls
	// asked: the run resumed after a confirmation, so its end must end the
	// confirmations still pending.
	asked bool
	// requested are the confirmations asked for and not yet stored: they
	// are stored with the run's pause (pause), never before.
	requested []chat.Confirmation
	// stateMu orders the run's changes of its thread's state (state.go).
	stateMu sync.Mutex

	term *term // whether this process may still act for the run
	// early: the run began executing before its start was stored; opening
	// is its wait for the start (early.go).
	early   bool
	opening *opening

	tel *telemetry.Run // metrics and the span of this execution
	log *slog.Logger   // lines about the run: they carry its run_id and trace_id
}

// newExecution prepares r, which names t as its executor, for execution
// here, observed by tel (made before r was stored or claimed, since r names
// its trace).
func (s *Service) newExecution(t *term, sc chat.Scope, r chat.Run, lastSeq int64, tel *telemetry.Run) *execution {
	return &execution{s: s, sc: sc, run: r, seq: lastSeq, reserved: r.SeqReserved, done: make(chan struct{}), term: t,
		tel: tel, log: s.runLog(r)}
}

// fenced reports whether the execution may no longer act for its run.
func (x *execution) fenced() bool { return x.term.fenced() }

func (x *execution) stopped() bool { return x.term.stopped() }

// store runs op until it succeeds, retrying while the store is unavailable,
// unless the execution is fenced meanwhile, or Shutdown gives up on the
// store (then it reports false: the outcome is not this process's to
// record). Other errors are logged and
// taken as done: retrying them would not help.
func (x *execution) store(what string, op func(context.Context) error) bool {
	backoff := 50 * time.Millisecond
	for {
		if x.fenced() {
			return false
		}
		err := op(x.term.ctx)
		switch {
		case err == nil:
			return true
		case x.term.ctx.Err() != nil:
			return false // fenced, or Shutdown gave up on the store
		case errors.Is(err, store.ErrUnavailable):
		case x.fenced():
			return false
		default:
			x.log.Error(what, "err", err)
			return true
		}
		select {
		case <-time.After(backoff):
		case <-x.term.ctx.Done():
			return false
		}
		backoff = min(2*backoff, time.Second)
	}
}

// launch executes body in the background and finishes the run with the
// outcome body sets. The outcome is on the heap, not in the run goroutine's
// frame, which stays under the body's for the whole run (ended).
func (s *Service) launch(x *execution, body func(ctx context.Context, o *engine.Outcome)) {
	if !x.placed {
		s.exec.take()
	}
	ctx, cancel := context.WithCancelCause(s.runs.pick())
	x.cancel = cancel
	ctx = x.tel.Begin(ctx)
	s.mu.Lock()
	s.executing[x.run.ID] = x
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(x.done)
		defer s.release()
		defer s.exec.give()
		defer func() {
			s.mu.Lock()
			if s.executing[x.run.ID] == x {
				delete(s.executing, x.run.ID)
			}
			s.mu.Unlock()
			cancel(nil)
		}()
		// A fenced term stops the engine too: its events would be dropped.
		defer context.AfterFunc(x.term.execs.pick(), func() { cancel(errLeaseLost) })()
		o := new(engine.Outcome)
		body(ctx, o)
		s.ended(ctx, x, o)
	}()
}

// ended records the outcome o of x's body. It is a function of its own so
// that its locals are not in the frame of the run's goroutine while the body
// runs (the body waits for every token above it): the run's stack is meant
// to stay at 8 KiB (docs/benchmarks.md, issue 25, eighth round: run stacks).
//
//go:noinline
func (s *Service) ended(ctx context.Context, x *execution, o *engine.Outcome) {
	if !x.started() {
		return // an early run whose start failed: nothing of it is recorded (early.go)
	}
	if stopped := engine.Stopped(ctx); stopped != nil && o.Status != engine.StatusAwaiting {
		stopped.Usage = o.Usage
		*o = *stopped
	}
	x.tel.End(o.Status, o.Error, o.Usage) // before the end is published: whoever sees it finds it counted
	x.finish(*o)
	if o.Status == engine.StatusAwaiting && errors.Is(context.Cause(ctx), engine.ErrCancelled) {
		// Cancelled while it paused: the wait it just recorded ends
		// too, once this execution is gone.
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			<-x.done
			if err := s.cancelWaiting(s.halt, x.run); err != nil {
				x.log.Warn("cancel a run that paused as it was cancelled", "err", err)
			}
		}()
	}
}

// Emit gives ev the next seq of the thread, enqueues it to the log and
// publishes it. Holding the lock across both keeps bus order equal to seq order.
// Once the execution is fenced (its lease could not be kept) it emits nothing:
// the seqs after its last are another replica's to give. An early run's
// events wait for its start to be stored, or are held until then (early.go).
func (x *execution) Emit(ctx context.Context, ev event.Event) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.hold(ctx, ev) {
		x.emit(ctx, ev)
	}
}

// emit is Emit with x.mu held, once the run's start is stored.
func (x *execution) emit(ctx context.Context, ev event.Event) {
	if x.fenced() || !x.reserve() {
		return
	}
	x.stamp(&ev)
	x.tel.Event(ev)
	if ev.Type == event.Error {
		x.errored = true
	}
	x.calls.note(ev)
	x.s.evlog.Enqueue(ev, x)
	x.s.pub.publish(ctx, ev) // not cancelled with the run: publish detaches ctx where it waits
}

// reserveBlock is how many seqs a run reserves at a time. A chat answer
// rarely needs a second block; a long one extends in the background when half
// of the block is left.
const reserveBlock = 512

// reserve makes sure the next seq is reserved in the store before it is
// published (a seq is published before it is written: a crash in between
// must not let another event take it). Called with x.mu held; it reports
// false when the execution is fenced meanwhile.
func (x *execution) reserve() bool {
	next := x.seq + 1
	if next > x.reserved {
		// Out of reserved seqs (the background extension is late, or this
		// run never had any): wait for the store, this run only.
		upTo := next + reserveBlock
		if !x.store("reserve seqs", func(ctx context.Context) error { return x.s.st.ReserveSeqs(ctx, x.run.Tenant, x.run.ID, upTo) }) {
			return false
		}
		x.reserved = upTo
		return true
	}
	if !x.extending && x.reserved-next < reserveBlock/2 {
		x.extending = true
		upTo := x.reserved + reserveBlock
		x.s.wg.Add(1) // within an execution: the count is above zero
		go func() {
			defer x.s.wg.Done()
			ok := x.store("reserve seqs", func(ctx context.Context) error { return x.s.st.ReserveSeqs(ctx, x.run.Tenant, x.run.ID, upTo) })
			x.mu.Lock()
			if ok {
				x.reserved = max(x.reserved, upTo)
			}
			x.extending = false
			x.mu.Unlock()
		}()
	}
	return true
}

func (x *execution) stamp(ev *event.Event) {
	x.seq++
	ev.Tenant, ev.Thread, ev.Run, ev.Seq = x.run.Tenant, x.run.ConversationID, x.run.ID, x.seq
	ev.Time = time.Now().UTC()
	if ev.Turn == "" {
		ev.Turn = x.run.TurnID
	}
	if ev.Type == "" {
		ev.Type = ev.Payload.EventType()
	}
}

// AppendMessage stores a message of the run's conversation.
func (x *execution) AppendMessage(ctx context.Context, m chat.Message) (chat.Message, error) {
	if !x.started() {
		return chat.Message{}, errStartFailed
	}
	m.ConversationID = x.run.ConversationID
	if m.RunID == "" {
		m.RunID = x.run.ID
	}
	return x.s.st.AppendMessage(context.WithoutCancel(ctx), x.sc, m)
}

// RequestConfirmation makes a pending confirmation for a call of this run.
// It is stored when the run pauses, in one transaction with the events that
// announce it (pause): no client can see it, by any means, before the wait
// is durable. A run that does not pause stores none.
func (x *execution) RequestConfirmation(_ context.Context, c chat.Confirmation) (chat.Confirmation, error) {
	now := time.Now().UTC().Truncate(time.Millisecond) // as stored
	c.Tenant, c.Owner, c.RunID, c.ConversationID = x.run.Tenant, x.run.Owner, x.run.ID, x.run.ConversationID
	c.ExpiresAt = now.Add(x.s.cfg.ConfirmTTL)
	store.FillConfirmation(&c, now)
	x.mu.Lock()
	x.requested = append(x.requested, c)
	x.mu.Unlock()
	return c, nil
}

// finish records the outcome. A terminal run's last event is written to the
// log and the run's status updated before the event is published, so a
// client that sees the end finds the timeline complete and may start the
// next run at once.
func (x *execution) finish(o engine.Outcome) {
	s := x.s
	ctx := s.halt // outlives the execution's context, not Shutdown giving up
	if o.Status == engine.StatusAwaiting {
		x.pause(ctx, o)
		return
	}
	if o.Status == engine.StatusFailed && o.Error == nil {
		o.Error = &event.ErrorInfo{Code: errcode.RunFailed, Message: "The run failed."}
	}
	if o.Status != engine.StatusSucceeded {
		x.mu.Lock()
		unfinished := x.calls.failures(unfinishedReason(o.Status))
		x.mu.Unlock()
		for _, ev := range unfinished {
			x.Emit(ctx, ev)
		}
	}
	x.mu.Lock()
	if o.Status == engine.StatusFailed && !x.errored {
		x.mu.Unlock()
		u := o.Usage
		x.Emit(ctx, event.New(event.ErrorData{ErrorInfo: *o.Error, Usage: &u}))
		x.mu.Lock()
	}
	if x.fenced() {
		x.mu.Unlock()
		return // another replica ends the run
	}
	end := event.New(event.RunFinishedData{Status: o.Status, Error: o.Error, Usage: o.Usage, Answer: o.Answer, PendingToolCalls: o.Pending})
	x.stamp(&end)
	s.evlog.Enqueue(end, x)
	now := end.Time
	if !x.store("write run end", s.evlog.Flush) {
		x.mu.Unlock()
		return
	}
	if x.asked && !x.store("end pending confirmations", func(ctx context.Context) error {
		_, err := s.st.EndConfirmations(ctx, x.run.Tenant, x.run.ID, now)
		return err
	}) {
		x.mu.Unlock()
		return
	}
	if !x.store("record run end", func(ctx context.Context) error {
		_, err := s.st.UpdateRun(ctx, x.run.Tenant, x.run.ID, store.RunUpdate{
			Status: o.Status, Error: o.Error, Usage: &o.Usage, EndedAt: &now, State: []byte("null"),
		})
		return err
	}) {
		x.mu.Unlock()
		return
	}
	s.pub.publishEnd(end)
	x.mu.Unlock()
	s.kickQueue(x.run.Tenant, x.run.ConversationID) // multitask.go
	logEnd(x.log, o, "conversation_id", x.run.ConversationID,
		"input_tokens", o.Usage.InputTokens, "output_tokens", o.Usage.OutputTokens)
}

// pause records the run's wait for a person so that a wait any client sees
// survives any crash. Its confirmations, the events announcing them and the
// state to resume from are written in one transaction (PauseRun) before
// anything of them is published or listed; the events are published next,
// and the status last: a claim needs that status, so the claimer's seqs
// follow the announcement's. A decision that comes in between is picked up
// by resumeDecided. A process that dies after PauseRun leaves a running run
// with a State, which recovery sets waiting again (recovery.go).
func (x *execution) pause(ctx context.Context, o engine.Outcome) {
	s := x.s
	state := o.State
	if len(state) == 0 {
		state = json.RawMessage(`{}`) // a stored pause always has a state (store.PauseRunParams)
	}
	x.mu.Lock()
	locked := true
	defer func() {
		if locked {
			x.mu.Unlock()
		}
	}()
	announce := make([]event.Event, 0, len(o.Announce))
	for _, ev := range o.Announce {
		if x.fenced() || !x.reserve() {
			return
		}
		x.stamp(&ev)
		x.tel.Event(ev)
		x.calls.note(ev)
		announce = append(announce, ev)
	}
	confs := x.requested
	x.requested = nil
	// The log holds every event before the announcement first: seqs are
	// written in order, and a retry of PauseRun knows its own by them.
	if !x.store("flush before pause", s.evlog.Flush) {
		return
	}
	var refused error
	if !x.store("record the pause", func(ctx context.Context) error {
		err := s.st.PauseRun(ctx, store.PauseRunParams{Tenant: x.run.Tenant, RunID: x.run.ID, Owner: s.cfg.ReplicaID, Epoch: x.term.epoch,
			Confirmations: confs, Events: announce, State: state, Usage: o.Usage})
		if err != nil && !errors.Is(err, store.ErrUnavailable) {
			refused = err
			return nil // not worth retrying
		}
		return err
	}) {
		return
	}
	if refused != nil {
		if errors.Is(refused, store.ErrConflict) || errors.Is(refused, store.ErrNotFound) {
			// No longer this term's run (taken over, ended, deleted): its
			// new executor decides what becomes of it.
			x.log.Warn("the run's pause was not recorded: the run is no longer this execution's", "err", refused)
			return
		}
		// Nothing of the wait was stored or seen: end the run rather than
		// leave it running with no one to continue it. The announcement's
		// seqs were never written nor published: the end reuses them.
		x.seq -= int64(len(announce))
		x.mu.Unlock()
		locked = false
		x.log.Error("record the pause", "err", refused)
		x.finish(engine.Outcome{Status: engine.StatusFailed, Usage: o.Usage,
			Error: &event.ErrorInfo{Code: errcode.StoreFailed, Message: "The run's wait for a decision could not be stored."}})
		return
	}
	if x.fenced() {
		return // the replica taking the run over publishes the announcement
	}
	for _, ev := range announce {
		s.pub.publish(ctx, ev)
	}
	x.mu.Unlock()
	locked = false
	if !x.store("record the run as waiting", func(ctx context.Context) error {
		_, err := s.st.UpdateRun(ctx, x.run.Tenant, x.run.ID, store.RunUpdate{Status: chat.RunAwaitingInput, From: []string{chat.RunRunning}})
		if errors.Is(err, store.ErrConflict) {
			return nil // taken over meanwhile: the taker sets it waiting
		}
		return err
	}) {
		return
	}
	s.resumeDecided(ctx, x.run, o.Awaiting)
}

// resumeDecided continues a run that paused while one of its confirmations
// was already decided (two calls awaiting, the first decision arriving while
// the run handled the second).
func (s *Service) resumeDecided(ctx context.Context, r chat.Run, awaiting []string) {
	if len(awaiting) == 0 {
		return
	}
	list, err := s.st.ListConfirmations(ctx, chat.Scope{Tenant: r.Tenant, User: r.Owner}, "")
	if err != nil {
		return
	}
	for _, c := range list {
		if c.RunID == r.ID && c.Status != chat.ConfirmPending && slices.Contains(awaiting, c.ToolCallID) {
			s.wg.Add(1) // within an execution: the count is above zero
			go func() {
				defer s.wg.Done()
				s.resume(c, "", telemetry.Cause{})
			}()
			return
		}
	}
}
