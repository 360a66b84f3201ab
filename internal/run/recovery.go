package run

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentchat/agentchat/internal/bus"
	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/engine"
	"github.com/agentchat/agentchat/internal/errcode"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/store"
	"github.com/agentchat/agentchat/internal/telemetry"
)

// Recovery: what one replica does for the runs of another that died, lost
// its database, or missed a message.
//
//   - A run whose executing term is over (its replica died, or lost the
//     store for longer than the TTL) is ended by whichever replica's sweep
//     takes it over: failed (executor_lost), or cancelled if a cancel was
//     requested. A run awaiting input needs no executor and is left waiting;
//     so is a run whose pause was recorded (store.PauseRun: it is running
//     with a State) but whose executor died before recording its status: a
//     client may have seen its wait, and that wait survives.
//   - A decision no replica acted on (the deciding one died before claiming
//     the run, or was refused for load) is found in the store and applied.
//   - A cancel is stored before it is announced, so an executor that missed
//     the announcement sees it at its replica's next heartbeat.
//
// Seqs after a takeover. The dead executor published some events to the bus
// that its log writer may not have written yet. The replica continuing the
// thread copies what the bus retains past the log's last seq into the log
// (the same events, as published), then gives out seqs after the higher of
// the two: it never reuses a seq that a client may have seen with other
// content, and the log stays the complete record of what was published.

// settleSeq makes the log hold everything published on r's thread that the
// bus still retains, and returns the thread's last seq.
func (s *Service) settleSeq(ctx context.Context, r chat.Run) (int64, error) {
	last, err := s.st.LastSeq(ctx, r.Tenant, r.ConversationID)
	if err != nil {
		return 0, err
	}
	kept, err := s.bus.Retained(ctx, r.Tenant, r.ConversationID, last)
	if err != nil {
		return 0, fmt.Errorf("read what the bus retains: %w", err)
	}
	if len(kept) == 0 {
		return last, nil
	}
	if err := s.st.AppendEvents(ctx, kept); err != nil {
		if !errors.Is(err, store.ErrConflict) {
			return 0, err
		}
		// Some are there already (the dead writer got further than we
		// read): write the others one by one.
		for _, ev := range kept {
			if err := s.st.AppendEvents(ctx, []event.Event{ev}); err != nil && !errors.Is(err, store.ErrConflict) {
				return 0, err
			}
		}
	}
	s.runLog(r).Info("copied events the bus had and the log lacked", "conversation_id", r.ConversationID, "from_seq", kept[0].Seq, "to_seq", kept[len(kept)-1].Seq)
	return max(last, kept[len(kept)-1].Seq), nil
}

// takeOver makes this replica's term the executor of r, an orphaned run. It
// reports false when another replica took it first, or the store refused.
func (s *Service) takeOver(r chat.Run) (*term, bool) {
	t, err := s.term(s.ctx)
	if err != nil {
		return nil, false
	}
	ok, err := s.st.TakeOverRun(s.ctx, store.TakeOverRunParams{Tenant: r.Tenant, RunID: r.ID, Owner: s.cfg.ReplicaID, Epoch: t.epoch, Now: time.Now()})
	if err != nil {
		s.runLog(r).Warn("take over an orphaned run", "err", err)
		return nil, false
	}
	if ok {
		s.runLog(r).Warn("ending a run whose executor stopped", "conversation_id", r.ConversationID,
			"previous_owner", r.LeaseOwner, "previous_epoch", r.LeaseEpoch)
	}
	return t, ok
}

// endTakenOver writes the end of a run this replica took over. The run is
// now this term's, so no sweep lists it again: it retries until it succeeds,
// the term is fenced (then another replica takes the run), or the service stops.
func (s *Service) endTakenOver(t *term, r chat.Run) {
	backoff := 50 * time.Millisecond
	for {
		// Our writes are direct and synchronous: a late write of the dead
		// executor with the same seq makes ours fail, and we settle again.
		err := s.writeOrphanEnd(t.ctx, r)
		if err == nil {
			return
		}
		s.runLog(r).Warn("could not end an abandoned run yet; retrying", "err", err)
		select {
		case <-time.After(backoff):
		case <-t.stop:
			return
		case <-s.ctx.Done():
			return
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// writeOrphanEnd settles the thread and writes r's end: the end its dead
// executor already wrote or published, or a new one.
func (s *Service) writeOrphanEnd(ctx context.Context, r chat.Run) error {
	last, err := s.settleSeq(ctx, r)
	if err != nil {
		return err
	}
	sc := chat.Scope{Tenant: r.Tenant, User: r.Owner}
	// No other run emits on the thread while r is active: if the thread's last
	// event is r's end, r finished and only its status was not recorded.
	if last > 0 {
		tail, err := s.st.ListEvents(ctx, sc, store.ListEventsParams{Thread: r.ConversationID, RunID: r.ID, AfterSeq: last - 1, UntilSeq: last, Limit: 1})
		if err != nil {
			return err
		}
		if len(tail) == 1 && tail[0].Terminal() {
			if end, ok := tail[0].Payload.(event.RunFinishedData); ok {
				at := tail[0].Time
				if _, err := s.st.UpdateRun(ctx, r.Tenant, r.ID, store.RunUpdate{Status: end.Status, Error: end.Error, Usage: &end.Usage,
					EndedAt: &at, State: []byte("null"), From: activeStatuses}); err != nil && !errors.Is(err, store.ErrConflict) {
					return err
				}
				s.pub.publishEnd(tail[0])
				return nil
			}
		}
	}
	cur, err := s.st.GetRunAnyOwner(ctx, r.Tenant, r.ID)
	if err != nil {
		return err
	}
	if cur.Status == chat.RunRunning && len(cur.State) > 0 && !cur.CancelRequested {
		return s.waitAgain(ctx, cur, last)
	}
	// The dead executor may have published seqs up to its reservation that
	// neither the log nor the bus kept: skip them, never reuse them.
	var evs []event.Event
	if reserved := max(cur.SeqReserved, r.SeqReserved); reserved > last {
		evs = append(evs, event.New(event.SeqSkippedData{From: last + 1}))
		last = reserved - 1
	}
	o := engine.Outcome{Status: engine.StatusFailed, Error: &event.ErrorInfo{
		Code: errcode.ExecutorLost, Message: "The server running this request stopped before it finished. Please try again.",
	}}
	reason := "The server running this tool call stopped before it finished."
	if r.CancelRequested {
		o = engine.Outcome{Status: engine.StatusCancelled}
		reason = unfinishedReason(o.Status)
	}
	logged, err := s.st.ListEvents(ctx, sc, store.ListEventsParams{Thread: r.ConversationID, RunID: r.ID})
	if err != nil {
		return err
	}
	var calls openCalls
	for _, ev := range logged {
		calls.note(ev)
	}
	evs = append(evs, calls.failures(reason)...)
	if o.Error != nil {
		evs = append(evs, event.New(event.ErrorData{ErrorInfo: *o.Error}))
	}
	evs = append(evs, event.New(event.RunFinishedData{Status: o.Status, Error: o.Error, Usage: r.Usage}))
	now := time.Now().UTC()
	for i := range evs {
		last++
		ev := &evs[i]
		ev.Tenant, ev.Thread, ev.Run, ev.Seq, ev.Turn, ev.Time = r.Tenant, r.ConversationID, r.ID, last, r.TurnID, now
		ev.Type = ev.Payload.EventType()
	}
	if err := s.st.AppendEvents(ctx, evs); err != nil {
		return err
	}
	if _, err := s.st.EndConfirmations(ctx, r.Tenant, r.ID, now); err != nil {
		return err
	}
	if _, err := s.st.UpdateRun(ctx, r.Tenant, r.ID, store.RunUpdate{Status: o.Status, Error: o.Error, EndedAt: &now, State: []byte("null"),
		From: activeStatuses}); err != nil && !errors.Is(err, store.ErrConflict) {
		return err
	}
	for _, ev := range evs[:len(evs)-1] {
		s.pub.publish(ctx, ev)
	}
	s.pub.publishEnd(evs[len(evs)-1])
	logEnd(s.runLog(r), o, "conversation_id", r.ConversationID, "by", "takeover")
	return nil
}

var activeStatuses = []string{chat.RunQueued, chat.RunRunning, chat.RunAwaitingInput}

// announceTail bounds how far back from a thread's end waitAgain looks for
// the announcement of a wait: more calls than any turn asks to confirm.
const announceTail = 256

// waitAgain sets r, a run whose pause was recorded but not its status,
// awaiting input, as its dead executor would have: it publishes the
// announcement of the wait again first (the log's trailing tool.awaiting
// events; a stream that has them drops them by seq), for the streams that
// followed the run from other replicas, then records the status. Everything
// the dead executor published is in the log (the pause flushed it before
// the announcement was written), so the claim that continues the run gives
// out seqs after last.
func (s *Service) waitAgain(ctx context.Context, r chat.Run, last int64) error {
	sc := chat.Scope{Tenant: r.Tenant, User: r.Owner}
	tail, err := s.st.ListEvents(ctx, sc, store.ListEventsParams{Thread: r.ConversationID, RunID: r.ID, AfterSeq: max(0, last-announceTail), UntilSeq: last})
	if err != nil {
		return err
	}
	from := len(tail)
	for from > 0 && tail[from-1].Type == event.ToolAwaiting {
		from--
	}
	for _, ev := range tail[from:] {
		s.pub.publish(ctx, ev)
	}
	if _, err := s.st.UpdateRun(ctx, r.Tenant, r.ID, store.RunUpdate{Status: chat.RunAwaitingInput, From: []string{chat.RunRunning}}); err != nil &&
		!errors.Is(err, store.ErrConflict) {
		return err
	}
	s.runLog(r).Warn("a run whose executor stopped as it paused waits for its decision again", "conversation_id", r.ConversationID,
		"announced", len(tail)-from)
	return nil
}

// claimRun takes r, a waiting run, for execution here, applying
// confirmationID (a decided confirmation of the run) when set: exactly one
// claimer wins. It returns nil when another did, or the run no longer waits.
// The execution's span joins the run's trace, linking cause.
func (s *Service) claimRun(ctx context.Context, r chat.Run, confirmationID string, cause telemetry.Cause) *execution {
	log := s.runLog(r)
	if err := s.evlog.Flush(ctx); err != nil {
		return nil
	}
	t, err := s.term(ctx)
	if err != nil {
		return nil
	}
	r, err = s.st.ClaimRun(ctx, store.ClaimRunParams{Tenant: r.Tenant, RunID: r.ID, ConfirmationID: confirmationID, Owner: s.cfg.ReplicaID, Epoch: t.epoch})
	if err != nil {
		if !errors.Is(err, store.ErrConflict) {
			log.Warn("claim a waiting run", "err", err)
		}
		return nil
	}
	last, err := s.settleSeq(ctx, r)
	if err == nil {
		// It publishes before it writes, as any execution: reserve first.
		if err = s.st.ReserveSeqs(ctx, r.Tenant, r.ID, last+reserveBlock); err == nil {
			r.SeqReserved = max(r.SeqReserved, last+reserveBlock)
		}
	}
	if err != nil {
		// The run is our term's now: end it as abandoned, as a sweep would.
		log.Error("settle the seqs of a claimed run", "err", err)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.endTakenOver(t, r)
		}()
		return nil
	}
	sc := chat.Scope{Tenant: r.Tenant, User: r.Owner}
	x := s.newExecution(t, sc, r, last, s.cfg.Telemetry.ContinueRun(r, cause))
	// The calls begun before the pause are this execution's to end if the
	// run ends without them; a run that waited asked for a confirmation.
	x.asked = true
	if evs, err := s.st.ListEvents(ctx, sc, store.ListEventsParams{Thread: r.ConversationID, RunID: r.ID}); err == nil {
		for _, ev := range evs {
			x.calls.note(ev)
		}
	} else {
		x.log.Warn("read a resumed run's tool calls", "err", err)
	}
	return x
}

// unappliedGrace leaves a fresh decision to the replica that took it, which
// normally continues the run at once.
const unappliedGrace = 2 * time.Second

// resumeUnapplied continues waiting runs whose decision no replica applied.
func (s *Service) resumeUnapplied(now time.Time) {
	list, err := s.st.UnappliedDecisions(s.ctx, now.Add(-unappliedGrace), 50)
	if err != nil {
		s.log.Warn("unapplied decisions", "err", err)
		return
	}
	for _, c := range list {
		r, err := s.st.GetRunAnyOwner(s.ctx, c.Tenant, c.RunID)
		if err != nil {
			s.log.Warn("read a run whose decision was not applied", "run_id", c.RunID, "confirmation_id", c.ID, "err", err)
			continue
		}
		s.runLog(r).Info("continuing a run whose decision was not applied", "confirmation_id", c.ID)
		s.continueRun(r, c, "", telemetry.Cause{})
	}
}

// requestCancel stores a cancel of a running run and announces it to the
// replica executing it. The stored request is what counts: the announcement
// is a fast path, and an executor that misses it sees the request at its
// replica's next heartbeat.
func (s *Service) requestCancel(ctx context.Context, r chat.Run) error {
	return s.requestCancelFor(ctx, r, "")
}

// requestCancelFor is requestCancel saying why (bus.Control.Reason).
func (s *Service) requestCancelFor(ctx context.Context, r chat.Run, reason string) error {
	_, err := s.st.UpdateRun(ctx, r.Tenant, r.ID, store.RunUpdate{CancelRequested: true, From: activeStatuses})
	if errors.Is(err, store.ErrConflict) {
		return nil // it ended meanwhile
	}
	if err != nil {
		return err
	}
	if err := s.bus.PublishControl(ctx, bus.Control{Kind: bus.ControlCancel, Tenant: r.Tenant, RunID: r.ID, Reason: reason}); err != nil {
		s.runLog(r).Warn("announce a cancel; the executor sees it at its replica's next heartbeat", "err", err)
	}
	return nil
}

// awaitEnd waits a little for a run executing anywhere to end, so that a
// cancel's answer usually shows the final status. It returns the run as last
// read.
func (s *Service) awaitEnd(ctx context.Context, sc chat.Scope, runID string, limit time.Duration) (chat.Run, error) {
	s.mu.Lock()
	x := s.executing[runID]
	s.mu.Unlock()
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	if x != nil {
		select {
		case <-x.done:
		case <-ctx.Done():
		case <-deadline.C:
		}
		return s.st.GetRun(ctx, sc, runID)
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		r, err := s.st.GetRun(ctx, sc, runID)
		if err != nil || !chat.Active(r.Status) || r.Status == chat.RunAwaitingInput {
			return r, err
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return r, nil
		case <-deadline.C:
			return r, nil
		}
	}
}
