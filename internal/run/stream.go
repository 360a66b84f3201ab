package run

import (
	"context"
	"fmt"
	"time"

	"github.com/agentchat/agentchat/internal/bus"
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
	sc      store.Scope
	thread  string
	runID   string // "" follows the whole thread
	q       *bus.Queue
	last    int64 // highest seq handled
	backlog []event.Event
	done    bool
	// ended: the followed run had finished before the stream opened, so the
	// log holds all of it and the stream is done once the backlog is out.
	ended bool
}

// Follow opens a stream of a thread (runID empty) or of one run, after seq
// `after` (a Last-Event-ID; 0 from the start).
func (s *Service) Follow(ctx context.Context, sc store.Scope, thread, runID string, after int64) (*Stream, error) {
	var err error
	ended := false
	if runID != "" {
		r, err := s.st.GetRun(ctx, sc, runID)
		if err != nil {
			return nil, err
		}
		thread, ended = r.ConversationID, !store.Active(r.Status)
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
	st := &Stream{s: s, sc: sc, thread: thread, runID: runID, q: q, last: after, ended: ended}
	if err := s.evlog.Flush(ctx); err != nil {
		st.Close()
		return nil, err
	}
	if st.backlog, err = s.st.ListEvents(ctx, sc, thread, runID, after, 0, 0); err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

// Thread is the conversation the stream follows.
func (st *Stream) Thread() string { return st.thread }

// Ready is signalled when Next has something to return.
func (st *Stream) Ready() <-chan struct{} { return st.q.Ready() }

// Done reports whether a run-scoped stream has delivered its run's end.
func (st *Stream) Done() bool { return st.done }

// Next appends the events ready for the client to buf, in seq order. The
// error is the subscription's end (bus.ErrSlowConsumer, a closed bus, ctx).
func (st *Stream) Next(ctx context.Context, buf []event.Event) ([]event.Event, error) {
	if st.done {
		return buf, nil
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
	var qerr error
	in, qerr = st.q.Drain(in)
	for _, ev := range in {
		if st.done {
			break
		}
		if ev.Seq <= st.last {
			continue // already delivered from the log
		}
		if ev.Seq > st.last+1 {
			gap, err := st.fill(ctx, ev.Seq-1)
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
	if st.runID != "" && ev.Run != st.runID {
		return buf
	}
	if st.runID != "" && ev.Terminal() {
		st.done = true
	}
	return append(buf, ev)
}

// Pending reports whether Next would return events (or finish) without waiting.
func (st *Stream) Pending() bool { return len(st.backlog) > 0 || st.ended }

// fill reads events the bus did not deliver (published before the
// subscription, or trimmed from it) from the log. Another replica may still be
// writing them, so it retries briefly before giving up.
func (st *Stream) fill(ctx context.Context, until int64) ([]event.Event, error) {
	wait := 5 * time.Millisecond
	for attempt := 0; ; attempt++ {
		if err := st.s.evlog.Flush(ctx); err != nil {
			return nil, err
		}
		evs, err := st.s.st.ListEvents(ctx, st.sc, st.thread, "", st.last, until, 0)
		if err != nil {
			return nil, err
		}
		if len(evs) > 0 && evs[len(evs)-1].Seq == until && evs[0].Seq == st.last+1 {
			return evs, nil
		}
		if attempt == 10 {
			return nil, fmt.Errorf("events %d..%d of %s are missing from the log", st.last+1, until, st.thread)
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
