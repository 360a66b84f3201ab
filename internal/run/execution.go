package run

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/agentchat/agentchat/internal/engine"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/store"
	"github.com/agentchat/agentchat/internal/telemetry"
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

	lease lease // whether this process may still act for the run

	tel *telemetry.Run // metrics and the run's span (telemetry.go)
}

// newExecution prepares r for execution here; r.LeaseUntil is the lease this
// process holds (it set it, by its own clock).
func (s *Service) newExecution(sc store.Scope, r store.Run, lastSeq int64) *execution {
	x := &execution{s: s, sc: sc, run: r, seq: lastSeq, done: make(chan struct{})}
	x.lease.init(s, r)
	x.tel = s.cfg.Telemetry.NewRun(r)
	return x
}

// launch executes body in the background and finishes the run with its outcome.
func (s *Service) launch(x *execution, body func(ctx context.Context) engine.Outcome) {
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
		defer s.release(x.run.Tenant)
		defer func() {
			s.mu.Lock()
			delete(s.executing, x.run.ID)
			s.mu.Unlock()
			cancel(nil)
		}()
		// The lease is kept until the outcome is recorded, not just while
		// the engine runs: recording it may wait for the store.
		stopRenew := s.renewLease(x)
		defer stopRenew()
		o := body(ctx)
		if stopped := engine.Stopped(ctx); stopped != nil && o.Status != engine.StatusAwaiting {
			stopped.Usage = o.Usage
			o = *stopped
		}
		x.tel.End(o.Status, o.Error, o.Usage) // before the end is published: whoever sees it finds it counted
		x.finish(o)
	}()
}

// Emit gives ev the next seq of the thread, enqueues it to the log and
// publishes it. Holding the lock across both keeps bus order equal to seq order.
// Once the execution is fenced (its lease could not be kept) it emits nothing:
// the seqs after its last are another replica's to give.
func (x *execution) Emit(ctx context.Context, ev event.Event) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.fenced() {
		return
	}
	x.stamp(&ev)
	x.tel.Event(ev)
	if ev.Type == event.Error {
		x.errored = true
	}
	x.s.evlog.Enqueue(ev, x)
	x.s.pub.publish(context.WithoutCancel(ctx), ev)
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
		if !x.store("flush before pause", s.evlog.Flush) {
			return
		}
		x.lease.recording.Store(true)
		if !x.store("pause run", func(ctx context.Context) error {
			_, err := s.st.UpdateRun(ctx, x.run.Tenant, x.run.ID, store.RunUpdate{Status: store.RunAwaitingInput, State: o.State, Usage: &o.Usage})
			return err
		}) {
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
	x.lease.recording.Store(true)
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
