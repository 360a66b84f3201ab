package run

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/store"
)

// eventLog appends events to the store off the path to the client: Enqueue
// returns at once, and one writer goroutine commits batches (group commit).
// A batch lingers a few milliseconds to gather the events of many streams,
// since a commit's cost hardly depends on how many rows it carries; Flush
// cuts the linger short for whoever needs the log complete now.
type eventLog struct {
	st  store.Store
	log *slog.Logger

	mu       sync.Mutex
	pending  []event.Event
	enqueued uint64 // events ever enqueued
	written  uint64 // events ever written (or given up on)
	wake     chan struct{}
	hurry    chan struct{} // a Flush is waiting: commit without lingering
	flushed  *sync.Cond
	closed   bool
	done     chan struct{}
}

const (
	maxBatch = 2000
	// linger bounds how long an event waits for companions before its
	// batch is committed. It delays only the log, never a client.
	linger = 10 * time.Millisecond
)

func newEventLog(st store.Store, log *slog.Logger) *eventLog {
	l := &eventLog{st: st, log: log, wake: make(chan struct{}, 1), hurry: make(chan struct{}, 1), done: make(chan struct{})}
	l.flushed = sync.NewCond(&l.mu)
	go l.loop()
	return l
}

// Enqueue schedules ev for writing. Events of a thread must be enqueued in seq order.
func (l *eventLog) Enqueue(ev event.Event) {
	l.mu.Lock()
	l.pending = append(l.pending, ev)
	l.enqueued++
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Flush waits until every event enqueued before the call is written.
func (l *eventLog) Flush(ctx context.Context) error {
	l.mu.Lock()
	target := l.enqueued
	if l.written >= target {
		l.mu.Unlock()
		return nil
	}
	select {
	case l.hurry <- struct{}{}:
	default:
	}
	stop := context.AfterFunc(ctx, func() {
		l.mu.Lock()
		l.flushed.Broadcast()
		l.mu.Unlock()
	})
	defer stop()
	for l.written < target && ctx.Err() == nil {
		l.flushed.Wait()
	}
	l.mu.Unlock()
	return ctx.Err()
}

func (l *eventLog) loop() {
	defer close(l.done)
	timer := time.NewTimer(linger)
	timer.Stop()
	for {
		l.mu.Lock()
		for len(l.pending) == 0 && !l.closed {
			l.mu.Unlock()
			<-l.wake
			l.mu.Lock()
		}
		if len(l.pending) < maxBatch && !l.closed {
			l.mu.Unlock()
			timer.Reset(linger)
			select {
			case <-timer.C:
			case <-l.hurry:
				timer.Stop()
			}
			l.mu.Lock()
		}
		if len(l.pending) == 0 && l.closed {
			l.mu.Unlock()
			return
		}
		batch := l.pending
		if len(batch) > maxBatch {
			batch = batch[:maxBatch]
		}
		l.pending = l.pending[len(batch):]
		if len(l.pending) == 0 {
			l.pending = nil
		}
		l.mu.Unlock()

		l.write(batch)

		l.mu.Lock()
		l.written += uint64(len(batch))
		l.flushed.Broadcast()
		l.mu.Unlock()
	}
}

// write commits a batch, retrying while the store is unavailable. A batch the
// store refuses (a duplicate seq after a takeover) is written one by one so
// one bad event does not lose its neighbours.
func (l *eventLog) write(batch []event.Event) {
	ctx := context.Background()
	backoff := 50 * time.Millisecond
	for attempt := 0; ; attempt++ {
		err := l.st.AppendEvents(ctx, batch)
		if err == nil {
			return
		}
		if errors.Is(err, store.ErrUnavailable) && attempt < 8 {
			time.Sleep(backoff) // the store is down: nothing to synchronise with but time
			backoff *= 2
			continue
		}
		if len(batch) > 1 {
			for _, ev := range batch {
				l.write([]event.Event{ev})
			}
			return
		}
		l.log.Error("event log write failed; event dropped from the timeline",
			"conversation_id", batch[0].Thread, "run_id", batch[0].Run, "seq", batch[0].Seq, "err", err)
		return
	}
}

// Close writes what is pending and stops the writer.
func (l *eventLog) Close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	for _, c := range []chan struct{}{l.wake, l.hurry} {
		select {
		case c <- struct{}{}:
		default:
		}
	}
	<-l.done
}
