package run

import (
	"context"
	"errors"
	"fmt"
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
//
// While the store is unavailable the writer holds its events and retries for
// as long as the process lives (Close bounds that at shutdown), saying so once
// per outage. Memory stays bounded: past maxPending held events, Enqueue
// waits, which slows the runs producing them rather than the process dying.
// Events of an execution that stopped acting for its run (it lost its lease:
// another replica ends the run and writes those seqs) are dropped unwritten.
type eventLog struct {
	st    store.Store
	log   *slog.Logger
	limit int // events held before Enqueue waits

	mu       sync.Mutex
	pending  []logEntry
	spare    []logEntry // the last batch's array, reused for the next pending
	enqueued uint64     // events ever enqueued
	written  uint64     // events ever written (or given up on)
	wake     chan struct{}
	hurry    chan struct{} // a Flush is waiting: commit without lingering
	flushed  *sync.Cond    // written moved, room was made, an outage began, or an owner was fenced
	outage   time.Time     // when the store became unavailable; zero while it answers
	closed   bool
	giveUp   chan struct{} // closed by GiveUp: stop retrying
	giveOnce sync.Once
	quit     context.Context // ends with giveUp: a write in flight is abandoned
	quitNow  context.CancelFunc
	done     chan struct{}
}

// logEntry is an event and the execution that emitted it (nil for events
// written whatever happens).
type logEntry struct {
	ev    event.Event
	owner fencer
}

// fencer is an event's producer that may stop acting for its run.
type fencer interface {
	// fenced reports whether it stopped, stopping it if its time is up.
	fenced() bool
	// stopped reports whether it stopped, without side effects (safe under l.mu).
	stopped() bool
}

const (
	// maxBatch bounds one commit. Large enough that a thousand streams'
	// deltas of one linger share a batch, and each stream's pack into a row.
	maxBatch = 8000
	// linger bounds how long an event waits for companions before its
	// batch is committed. It delays only the log, never a client (events
	// are published before they are written; an end, a pause and a reader
	// that needs the log complete Flush, cutting it short). Long enough for
	// a stream at 50 tokens/s to put ~5 deltas in a batch, which the store
	// keeps as one row.
	linger = 100 * time.Millisecond
	// maxPending bounds the events held while the store is unavailable (a
	// few hundred bytes each): minutes of a busy replica's token streams.
	maxPending = 200_000
	// maxBackoff bounds the pause between retries of an unavailable store.
	maxBackoff = 2 * time.Second
	// writeTimeout bounds one write, so that a write that never returns
	// cannot stall the log (and every Flush) for good.
	writeTimeout = 30 * time.Second
)

func newEventLog(st store.Store, log *slog.Logger) *eventLog {
	l := &eventLog{st: st, log: log, limit: maxPending, wake: make(chan struct{}, 1), hurry: make(chan struct{}, 1),
		giveUp: make(chan struct{}), done: make(chan struct{})}
	l.quit, l.quitNow = context.WithCancel(context.Background())
	l.flushed = sync.NewCond(&l.mu)
	go l.loop()
	return l
}

// Enqueue schedules ev for writing. Events of a thread must be enqueued in seq
// order. owner, if not nil, is the execution that emitted ev: once it is
// fenced, ev is dropped instead of written. When maxPending events are held
// (the store is down), Enqueue waits for room, or for owner to be fenced.
func (l *eventLog) Enqueue(ev event.Event, owner fencer) {
	l.mu.Lock()
	for len(l.pending) >= l.limit && !l.closed {
		if owner != nil {
			l.mu.Unlock()
			f := owner.fenced() // may fence, which pokes l: not under l.mu
			l.mu.Lock()
			if f || owner.stopped() {
				l.mu.Unlock()
				return
			}
			if len(l.pending) < l.limit || l.closed {
				break
			}
		}
		l.flushed.Wait()
	}
	l.pending = append(l.pending, logEntry{ev, owner})
	l.enqueued++
	l.mu.Unlock()
	signal(l.wake)
}

// poke wakes whoever waits in Enqueue or Flush to look again (an owner was fenced).
func (l *eventLog) poke() {
	l.mu.Lock()
	l.flushed.Broadcast()
	l.mu.Unlock()
	signal(l.hurry)
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Flush waits until every event enqueued before the call is written. While
// the store is unavailable it fails at once with store.ErrUnavailable (the
// events stay queued), so that a request answers 503 rather than hanging.
func (l *eventLog) Flush(ctx context.Context) error {
	l.mu.Lock()
	target := l.enqueued
	if l.written >= target {
		l.mu.Unlock()
		return nil
	}
	signal(l.hurry)
	stop := context.AfterFunc(ctx, func() {
		l.mu.Lock()
		l.flushed.Broadcast()
		l.mu.Unlock()
	})
	defer stop()
	for l.written < target && ctx.Err() == nil && l.outage.IsZero() {
		l.flushed.Wait()
	}
	down := l.written < target && !l.outage.IsZero()
	l.mu.Unlock()
	if down {
		return store.ErrUnavailable
	}
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
		whole := len(batch) <= maxBatch
		if whole {
			// Swap in the previous batch's array: at tens of thousands of
			// events a second, growing a fresh slice each time was a tenth
			// of the server's CPU.
			l.pending, l.spare = l.spare[:0], nil
		} else {
			batch = batch[:maxBatch:maxBatch]
			l.pending = l.pending[maxBatch:]
		}
		l.flushed.Broadcast() // room for a waiting Enqueue
		l.mu.Unlock()

		l.write(batch)

		l.mu.Lock()
		l.written += uint64(len(batch))
		if whole && l.spare == nil {
			clear(batch) // drop the events' references
			l.spare = batch[:0]
		}
		l.flushed.Broadcast()
		l.mu.Unlock()
	}
}

// write commits a batch, retrying while the store is unavailable. A batch the
// store refuses (a duplicate seq: a retry of a commit whose answer was lost,
// or seqs a takeover wrote) is written one by one so one refused event does
// not lose its neighbours.
func (l *eventLog) write(batch []logEntry) {
	ctx := l.quit
	backoff := 50 * time.Millisecond
	evs := make([]event.Event, 0, len(batch))
	for {
		// Looked at before every attempt: an owner may have been fenced
		// while the store was away.
		evs = evs[:0]
		for _, e := range batch {
			if e.owner == nil || !e.owner.fenced() {
				evs = append(evs, e.ev)
			}
		}
		if len(evs) == 0 {
			l.dropped(len(batch))
			return
		}
		actx, cancel := context.WithTimeout(ctx, writeTimeout)
		err := l.st.AppendEvents(actx, evs)
		cancel()
		if err != nil && (errors.Is(err, context.DeadlineExceeded) || l.quit.Err() != nil) {
			// A write that hangs (a lock, a dead connection) is an outage
			// too; the retry finds out whether it was committed. One
			// abandoned by GiveUp is dropped below.
			err = fmt.Errorf("%w: %w", store.ErrUnavailable, err)
		}
		if err == nil {
			l.available()
			l.dropped(len(batch) - len(evs))
			return
		}
		if errors.Is(err, store.ErrUnavailable) {
			l.unavailable(err)
			select {
			case <-time.After(backoff): // the store is down: nothing to synchronise with but time
			case <-l.giveUp:
				l.mu.Lock()
				held := len(evs) + len(l.pending)
				l.mu.Unlock()
				l.log.Error("event log: shutting down with the store still unavailable; events not written to the timeline",
					"events", held, "err", err)
				l.drop()
				return
			}
			backoff = min(2*backoff, maxBackoff)
			continue
		}
		l.available()
		if len(batch) > 1 {
			for _, e := range batch {
				l.write([]logEntry{e})
			}
			return
		}
		ev := batch[0].ev
		log := l.log.With("run_id", ev.Run)
		if x, ok := batch[0].owner.(*execution); ok {
			log = x.log
		}
		if errors.Is(err, store.ErrConflict) {
			log.Warn("event log: seq already in the timeline; kept the stored event",
				"conversation_id", ev.Thread, "seq", ev.Seq)
			return
		}
		log.Error("event log write failed; event dropped from the timeline",
			"conversation_id", ev.Thread, "seq", ev.Seq, "err", err)
		return
	}
}

// dropped logs the n events of a batch left unwritten because their
// executions stopped acting for their runs.
func (l *eventLog) dropped(n int) {
	if n > 0 {
		l.log.Info("event log: dropped events of executions that stopped acting for their runs; the replicas that end those runs write their seqs",
			"events", n)
	}
}

// unavailable notes an outage, logging its start once.
func (l *eventLog) unavailable(err error) {
	l.mu.Lock()
	first := l.outage.IsZero()
	if first {
		l.outage = time.Now()
		l.flushed.Broadcast() // Flush callers answer "unavailable" now
	}
	held := len(l.pending)
	l.mu.Unlock()
	if first {
		l.log.Error("event log: store unavailable; holding events and retrying until it answers",
			"held", held, "err", err)
	}
}

// available ends an outage, logging its end once.
func (l *eventLog) available() {
	l.mu.Lock()
	since := l.outage
	l.outage = time.Time{}
	l.mu.Unlock()
	if !since.IsZero() {
		l.log.Info("event log: store available again; held events written", "outage", time.Since(since).Round(time.Millisecond))
	}
}

// drop discards everything pending (shutdown with the store still away).
func (l *eventLog) drop() {
	l.mu.Lock()
	l.written += uint64(len(l.pending))
	l.pending = nil
	l.flushed.Broadcast()
	l.mu.Unlock()
}

// GiveUp stops retrying an unavailable store, and abandons a write in
// flight: what is held, and whatever is enqueued later, is dropped (and
// logged), so that neither Enqueue nor Flush waits for the store any more.
func (l *eventLog) GiveUp() {
	l.giveOnce.Do(func() {
		close(l.giveUp)
		l.quitNow()
	})
}

// Close writes what is pending and stops the writer. If the store is
// unavailable when ctx ends, what is still held is dropped (and logged).
func (l *eventLog) Close(ctx context.Context) {
	l.mu.Lock()
	l.closed = true
	l.flushed.Broadcast()
	l.mu.Unlock()
	signal(l.wake)
	signal(l.hurry)
	stop := context.AfterFunc(ctx, l.GiveUp)
	defer stop()
	<-l.done
}
