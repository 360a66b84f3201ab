package run

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentchat/agentchat/internal/bus"
	"github.com/agentchat/agentchat/internal/engine"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/store"
)

// Recovery: what one replica does for the runs of another that died, lost
// its database, or missed a message.
//
//   - A run whose executor stopped renewing its lease is ended by whichever
//     replica's sweep claims the lease: failed (executor_lost), or cancelled
//     if a cancel was requested. A run awaiting input needs no executor and
//     is left waiting.
//   - A decision no replica acted on (the deciding one died before claiming
//     the run, or was refused for load) is found in the store and applied.
//   - A cancel is stored before it is announced, so an executor that missed
//     the announcement sees it when it renews its lease.
//
// Seqs after a takeover. The dead executor published some events to the bus
// that its log writer may not have written yet. The replica continuing the
// thread copies what the bus retains past the log's last seq into the log
// (the same events, as published), then gives out seqs after the higher of
// the two: it never reuses a seq that a client may have seen with other
// content, and the log stays the complete record of what was published.

// settleSeq makes the log hold everything published on r's thread that the
// bus still retains, and returns the thread's last seq.
func (s *Service) settleSeq(ctx context.Context, r store.Run) (int64, error) {
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
	s.log.Info("copied events the bus had and the log lacked", "conversation_id", r.ConversationID, "from_seq", kept[0].Seq, "to_seq", kept[len(kept)-1].Seq)
	return max(last, kept[len(kept)-1].Seq), nil
}

// endOrphan ends a run whose executor stopped renewing its lease, if this
// replica wins its lease.
func (s *Service) endOrphan(r store.Run) {
	until := time.Now().Add(s.cfg.LeaseTTL)
	ok, err := s.st.AcquireLease(s.ctx, r.Tenant, r.ID, s.cfg.ReplicaID, until)
	if err != nil || !ok {
		return
	}
	s.log.Warn("ending a run whose executor stopped", "run_id", r.ID, "conversation_id", r.ConversationID, "previous_owner", r.LeaseOwner)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		// Our writes are direct and synchronous: a late write of the dead
		// executor with the same seq makes ours fail, and we settle again.
		for attempt := 0; ; attempt++ {
			err := s.writeOrphanEnd(s.ctx, r)
			if err == nil {
				return
			}
			if !errors.Is(err, store.ErrConflict) || attempt == 4 {
				// The lease we took lapses and a later sweep tries again.
				s.log.Warn("could not end an abandoned run yet", "run_id", r.ID, "err", err)
				return
			}
		}
	}()
}

// writeOrphanEnd settles the thread and writes r's end: the end its dead
// executor already wrote or published, or a new one.
func (s *Service) writeOrphanEnd(ctx context.Context, r store.Run) error {
	last, err := s.settleSeq(ctx, r)
	if err != nil {
		return err
	}
	sc := store.Scope{Tenant: r.Tenant, User: r.Owner}
	// No other run emits on the thread while r is active: if the thread's last
	// event is r's end, r finished and only its status was not recorded.
	if last > 0 {
		tail, err := s.st.ListEvents(ctx, sc, r.ConversationID, r.ID, last-1, last, 1)
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
	o := engine.Outcome{Status: engine.StatusFailed, Error: &event.ErrorInfo{
		Code: "executor_lost", Message: "The server running this request stopped before it finished. Please try again.",
	}}
	if r.CancelRequested {
		o = engine.Outcome{Status: engine.StatusCancelled}
	}
	var evs []event.Event
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
	if _, err := s.st.UpdateRun(ctx, r.Tenant, r.ID, store.RunUpdate{Status: o.Status, Error: o.Error, EndedAt: &now, State: []byte("null"),
		From: activeStatuses}); err != nil && !errors.Is(err, store.ErrConflict) {
		return err
	}
	for _, ev := range evs[:len(evs)-1] {
		s.pub.publish(ctx, ev)
	}
	s.pub.publishEnd(evs[len(evs)-1])
	s.log.Info("run ended", "run_id", r.ID, "conversation_id", r.ConversationID, "status", o.Status, "by", "takeover")
	return nil
}

var activeStatuses = []string{store.RunQueued, store.RunRunning, store.RunAwaitingInput}

// claimRun takes a waiting run for execution here, applying confirmationID
// (a decided confirmation of the run) when set: exactly one claimer wins. It
// returns nil when another did, or the run no longer waits.
func (s *Service) claimRun(ctx context.Context, tenant, runID, confirmationID string) *execution {
	if err := s.evlog.Flush(ctx); err != nil {
		return nil
	}
	r, err := s.st.ClaimRun(ctx, tenant, runID, confirmationID, s.cfg.ReplicaID, time.Now().Add(s.cfg.LeaseTTL))
	if err != nil {
		if !errors.Is(err, store.ErrConflict) {
			s.log.Warn("claim a waiting run", "run_id", runID, "err", err)
		}
		return nil
	}
	last, err := s.settleSeq(ctx, r)
	if err != nil {
		// We hold the run and its lease: the lease lapses, and the sweep
		// ends the run as abandoned.
		s.log.Error("read last seq of a claimed run", "run_id", r.ID, "err", err)
		return nil
	}
	return s.newExecution(store.Scope{Tenant: r.Tenant, User: r.Owner}, r, last)
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
		s.log.Info("continuing a run whose decision was not applied", "run_id", c.RunID, "confirmation_id", c.ID)
		s.resume(c, "")
	}
}

// requestCancel stores a cancel of a running run and announces it to the
// replica executing it. The stored request is what counts: the announcement
// is a fast path, and an executor that misses it sees the request at its
// next lease renewal.
func (s *Service) requestCancel(ctx context.Context, r store.Run) error {
	_, err := s.st.UpdateRun(ctx, r.Tenant, r.ID, store.RunUpdate{CancelRequested: true, From: activeStatuses})
	if errors.Is(err, store.ErrConflict) {
		return nil // it ended meanwhile
	}
	if err != nil {
		return err
	}
	if err := s.bus.PublishControl(ctx, bus.Control{Kind: bus.ControlCancel, Tenant: r.Tenant, RunID: r.ID}); err != nil {
		s.log.Warn("announce a cancel; the executor sees it at its next lease renewal", "run_id", r.ID, "err", err)
	}
	return nil
}

// awaitEnd waits a little for a run executing anywhere to end, so that a
// cancel's answer usually shows the final status. It returns the run as last
// read.
func (s *Service) awaitEnd(ctx context.Context, sc store.Scope, runID string, limit time.Duration) (store.Run, error) {
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
		if err != nil || !store.Active(r.Status) || r.Status == store.RunAwaitingInput {
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
