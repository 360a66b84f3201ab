package run

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/store"
)

// appendRecorder is a store that keeps what AppendEvents is given; gate,
// when set, holds each write until the test reads from it.
type appendRecorder struct {
	store.Store
	mu   sync.Mutex
	got  []event.Event
	gate chan struct{}
}

func (r *appendRecorder) AppendEvents(ctx context.Context, evs []event.Event) error {
	if r.gate != nil {
		select {
		case <-r.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	r.mu.Lock()
	r.got = append(r.got, evs...)
	r.mu.Unlock()
	return nil
}

func (r *appendRecorder) events() []event.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]event.Event(nil), r.got...)
}

// TestEventLogKeepsEachThreadsOrder enqueues many threads' events from many
// goroutines at once: after Flush every event is written exactly once, each
// thread's in seq order, whichever shards the threads fall in.
func TestEventLogKeepsEachThreadsOrder(t *testing.T) {
	rec := &appendRecorder{}
	l := newEventLog(rec, slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer l.Close(context.Background())
	const threads, perThread = 200, 50
	var wg sync.WaitGroup
	for th := range threads {
		wg.Go(func() {
			for seq := range perThread {
				l.Enqueue(event.Event{Thread: fmt.Sprint("c", th), Seq: int64(seq + 1)}, nil)
			}
		})
	}
	wg.Wait()
	if err := l.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	wroteOnceInOrder(t, rec.events(), threads*perThread)
}

// TestEventLogBacklogPastABatch holds the store's first write while more
// than two batches' events queue up, so that later batches take part of a
// shard's queue and leave the rest: every event is still written exactly
// once, each thread's in seq order.
func TestEventLogBacklogPastABatch(t *testing.T) {
	rec := &appendRecorder{gate: make(chan struct{})}
	l := newEventLog(rec, slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer l.Close(context.Background())
	const threads, perThread = 100, maxBatch * 5 / 2 / 100
	for seq := range perThread {
		for th := range threads {
			l.Enqueue(event.Event{Thread: fmt.Sprint("c", th), Seq: int64(seq + 1)}, nil)
		}
	}
	close(rec.gate)
	if err := l.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	wroteOnceInOrder(t, rec.events(), threads*perThread)
}

// wroteOnceInOrder checks that the log wrote want events, each once and
// each thread's in seq order from 1.
func wroteOnceInOrder(t *testing.T, got []event.Event, want int) {
	t.Helper()
	if len(got) != want {
		t.Fatalf("%d events written, want %d", len(got), want)
	}
	last := map[string]int64{}
	for _, ev := range got {
		if ev.Seq != last[ev.Thread]+1 {
			t.Fatalf("thread %s: seq %d written after %d", ev.Thread, ev.Seq, last[ev.Thread])
		}
		last[ev.Thread] = ev.Seq
	}
}

// TestEventLogFlushWaitsForItsEvents holds the store's write: a Flush after
// an Enqueue must not return before that event is written, whatever shard
// it went to.
func TestEventLogFlushWaitsForItsEvents(t *testing.T) {
	rec := &appendRecorder{gate: make(chan struct{})}
	l := newEventLog(rec, slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer func() {
		close(rec.gate)
		l.Close(context.Background())
	}()
	for i := range 8 {
		l.Enqueue(event.Event{Thread: fmt.Sprint("c", i), Seq: 1}, nil)
	}
	flushed := make(chan error, 1)
	go func() { flushed <- l.Flush(context.Background()) }()
	for {
		select {
		case err := <-flushed:
			if n := len(rec.events()); n != 8 || err != nil {
				t.Fatalf("Flush returned (%v) with %d of 8 events written", err, n)
			}
			return
		case rec.gate <- struct{}{}: // let one write through
		}
	}
}

// TestEventLogManyFlushers has many runs enqueue and Flush at once, over
// and over: each Flush returns only once every event its run enqueued before
// it is in the store.
func TestEventLogManyFlushers(t *testing.T) {
	rec := &appendRecorder{}
	l := newEventLog(rec, slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer l.Close(context.Background())
	const runs, rounds = 200, 5
	var wg sync.WaitGroup
	for r := range runs {
		wg.Go(func() {
			thread := fmt.Sprint("c", r)
			for round := range rounds {
				seq := int64(round + 1)
				l.Enqueue(event.Event{Thread: thread, Seq: seq}, nil)
				if err := l.Flush(context.Background()); err != nil {
					t.Error(err)
					return
				}
				if !slices.ContainsFunc(rec.events(), func(ev event.Event) bool { return ev.Thread == thread && ev.Seq == seq }) {
					t.Errorf("Flush returned before %s seq %d was written", thread, seq)
					return
				}
			}
		})
	}
	wg.Wait()
	wroteOnceInOrder(t, rec.events(), runs*rounds)
	if n := waits(l); n != 0 {
		t.Errorf("the shards still hold %d waits", n)
	}
}

// waits counts the Flush calls waiting in l.
func waits(l *eventLog) int {
	l.waitMu.Lock()
	defer l.waitMu.Unlock()
	return len(l.waiters)
}

// TestEventLogFlushGivesUpWithTheLog holds the store's write until GiveUp
// abandons it, with flushers arriving before and while it does: each returns,
// with nil (its events counted as given up on) or store.ErrUnavailable, as
// before the log gave up, and never waits on.
func TestEventLogFlushGivesUpWithTheLog(t *testing.T) {
	rec := &appendRecorder{gate: make(chan struct{})} // never opened: the write hangs until abandoned
	l := newEventLog(rec, slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer l.Close(context.Background())
	const flushers = 100
	errs := make(chan error, flushers)
	var wg sync.WaitGroup
	for i := range flushers {
		l.Enqueue(event.Event{Thread: fmt.Sprint("c", i), Seq: 1}, nil)
		wg.Go(func() { errs <- l.Flush(context.Background()) })
		if i == flushers/2 {
			wg.Go(l.GiveUp)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil && !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("Flush: %v, want nil or %v", err, store.ErrUnavailable)
		}
	}
}

// TestEventLogFlushGivenUpByItsCaller cancels a Flush whose event's write is
// held: it answers the context's error and leaves no wait behind, and a
// later Flush still waits for the write.
func TestEventLogFlushGivenUpByItsCaller(t *testing.T) {
	rec := &appendRecorder{gate: make(chan struct{})}
	l := newEventLog(rec, slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer func() {
		close(rec.gate)
		l.Close(context.Background())
	}()
	l.Enqueue(event.Event{Thread: "c", Seq: 1}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.Flush(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Flush = %v, want %v", err, context.Canceled)
	}
	if n := waits(l); n != 0 {
		t.Fatalf("the shards hold %d waits after the Flush returned", n)
	}
	flushed := make(chan error, 1)
	go func() { flushed <- l.Flush(context.Background()) }()
	rec.gate <- struct{}{}
	if err := <-flushed; err != nil || len(rec.events()) != 1 {
		t.Fatalf("Flush = %v with %d of 1 events written", err, len(rec.events()))
	}
}

// BenchmarkEventLogFlush is runs ending at once: many goroutines each
// enqueue an event of their own thread and Flush it, the store's write aside.
func BenchmarkEventLogFlush(b *testing.B) {
	l := newEventLog(discardAppends{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer l.Close(context.Background())
	var next atomic.Int64
	b.SetParallelism(64) // goroutines per core: runs, not cores
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		thread := fmt.Sprint("c", next.Add(1))
		seq := int64(0)
		for pb.Next() {
			seq++
			l.Enqueue(event.Event{Thread: thread, Seq: seq}, nil)
			if err := l.Flush(context.Background()); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkEventLogEnqueue is the token path's share of the log: many
// streams enqueueing at once, as a busy replica's executions do.
func BenchmarkEventLogEnqueue(b *testing.B) {
	rec := &appendRecorder{}
	l := newEventLog(discardAppends{rec}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer l.Close(context.Background())
	var next sync.Mutex
	n := 0
	b.SetParallelism(64) // goroutines per core: streams, not cores
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		next.Lock()
		thread := fmt.Sprint("c", n)
		n++
		next.Unlock()
		seq := int64(0)
		for pb.Next() {
			seq++
			l.Enqueue(event.Event{Thread: thread, Seq: seq}, nil)
		}
	})
}

// discardAppends is a store whose writes succeed and keep nothing.
type discardAppends struct{ store.Store }

func (discardAppends) AppendEvents(context.Context, []event.Event) error { return nil }

// BenchmarkEventLogWrite is the log writer's own work for one batch of a
// thousand streams' deltas, the store's aside: what it allocates is per
// batch, never per event (B/op stays flat as the batch grows).
func BenchmarkEventLogWrite(b *testing.B) {
	l := newEventLog(discardAppends{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer l.Close(context.Background())
	evs, owners := make([]event.Event, 1000), make([]fencer, 1000)
	for i := range evs {
		evs[i] = event.Event{Thread: fmt.Sprint("c", i), Seq: 1, Payload: event.TextDeltaData{MessageID: "m", Delta: " token"}}
	}
	b.ReportAllocs()
	for b.Loop() {
		l.write(evs, owners) // the writer goroutine is asleep: nothing is enqueued
	}
}

// TestEventLogGatherTakesTurns: a log behind by more than a batch does not
// starve a shard. The writer's next batch starts with the shards a full
// batch left, so a thread whose shard comes after a busy one is written in
// the next batch, not once the busy thread falls quiet.
func TestEventLogGatherTakesTurns(t *testing.T) {
	t.Parallel()
	l := &eventLog{limit: maxPending, seed: maphash.MakeSeed()} // no writer: the test gathers
	shard := func(thread string) int { return int(maphash.String(l.seed, thread) % logShards) }
	busy, quiet := "", ""
	for i := 0; quiet == ""; i++ {
		th := fmt.Sprint("c", i)
		switch {
		case busy == "" && shard(th) < logShards-1:
			busy = th
		case busy != "" && shard(th) > shard(busy):
			quiet = th
		}
	}
	enqueue := func(thread string, n int, from int64) {
		for i := range int64(n) {
			l.Enqueue(event.Event{Thread: thread, Seq: from + i}, nil)
		}
	}
	enqueue(busy, maxBatch, 1)
	enqueue(quiet, 10, 1)
	l.take(nil)
	first := l.evs
	if len(first) > maxBatch || len(first) < maxBatch-logBlockLen || first[0].Thread != busy {
		t.Fatalf("first batch: %d events starting with %q, want the busy thread's %d, to a block", len(first), first[0].Thread, maxBatch)
	}
	l.evs, l.owners = nil, nil
	enqueue(busy, maxBatch, maxBatch+1) // still busy: more than a batch again
	l.take(nil)
	got := 0
	for _, e := range l.evs {
		if e.Thread == quiet {
			got++
		}
	}
	if got != 10 {
		t.Fatalf("second batch holds %d of the quiet thread's 10 events, left behind the busy thread's", got)
	}
}

// TestEventLogQueueHoldsWhatIsQueued: a shard's queue is as many blocks as
// its events need, not an array grown past them, and the writer takes them
// all, in order, leaving the shard empty for the next event to start a
// block of its own.
func TestEventLogQueueHoldsWhatIsQueued(t *testing.T) {
	t.Parallel()
	l := &eventLog{limit: maxPending, seed: maphash.MakeSeed()} // no writer: the test takes
	const n = 10*logBlockLen + 1
	for i := range int64(n) {
		l.Enqueue(event.Event{Thread: "c", Seq: i + 1}, nil)
	}
	sh := &l.shards[maphash.String(l.seed, "c")%logShards]
	blocks := 0
	for b := sh.head; b != nil; b = b.next {
		blocks++
	}
	if blocks != 11 {
		t.Fatalf("%d events queued in %d blocks, want 11 of %d", n, blocks, logBlockLen)
	}
	l.take(nil)
	if len(l.evs) != n || len(l.owners) != n {
		t.Fatalf("took %d events and %d owners, want %d", len(l.evs), len(l.owners), n)
	}
	for i, ev := range l.evs {
		if ev.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d: out of order", i, ev.Seq)
		}
	}
	if sh.head != nil || sh.tail != nil || l.held.Load() != 0 {
		t.Fatalf("after the take the shard still queues blocks (%v) or counts %d held", sh.head != nil, l.held.Load())
	}
	l.Enqueue(event.Event{Thread: "c", Seq: n + 1}, nil)
	if sh.head == nil || sh.head != sh.tail || sh.head.n != 1 {
		t.Fatal("the next event did not start a block of its own")
	}
}

// TestFitKeepsRecentNeed pins how long a burst's size is kept: for the
// window it fell in and the next, then the arrays fit the recent batches.
func TestFitKeepsRecentNeed(t *testing.T) {
	var f fit
	if got := f.keep(5000); got != 10000 {
		t.Fatalf("after a burst of 5000: keep %d, want 10000", got)
	}
	for i := 1; i < 2*fitWindow-1; i++ {
		if got := f.keep(50); got != 10000 {
			t.Fatalf("use %d after the burst: keep %d, want 10000 (the burst is in this window or the last)", i, got)
		}
	}
	if got := f.keep(50); got != 100 {
		t.Fatalf("two windows after the burst: keep %d, want 100 (twice the recent need)", got)
	}
	var g fit
	if got := g.keep(3); got != fitFloor {
		t.Fatalf("small needs: keep %d, want the floor %d", got, fitFloor)
	}
}

// TestEventLogGivesBackABurstsArrays queues a burst past a batch on one
// thread while the store's first write is held, then writes one event at a
// time: once the burst is two windows old, the writer's arrays are back to
// a small size, not the burst's, and the shard's queue holds no block.
func TestEventLogGivesBackABurstsArrays(t *testing.T) {
	rec := &appendRecorder{gate: make(chan struct{})}
	l := newEventLog(rec, slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer l.Close(context.Background())
	const burst = 3 * maxBatch
	seq := int64(0)
	for range burst {
		seq++
		l.Enqueue(event.Event{Thread: "c", Seq: seq}, nil)
	}
	close(rec.gate) // every write passes from now on
	if err := l.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Two windows for the burst to leave the writer's record, and two
	// batches more.
	for range 2*fitWindow + 2 {
		seq++
		l.Enqueue(event.Event{Thread: "c", Seq: seq}, nil)
		if err := l.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	wroteOnceInOrder(t, rec.events(), int(seq))
	// The writer is idle: what it kept is settled (Flush returned after it).
	sh := &l.shards[maphash.String(l.seed, "c")%logShards]
	sh.mu.Lock()
	queued := sh.head != nil || sh.tail != nil
	sh.mu.Unlock()
	if queued || cap(l.evs) > fitFloor || cap(l.owners) > fitFloor {
		t.Errorf("after %d one-event batches the queue holds blocks: %v; the writer's arrays %d and %d entries, want at most %d each: a burst of %d is still kept",
			2*fitWindow+2, queued, cap(l.evs), cap(l.owners), fitFloor, burst)
	}
}
