package run

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/agentchat/agentchat/internal/engine"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/store"
)

// execution is one run executing in this process: the engine's Host.
type execution struct {
	s      *Service
	sc     store.Scope
	run    store.Run
	cancel context.CancelCauseFunc
	done   chan struct{}

	mu      sync.Mutex
	seq     int64 // last seq given out on the thread
	errored bool  // an error event was emitted
}

func (s *Service) newExecution(sc store.Scope, r store.Run, lastSeq int64) *execution {
	return &execution{s: s, sc: sc, run: r, seq: lastSeq, done: make(chan struct{})}
}

// launch executes body in the background and finishes the run with its outcome.
func (s *Service) launch(x *execution, body func(ctx context.Context) engine.Outcome) {
	ctx, cancel := context.WithCancelCause(s.ctx)
	x.cancel = cancel
	s.mu.Lock()
	s.executing[x.run.ID] = x
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(x.done)
		defer s.release(x.run.Tenant)
		defer func() {
			s.mu.Lock()
			delete(s.executing, x.run.ID)
			s.mu.Unlock()
			cancel(nil)
		}()
		stopRenew := s.renewLease(ctx, x)
		o := body(ctx)
		stopRenew()
		if stopped := engine.Stopped(ctx); stopped != nil && o.Status != engine.StatusAwaiting {
			stopped.Usage = o.Usage
			o = *stopped
		}
		x.finish(o)
	}()
}

// renewLease keeps the run's lease while it executes, so other replicas know
// its executor is alive.
func (s *Service) renewLease(ctx context.Context, x *execution) (stop func()) {
	t := time.NewTicker(s.cfg.LeaseTTL / 3)
	quit := make(chan struct{})
	go func() {
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				ok, err := s.st.AcquireLease(context.WithoutCancel(ctx), x.run.Tenant, x.run.ID, s.cfg.ReplicaID, time.Now().Add(s.cfg.LeaseTTL))
				if err == nil && !ok {
					s.log.Error("lost the lease of an executing run; stopping it", "run_id", x.run.ID)
					x.cancel(errLeaseLost)
					return
				}
			}
		}
	}()
	return func() { close(quit) }
}

var errLeaseLost = errors.New("lease lost to another replica")

// Emit gives ev the next seq of the thread, enqueues it to the log and
// publishes it. Holding the lock across both keeps bus order equal to seq order.
func (x *execution) Emit(ctx context.Context, ev event.Event) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.stamp(&ev)
	if ev.Type == event.Error {
		x.errored = true
	}
	x.s.evlog.Enqueue(ev)
	if err := x.s.bus.Publish(context.WithoutCancel(ctx), ev); err != nil {
		// Subscribers fill the gap from the log.
		x.s.log.Warn("publish event", "run_id", ev.Run, "seq", ev.Seq, "err", err)
	}
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
func (x *execution) AppendMessage(ctx context.Context, m store.Message) (store.Message, error) {
	m.ConversationID = x.run.ConversationID
	if m.RunID == "" {
		m.RunID = x.run.ID
	}
	return x.s.st.AppendMessage(context.WithoutCancel(ctx), x.sc, m)
}

// RequestConfirmation stores a pending confirmation for a call of this run.
func (x *execution) RequestConfirmation(ctx context.Context, c store.Confirmation) (store.Confirmation, error) {
	c.Tenant, c.Owner, c.RunID, c.ConversationID = x.run.Tenant, x.run.Owner, x.run.ID, x.run.ConversationID
	c.ExpiresAt = time.Now().Add(x.s.cfg.ConfirmTTL)
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
		if err := s.evlog.Flush(ctx); err != nil {
			s.log.Error("flush before pause", "run_id", x.run.ID, "err", err)
		}
		if _, err := s.st.UpdateRun(ctx, x.run.Tenant, x.run.ID, store.RunUpdate{Status: store.RunAwaitingInput, State: o.State, Usage: &o.Usage}); err != nil {
			s.log.Error("pause run", "run_id", x.run.ID, "err", err)
			return
		}
		s.resumeDecided(ctx, x.run, o.Awaiting)
		return
	}
	if o.Status == engine.StatusFailed && o.Error == nil {
		o.Error = &event.ErrorInfo{Code: "run_failed", Message: "The run failed."}
	}
	x.mu.Lock()
	if o.Status == engine.StatusFailed && !x.errored {
		x.mu.Unlock()
		x.Emit(ctx, event.New(event.ErrorData{ErrorInfo: *o.Error}))
		x.mu.Lock()
	}
	end := event.New(event.RunFinishedData{Status: o.Status, Error: o.Error, Usage: o.Usage, Answer: o.Answer, PendingToolCalls: o.Pending})
	x.stamp(&end)
	s.evlog.Enqueue(end)
	if err := s.evlog.Flush(ctx); err != nil {
		s.log.Error("flush run end", "run_id", x.run.ID, "err", err)
	}
	now := end.Time
	if _, err := s.st.UpdateRun(ctx, x.run.Tenant, x.run.ID, store.RunUpdate{
		Status: o.Status, Error: o.Error, Usage: &o.Usage, EndedAt: &now, State: []byte("null"),
	}); err != nil {
		s.log.Error("record run end", "run_id", x.run.ID, "err", err)
	}
	if err := s.bus.Publish(ctx, end); err != nil {
		s.log.Warn("publish run end", "run_id", x.run.ID, "err", err)
	}
	x.mu.Unlock()
	s.log.Info("run ended", "run_id", x.run.ID, "conversation_id", x.run.ConversationID, "status", o.Status,
		"input_tokens", o.Usage.InputTokens, "output_tokens", o.Usage.OutputTokens)
}

// resumeDecided continues a run that paused while one of its confirmations
// was already decided (two calls awaiting, the first decision arriving while
// the run handled the second).
func (s *Service) resumeDecided(ctx context.Context, r store.Run, awaiting []string) {
	if len(awaiting) == 0 {
		return
	}
	list, err := s.st.ListConfirmations(ctx, store.Scope{Tenant: r.Tenant, User: r.Owner}, "")
	if err != nil {
		return
	}
	for _, c := range list {
		if c.RunID == r.ID && c.Status != store.ConfirmPending && slices.Contains(awaiting, c.ToolCallID) {
			go s.resume(c, "")
			return
		}
	}
}
