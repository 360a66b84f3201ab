package run

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
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
// Every token of every stream passes through Enqueue, so it must not meet
// the other streams on one lock: with a single queue, a thousand streams on
// a 2-core box spent most of their time parked on its mutex (the mutex
// profile of `agentchat bench --profile`). Events are queued in logShards
// shards chosen by thread, so a thread's events keep their order in one
// shard; the writer gathers every shard into one batch.
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
	limit int64 // events held before Enqueue waits
	seed  maphash.Seed

	shards [logShards]logShard
	held   atomic.Int64 // events enqueued and not yet taken by the writer
	closed atomic.Bool
	// asleep is set while the writer waits for a first event: only then
	// does Enqueue signal wake (a channel send per token was a contended
	// lock of its own).
	asleep atomic.Bool

	// mu guards outage and the waits on flushed: an Enqueue's for room
	// (past limit) or for its owner to be fenced. Neither Enqueue's fast
	// path nor Flush takes it: Flush waits on its own channel, closed by
	// the writer (flushWaiter), since a thousand runs ending at once all
	// woken by every batch to re-take this one lock was a convoy (the
	// mutex profile, docs/benchmarks.md "the event log's Flush").
	mu      sync.Mutex
	flushed *sync.Cond // events were written or taken, an owner was fenced, or the log closed
	outage  time.Time  // when the store became unavailable; zero while it answers
	// waitMu guards waiters: the Flush calls waiting for their events,
	// each taking it once to register (and once more if it stops waiting
	// early), the writer once per batch to release those whose events are
	// all written.
	waitMu  sync.Mutex
	waiters []*flushWaiter
	met     []*flushWaiter // release's list of the waits to close, kept between batches (the writer's alone)
	// down is closed when an outage begins (so that a waiting Flush
	// answers "unavailable" at once) and replaced when it ends; swapped
	// under mu, read without it.
	down     atomic.Pointer[chan struct{}]
	wake     chan struct{}
	hurry    chan struct{} // a Flush is waiting: commit without lingering
	giveUp   chan struct{} // closed by GiveUp: stop retrying
	giveOnce sync.Once
	quit     context.Context // ends with giveUp: a write in flight is abandoned
	quitNow  context.CancelFunc
	done     chan struct{}
	// evs and owners are the batch being written (the writer's alone): the
	// events taken from the queues' blocks, which go back to blocks at
	// once, and each event's owner. Kept between batches: a fresh array per
	// batch was a few hundred bytes of garbage per token.
	evs    []event.Event
	owners []fencer
	// batchFit sizes evs and owners to recent batches (the writer's alone).
	batchFit fit
	// blocks holds the queues' free blocks. A pool, not a list of its own:
	// it is per P (no lock shared by the shards), and what a burst left in
	// it is dropped by the next collections rather than kept.
	blocks sync.Pool
	// from is the shard gather starts at (the writer's alone): where the
	// last full batch stopped. Starting at shard 0 every time, a log behind
	// by more than a batch took the first shards' events again and again,
	// while the last shards' events (and every Flush waiting for them)
	// waited for as long as the first shards stayed busy.
	from int
}

// fit decides how large a reused array may stay: twice the greatest need
// of the last two windows of fitWindow uses, and at least fitFloor. Arrays
// reused from batch to batch keep the capacity of their largest batch; one
// burst (a slow commit on a loaded box) would otherwise hold its arrays for
// the life of the process, and each new record burst grew them further: in
// a five-minute soak at 200 streams the log's arrays went from 2.9 to 5.0 MB
// of live heap, and the collector's goal (twice the live heap) with them
// (docs/benchmarks.md, "ninth round: the soak's RSS"). Twice the recent
// need leaves room for ordinary swings without reallocating.
type fit struct {
	peak, prev int // the greatest need of this window and of the last
	uses       int // uses noted in this window
}

const (
	// fitWindow is how many uses a window spans: about ten seconds of
	// batches at the linger, less when Flush cuts it short.
	fitWindow = 100
	// fitFloor is the capacity always kept: an array this small is not
	// worth giving back.
	fitFloor = 64
)

// keep notes an array's use for used entries and returns the capacity
// worth keeping.
func (f *fit) keep(used int) int {
	f.peak = max(f.peak, used)
	if f.uses++; f.uses == fitWindow {
		f.prev, f.peak, f.uses = f.peak, 0, 0
	}
	return max(2*max(f.peak, f.prev), fitFloor)
}

// logShard is one queue of the log: its events in the order enqueued, in a
// chain of fixed-size blocks, and counts that let Flush wait for exactly the
// events enqueued before it.
//
// Blocks rather than one array per shard: an array grown by append holds up
// to twice what is queued, and the one it replaced (kept for reuse) as much
// again, so the queues' live heap was several times the events held (6-7 MB
// at 1000 streams, where the events held were a fraction of that), and the
// collector's goal, twice the live heap, doubled that again
// (docs/benchmarks.md, "tenth round: memory per active stream"). A chain of
// blocks holds what is queued, to a block, and the writer hands each block
// back as soon as it has copied its events out.
type logShard struct {
	mu         sync.Mutex
	head, tail *logBlock     // the queue: head's first event is the oldest; nil when empty
	enqueued   atomic.Uint64 // events ever enqueued here; moved under mu, read without it
	written    atomic.Uint64 // events ever written (or given up on) from here: a prefix of them
	_          [64]byte      // keeps neighbouring shards' locks off one cache line
}

// flushWaiter is one Flush call's wait: done is closed once every shard has
// written target. The writer closes it, once, when that is so, rather than
// waking every Flush on every batch to look.
type flushWaiter struct {
	target [logShards]uint64
	done   chan struct{}
}

// caughtUp reports whether every event enqueued before target was read is
// written (or given up on).
func (l *eventLog) caughtUp(target *[logShards]uint64) bool {
	for i := range l.shards {
		if l.shards[i].written.Load() < target[i] {
			return false
		}
	}
	return true
}

// release closes the waits of the Flush calls whose events are all written
// now; the writer calls it after counting events written.
func (l *eventLog) release() {
	l.waitMu.Lock()
	keep := l.waiters[:0]
	for _, w := range l.waiters {
		if l.caughtUp(&w.target) {
			l.met = append(l.met, w)
		} else {
			keep = append(keep, w)
		}
	}
	clear(l.waiters[len(keep):])
	l.waiters = keep
	l.waitMu.Unlock()
	// Closed once the list is let go: a Flush registering need not wait
	// for the woken ones to be readied.
	for _, w := range l.met {
		close(w.done)
	}
	clear(l.met)
	l.met = l.met[:0]
}

// forget removes w from the waits (its Flush stopped waiting).
func (l *eventLog) forget(w *flushWaiter) {
	l.waitMu.Lock()
	defer l.waitMu.Unlock()
	if i := slices.Index(l.waiters, w); i >= 0 {
		l.waiters = slices.Delete(l.waiters, i, i+1)
	}
}

// logEntry is an event and the execution that emitted it (nil for events
// written whatever happens).
type logEntry struct {
	ev    event.Event
	owner fencer
}

// logBlockLen is how many events a queue block holds: 48 entries of 168
// bytes with the header fill an 8 KiB size class. Small enough that the
// block a queue is filling when the writer takes it wastes little; large
// enough that a block is taken from the pool once per 48 events.
const logBlockLen = 48

// logBlock is a piece of a shard's queue.
type logBlock struct {
	next *logBlock
	n    int // entries used
	e    [logBlockLen]logEntry
}

// block returns an empty block.
func (l *eventLog) block() *logBlock {
	if b, ok := l.blocks.Get().(*logBlock); ok {
		return b
	}
	return new(logBlock)
}

// free hands a chain of blocks back, their events' references dropped.
func (l *eventLog) free(b *logBlock) {
	for b != nil {
		next := b.next
		clear(b.e[:b.n])
		b.n, b.next = 0, nil
		l.blocks.Put(b)
		b = next
	}
}

// fencer is an event's producer that may stop acting for its run.
type fencer interface {
	// fenced reports whether it stopped, stopping it if its time is up.
	fenced() bool
	// stopped reports whether it stopped, without side effects (safe under l.mu).
	stopped() bool
}

const (
	// logShards is how many queues Enqueue spreads over: enough that a
	// thousand streams seldom meet on one lock.
	logShards = 32
	// maxBatch bounds one commit; a writer that holds a full batch
	// commits without lingering. Large enough that a thousand streams'
	// deltas of one linger share a batch (1600 at 50 tokens/s fill it),
	// and each stream's pack into a row.
	maxBatch = 8000
	// linger bounds how long an event waits for companions before its
	// batch is committed. It delays only the log, never a client (events
	// are published before they are written; an end, a pause and a reader
	// that needs the log complete Flush, cutting it short). Long enough for
	// a stream at 50 tokens/s to put ~5 deltas in a batch, which the store
	// keeps as one row. It is also how much of the timeline a crash can
	// lose (published, not yet written) and how long the log holds each
	// event; 250 ms (~12 deltas a row) saved ~1.7 ms per 1000 tokens by
	// the row benchmark, less than the bench's spread, so it stays short
	// (docs/benchmarks.md, "fifth round: CPU per token").
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
	l := &eventLog{st: st, log: log, limit: maxPending, seed: maphash.MakeSeed(), wake: make(chan struct{}, 1), hurry: make(chan struct{}, 1),
		giveUp: make(chan struct{}), done: make(chan struct{})}
	// The writer is one goroutine every event passes through: its pprof
	// label gives its CPU in a profile, the store's writes it makes under
	// quit included (their labels are added to quit's).
	l.quit, l.quitNow = context.WithCancel(pprof.WithLabels(context.Background(), pprof.Labels("role", "event-log")))
	l.flushed = sync.NewCond(&l.mu)
	up := make(chan struct{})
	l.down.Store(&up)
	go func() {
		pprof.SetGoroutineLabels(l.quit)
		l.loop()
	}()
	return l
}

// Enqueue schedules ev for writing. Events of a thread must be enqueued in seq
// order. owner, if not nil, is the execution that emitted ev: once it is
// fenced, ev is dropped instead of written. When maxPending events are held
// (the store is down), Enqueue waits for room, or for owner to be fenced.
func (l *eventLog) Enqueue(ev event.Event, owner fencer) {
	if l.held.Load() >= l.limit && !l.waitForRoom(owner) {
		return
	}
	sh := &l.shards[maphash.String(l.seed, ev.Thread)%logShards]
	sh.mu.Lock()
	b := sh.tail
	if b == nil || b.n == logBlockLen {
		nb := l.block()
		if b == nil {
			sh.head = nb
		} else {
			b.next = nb
		}
		sh.tail, b = nb, nb
	}
	b.e[b.n] = logEntry{ev, owner}
	b.n++
	sh.enqueued.Add(1)
	sh.mu.Unlock()
	l.held.Add(1)
	if l.asleep.Load() && l.asleep.CompareAndSwap(true, false) {
		signal(l.wake)
	}
}

// waitForRoom waits while the log holds its limit, and reports whether to
// enqueue: not once owner is fenced or stopped.
func (l *eventLog) waitForRoom(owner fencer) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.held.Load() >= l.limit && !l.closed.Load() {
		if owner != nil {
			l.mu.Unlock()
			f := owner.fenced() // may fence, which pokes l: not under l.mu
			l.mu.Lock()
			if f || owner.stopped() {
				return false
			}
			if l.held.Load() < l.limit || l.closed.Load() {
				break
			}
		}
		l.flushed.Wait()
	}
	return true
}

// poke wakes whoever waits in Enqueue to look again, and the writer to drop
// the fenced owner's events (an owner was fenced).
func (l *eventLog) poke() {
	l.broadcast()
	signal(l.hurry)
}

// broadcast wakes every wait on l.flushed.
func (l *eventLog) broadcast() {
	l.mu.Lock()
	l.flushed.Broadcast()
	l.mu.Unlock()
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
	down := *l.down.Load() // before registering: an outage that begins later closes it
	// Every Enqueue that returned before this call counted its event in
	// enqueued: these targets cover them, without a shard's lock.
	w := &flushWaiter{}
	for i := range l.shards {
		w.target[i] = l.shards[i].enqueued.Load()
	}
	if l.caughtUp(&w.target) {
		return nil
	}
	w.done = make(chan struct{})
	l.waitMu.Lock()
	// Looked at again under waitMu: the writer counts a batch written
	// before it takes waitMu to release, so either this sees the count or
	// that release sees w.
	if l.caughtUp(&w.target) {
		l.waitMu.Unlock()
		return nil
	}
	l.waiters = append(l.waiters, w)
	l.waitMu.Unlock()
	signal(l.hurry)
	select {
	case <-w.done:
		return nil
	case <-down:
	case <-ctx.Done():
	}
	l.forget(w)
	if l.caughtUp(&w.target) { // written after all: as if it had been seen first
		return nil
	}
	select {
	case <-down:
		return store.ErrUnavailable
	default:
		return ctx.Err()
	}
}

// gathered is the part of a batch taken from one shard.
type gathered struct {
	shard int
	n     int
	head  *logBlock // the blocks taken, in order
}

func (l *eventLog) loop() {
	defer close(l.done)
	timer := time.NewTimer(linger)
	timer.Stop()
	var parts []gathered
	for {
		// held may dip below zero for a moment: the writer can take an
		// event whose Enqueue has not counted it yet.
		for l.held.Load() <= 0 && !l.closed.Load() {
			l.asleep.Store(true)
			// An event enqueued before asleep was set is seen here; one
			// enqueued after finds asleep set and wakes us.
			if l.held.Load() > 0 || l.closed.Load() {
				l.asleep.Store(false)
				break
			}
			<-l.wake
		}
		if l.held.Load() < maxBatch && !l.closed.Load() {
			timer.Reset(linger)
			select {
			case <-timer.C:
			case <-l.hurry:
				timer.Stop()
			}
		}
		parts = l.take(parts[:0])
		n := len(l.evs)
		if n == 0 {
			if l.closed.Load() && l.held.Load() <= 0 {
				return
			}
			continue
		}
		l.broadcast() // room for an Enqueue waiting past the limit

		l.write(l.evs, l.owners)

		// Drop the events' references (write may have moved some within
		// the first n).
		clear(l.evs[:n])
		clear(l.owners[:n])
		l.evs, l.owners = l.evs[:0], l.owners[:0]
		if keep := l.batchFit.keep(n); cap(l.evs) > keep || cap(l.owners) > keep {
			// Outgrown by a burst: regrown to the next batch's size.
			l.evs, l.owners = nil, nil
		}
		for _, p := range parts {
			l.shards[p.shard].written.Add(uint64(p.n))
		}
		l.release()
		l.broadcast() // for an Enqueue waiting past the limit
	}
}

// take gathers up to maxBatch queued events into l.evs and l.owners, in
// order within each shard, and hands their blocks back.
func (l *eventLog) take(parts []gathered) []gathered {
	parts = l.gather(parts)
	for k := range parts {
		for b := parts[k].head; b != nil; b = b.next {
			for i := range b.e[:b.n] {
				l.evs = append(l.evs, b.e[i].ev)
				l.owners = append(l.owners, b.e[i].owner)
			}
		}
		l.free(parts[k].head)
		parts[k].head = nil // parts is reused: it must not keep a block the pool dropped
	}
	return parts
}

// gather takes up to maxBatch queued events, shard by shard, a whole block
// at a time. The blocks are unlinked under the shard's lock and read after
// it is let go, so that enqueuers never wait for a copy; a block being
// filled is taken too, and the shard's next event starts a new one.
func (l *eventLog) gather(parts []gathered) []gathered {
	room := maxBatch
	for k := range logShards {
		i := (l.from + k) % logShards
		sh := &l.shards[i]
		sh.mu.Lock()
		n := 0
		var last *logBlock
		for b := sh.head; b != nil && n+b.n <= room; b = b.next {
			n += b.n
			last = b
		}
		if last == nil {
			left := sh.head != nil
			sh.mu.Unlock()
			if left {
				// The batch is full: the next one starts with this shard.
				l.from = i
				break
			}
			continue
		}
		p := gathered{shard: i, n: n, head: sh.head}
		sh.head, last.next = last.next, nil
		if sh.head == nil {
			sh.tail = nil
		}
		left := sh.head != nil
		sh.mu.Unlock()
		l.held.Add(-int64(n))
		room -= n
		parts = append(parts, p)
		if left || room == 0 {
			// The batch is full: the next one starts with the shards this
			// one left, this shard first if some of its queue is left.
			l.from = i
			if !left {
				l.from = (i + 1) % logShards
			}
			break
		}
	}
	return parts
}

// write commits a batch, retrying while the store is unavailable. A batch the
// store refuses (a duplicate seq: a retry of a commit whose answer was lost,
// or seqs a takeover wrote) is written one by one so one refused event does
// not lose its neighbours.
// owners[i] is the owner of evs[i]; write moves entries within both (it
// drops those of fenced owners) and leaves them to its caller to clear.
func (l *eventLog) write(evs []event.Event, owners []fencer) {
	ctx := l.quit
	backoff := 50 * time.Millisecond
	n := len(evs)
	for {
		// Looked at before every attempt: an owner may have been fenced
		// while the store was away. Only ever drops, so in place.
		kept := 0
		for i := range evs {
			if owners[i] == nil || !owners[i].fenced() {
				evs[kept], owners[kept] = evs[i], owners[i]
				kept++
			}
		}
		evs, owners = evs[:kept], owners[:kept]
		if len(evs) == 0 {
			l.dropped(n)
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
			l.dropped(n - len(evs))
			return
		}
		if errors.Is(err, store.ErrUnavailable) {
			l.unavailable(err)
			select {
			case <-time.After(backoff): // the store is down: nothing to synchronise with but time
			case <-l.giveUp:
				held := int64(len(evs)) + l.held.Load()
				l.log.Error("event log: shutting down with the store still unavailable; events not written to the timeline",
					"events", held, "err", err)
				l.drop()
				return
			}
			backoff = min(2*backoff, maxBackoff)
			continue
		}
		l.available()
		if len(evs) > 1 {
			l.dropped(n - len(evs))
			for i := range evs {
				l.write(evs[i:i+1], owners[i:i+1])
			}
			return
		}
		ev := evs[0]
		log := l.log.With("run_id", ev.Run)
		if x, ok := owners[0].(*execution); ok {
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
		close(*l.down.Load()) // Flush callers answer "unavailable" now
	}
	l.mu.Unlock()
	if first {
		held := l.held.Load()
		l.log.Error("event log: store unavailable; holding events and retrying until it answers",
			"held", held, "err", err)
	}
}

// available ends an outage, logging its end once.
func (l *eventLog) available() {
	l.mu.Lock()
	since := l.outage
	if !since.IsZero() {
		l.outage = time.Time{}
		up := make(chan struct{})
		l.down.Store(&up)
	}
	l.mu.Unlock()
	if !since.IsZero() {
		l.log.Info("event log: store available again; held events written", "outage", time.Since(since).Round(time.Millisecond))
	}
}

// drop discards everything pending (shutdown with the store still away).
func (l *eventLog) drop() {
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		n := 0
		for b := sh.head; b != nil; b = b.next {
			n += b.n
		}
		l.free(sh.head)
		sh.head, sh.tail = nil, nil
		sh.written.Add(uint64(n))
		sh.mu.Unlock()
		l.held.Add(-int64(n))
	}
	l.release()
	l.broadcast()
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
	l.closed.Store(true)
	l.broadcast()
	signal(l.wake)
	signal(l.hurry)
	stop := context.AfterFunc(ctx, l.GiveUp)
	defer stop()
	<-l.done
}
