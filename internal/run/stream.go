package run

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentchat/agentchat/internal/bus"
	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/store"
)

// Stream follows a thread, or one run of it, from a position: first what the
// log holds after it, then live events from the bus, with no gap and no
// repeat. A run-scoped stream is Done after that run's last event.
//
// A Stream is used by one goroutine. Close it to release its subscription.
type Stream struct {
	s       *Service
	sc      chat.Scope
	thread  string
	runID   string // "" follows the whole thread
	q       *bus.Queue
	last    int64 // highest seq handled
	backlog []event.Event
	done    bool
	// ended: the followed run had finished before the stream opened, so the
	// log holds all of it and the stream is done once the backlog is out.
	ended bool
	// inRun: the last event delivered on a thread stream was not a run's
	// end, so more is due (a run-scoped stream is always in its run).
	inRun bool
	// gapped: bus events revealed a gap the log could not fill; they are
	// dropped until Check has read the log.
	gapped bool
	// queued: the followed run is a queued input (multitask.go) that has
	// not shown an event yet. Check watches for it to leave the queue
	// without a run (cancelled, or dropped): missing counts the checks in a
	// row that found neither, and gone, set after two, ends the stream.
	// One check alone could fall between the queue's take and the run's
	// start.
	queued  bool
	missing int
	gone    bool
}

// Check periods. A stream that hears nothing while a run it follows is in
// progress looks at the log every checkInRun: a publish that was lost (a bus
// outage, a replica that died between writing and publishing) would otherwise
// leave it waiting for an end that was already written. An idle thread
// stream looks less often, for a run whose every publish was lost.
//
// Where no publish can be lost (Service.lossless: the embedded default, one
// process and the in-process bus) a stream looks only for what the bus
// cannot tell it: a gap it saw, and a queued input that left the queue
// without a run. A thousand streams polling the log every second cost a
// query each per second and held the read pool from the runs' own reads.
const (
	checkInRun = time.Second
	checkIdle  = 15 * time.Second
)

// CheckAfter is how long the stream may hear nothing before Check should
// look at the log; 0 when it never needs to.
func (st *Stream) CheckAfter() time.Duration {
	switch {
	case st.done || st.ended:
		return 0
	case st.gapped || st.queued:
		return checkInRun
	case st.s.lossless:
		return 0
	case st.runID != "" || st.inRun:
		return checkInRun
	default:
		return checkIdle
	}
}

// Check looks in the log for events the bus has not delivered (the caller
// asks when it heard nothing for CheckAfter); Pending then reports whether it
// found any.
func (st *Stream) Check(ctx context.Context) error {
	st.gapped = false
	if st.queued {
		if err := st.checkQueued(ctx); err != nil || st.gone {
			return err
		}
	}
	last, err := st.s.st.LastSeq(ctx, st.sc.Tenant, st.thread)
	if err != nil || last <= st.last {
		return err
	}
	evs, err := st.s.st.ListEvents(ctx, st.sc, store.ListEventsParams{Thread: st.thread, AfterSeq: st.last, UntilSeq: last})
	if err != nil {
		return err
	}
	st.backlog = append(st.backlog, evs...)
	return nil
}

// checkQueued looks whether the queued input the stream follows is still
// queued or has its run; two looks in a row that find neither end the stream.
func (st *Stream) checkQueued(ctx context.Context) error {
	_, err := st.s.st.GetQueuedInput(ctx, st.sc, st.runID)
	if errors.Is(err, store.ErrNotFound) {
		_, err = st.s.st.GetRun(ctx, st.sc, st.runID)
		if errors.Is(err, store.ErrNotFound) {
			st.missing++
			st.gone = st.missing >= 2
			return nil
		}
		if err == nil {
			st.queued = false // started: its events are in the log or on the way
		}
	}
	st.missing = 0
	return err
}

// Follow opens a stream of a thread (runID empty) or of one run, after seq
// `after` (the seq a client's Last-Event-ID replays after,
// dialect.ID.Replay; 0 from the start).
func (s *Service) Follow(ctx context.Context, sc chat.Scope, thread, runID string, after int64) (*Stream, error) {
	var err error
	ended := false
	queued := false
	if runID != "" {
		r, err := s.Get(ctx, sc, runID)
		if err != nil {
			return nil, err
		}
		thread, ended, queued = r.ConversationID, !chat.Active(r.Status), r.Status == chat.RunQueued
	} else if _, err := s.st.GetConversation(ctx, sc, thread); err != nil {
		return nil, err
	}
	// Subscribe first: whatever is published from now on is queued, and what
	// came before is in the log once the local writer has flushed. A run
	// that has ended is all in the log (its end is written before its status
	// changes): it needs no subscription, so replaying it needs no bus.
	var q *bus.Queue
	if ended {
		q = bus.NewQueue(1, nil)
	} else if q, err = s.bus.Subscribe(ctx, sc.Tenant, thread, after); err != nil {
		return nil, err
	}
	st := &Stream{s: s, sc: sc, thread: thread, runID: runID, q: q, last: after, ended: ended, queued: queued}
	if err := s.evlog.Flush(ctx); err != nil {
		st.Close()
		return nil, err
	}
	if st.backlog, err = s.st.ListEvents(ctx, sc, store.ListEventsParams{Thread: thread, RunID: runID, AfterSeq: after}); err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

// Thread is the conversation the stream follows.
func (st *Stream) Thread() string { return st.thread }

// Ready is signalled when Next has something to return.
func (st *Stream) Ready() <-chan struct{} { return st.q.Ready() }

// Notify makes f run whenever Ready is signalled (see bus.Queue.Notify),
// for a consumer that parks with no goroutine.
func (st *Stream) Notify(f func()) { st.q.Notify(f) }

// Done reports whether a run-scoped stream has delivered its run's end.
func (st *Stream) Done() bool { return st.done }

// Next appends the events ready for the client to buf, in seq order. The
// error is the subscription's end (bus.ErrSlowConsumer, a closed bus, ctx).
func (st *Stream) Next(ctx context.Context, buf []event.Event) ([]event.Event, error) {
	if st.done {
		return buf, nil
	}
	if st.gone {
		// A queued input that left the queue without a run (cancelled,
		// or dropped): its stream ends as a run cancelled before it
		// started. The end is the stream's own, stored nowhere: it
		// repeats the last seq the client has, so a resume after it
		// replays nothing.
		st.done = true
		end := event.New(event.RunFinishedData{Status: event.StatusCancelled})
		end.Tenant, end.Thread, end.Run, end.Seq, end.Time = st.sc.Tenant, st.thread, st.runID, st.last, st.s.now()
		end.Type = end.Payload.EventType()
		return append(buf, end), nil
	}
	in := st.backlog
	st.backlog = nil
	if st.ended {
		// Everything is in the backlog; the bus has nothing more for this run.
		for _, ev := range in {
			buf = st.take(buf, ev)
		}
		st.done = true
		return buf, nil
	}
	// Every token wakes the stream: with no backlog, Drain hands over the
	// queue's own pooled array rather than copying it into another, and
	// it goes back to the pool here, not held between wakes.
	var qerr error
	in, qerr = st.q.Drain(in)
	defer func() { event.PutBatch(in) }() // the events are in buf: drop in's references
	for _, ev := range in {
		if st.done {
			break
		}
		if ev.Seq <= st.last {
			continue // already delivered from the log
		}
		if first := ev.FirstSeq(); first > st.last+1 {
			if st.gapped {
				continue // Check reads the log first
			}
			gap, err := st.fill(ctx, first-1)
			if errors.Is(err, errGap) {
				// Never written (a fenced executor's), or not yet: the
				// events past the gap wait, and Check finds in the log what
				// the run's end, or the writer, put there.
				st.gapped = true
				continue
			}
			if err != nil {
				return buf, err
			}
			for _, g := range gap {
				buf = st.take(buf, g)
			}
			if st.done {
				break
			}
		}
		buf = st.take(buf, ev)
	}
	if len(buf) > 0 {
		return buf, nil
	}
	return buf, qerr
}

func (st *Stream) take(buf []event.Event, ev event.Event) []event.Event {
	if ev.Seq <= st.last {
		return buf
	}
	st.last = ev.Seq
	if ev.Type == event.SeqSkipped || (st.runID != "" && ev.Run != st.runID) {
		return buf
	}
	st.inRun, st.queued = !ev.Terminal(), false
	if st.runID != "" && ev.Terminal() {
		st.done = true
	}
	return append(buf, ev)
}

// Idle reports whether the stream waits between runs: it follows a whole
// thread, the last run it saw has ended, and nothing is pending. Such a
// stream may wait for hours; what it holds meanwhile is what it costs.
func (st *Stream) Idle() bool { return st.runID == "" && !st.inRun && !st.Pending() }

// Pending reports whether Next would return events (or finish) without waiting.
func (st *Stream) Pending() bool { return len(st.backlog) > 0 || st.ended || st.gone }

// errGap: events the bus skipped are not in the log (yet).
var errGap = errors.New("events are missing from the log")

// fill reads events the bus did not deliver (published before the
// subscription, or trimmed from it) from the log. Another replica may still be
// writing them, so it retries briefly before giving up with errGap.
func (st *Stream) fill(ctx context.Context, until int64) ([]event.Event, error) {
	wait := 5 * time.Millisecond
	for attempt := 0; ; attempt++ {
		if err := st.s.evlog.Flush(ctx); err != nil {
			return nil, err
		}
		evs, err := st.s.st.ListEvents(ctx, st.sc, store.ListEventsParams{Thread: st.thread, AfterSeq: st.last, UntilSeq: until})
		if err != nil {
			return nil, err
		}
		if len(evs) > 0 && evs[len(evs)-1].Seq == until && evs[0].FirstSeq() <= st.last+1 {
			return evs, nil
		}
		if attempt == 4 {
			return nil, fmt.Errorf("%w: %d..%d of %s", errGap, st.last+1, until, st.thread)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		wait *= 2
	}
}

// Close releases the subscription.
func (st *Stream) Close() { st.q.Stop(nil) }
