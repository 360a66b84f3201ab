package run

import (
	"context"
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
	// asked: the run requested a confirmation (or resumed after one), so
	// its end must end the confirmations still pending.
	asked bool

	term *term // whether this process may still act for the run

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
// unless the execution is fenced meanwhile (then it reports false: the
// outcome is not this process's to record). Other errors are logged and
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
		case errors.Is(err, store.ErrUnavailable):
		case x.fenced():
			return false
		default:
			x.log.Error(what, "err", err)
			return true
		}
		select {
		case <-time.After(backoff):
		case <-x.term.stop:
			return false
		}
		backoff = min(2*backoff, time.Second)
	}
}

// launch executes body in the background and finishes the run with its outcome.
func (s *Service) launch(x *execution, body func(ctx context.Context) engine.Outcome) {
	if !x.placed {
		s.exec.take()
	}
	ctx, cancel := context.WithCancelCause(s.ctx)
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
		defer context.AfterFunc(x.term.ctx, func() { cancel(errLeaseLost) })()
		o := body(ctx)
		if stopped := engine.Stopped(ctx); stopped != nil && o.Status != engine.StatusAwaiting {
			stopped.Usage = o.Usage
			o = *stopped
		}
		x.tel.End(o.Status, o.Error, o.Usage) // before the end is published: whoever sees it finds it counted
		x.finish(o)
		if o.Status == engine.StatusAwaiting && errors.Is(context.Cause(ctx), engine.ErrCancelled) {
			// Cancelled while it paused: the wait it just recorded ends
			// too, once this execution is gone.
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				<-x.done
				if err := s.cancelWaiting(context.WithoutCancel(s.ctx), x.run); err != nil {
					x.log.Warn("cancel a run that paused as it was cancelled", "err", err)
				}
			}()
		}
	}()
}

// Emit gives ev the next seq of the thread, enqueues it to the log and
// publishes it. Holding the lock across both keeps bus order equal to seq order.
// Once the execution is fenced (its lease could not be kept) it emits nothing:
// the seqs after its last are another replica's to give.
func (x *execution) Emit(ctx context.Context, ev event.Event) {
	x.mu.Lock()
	defer x.mu.Unlock()
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
	x.s.pub.publish(context.WithoutCancel(ctx), ev)
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
		go func() {
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
	m.ConversationID = x.run.ConversationID
	if m.RunID == "" {
		m.RunID = x.run.ID
	}
	return x.s.st.AppendMessage(context.WithoutCancel(ctx), x.sc, m)
}

// RequestConfirmation stores a pending confirmation for a call of this run.
func (x *execution) RequestConfirmation(ctx context.Context, c chat.Confirmation) (chat.Confirmation, error) {
	c.Tenant, c.Owner, c.RunID, c.ConversationID = x.run.Tenant, x.run.Owner, x.run.ID, x.run.ConversationID
	c.ExpiresAt = time.Now().Add(x.s.cfg.ConfirmTTL)
	x.mu.Lock()
	x.asked = true
	x.mu.Unlock()
	return x.s.st.CreateConfirmation(context.WithoutCancel(ctx), c)
}

// finish records the outcome. A terminal run's last event is written to the
// log and the run's status updated before the event is published, so a
// client that sees the end finds the timeline complete and may start the
// next run at once.
func (x *execution) finish(o engine.Outcome) {
	s := x.s
	ctx := context.WithoutCancel(s.ctx)
	if o.Status == engine.StatusAwaiting {
		// Announce the wait, and write it out, before the run is recorded as
		// waiting: a claim needs that status, so the claimer's seqs follow ours.
		// A decision that comes in between is picked up by resumeDecided.
		for _, ev := range o.Announce {
			x.Emit(ctx, ev)
		}
		if !x.store("flush before pause", s.evlog.Flush) {
			return
		}
		if !x.store("pause run", func(ctx context.Context) error {
			_, err := s.st.UpdateRun(ctx, x.run.Tenant, x.run.ID, store.RunUpdate{Status: chat.RunAwaitingInput, State: o.State, Usage: &o.Usage})
			return err
		}) {
			return
		}
		s.resumeDecided(ctx, x.run, o.Awaiting)
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
		x.Emit(ctx, event.New(event.ErrorData{ErrorInfo: *o.Error}))
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
	logEnd(x.log, o, "conversation_id", x.run.ConversationID,
		"input_tokens", o.Usage.InputTokens, "output_tokens", o.Usage.OutputTokens)
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
			go s.resume(c, "", telemetry.Cause{})
			return
		}
	}
}
