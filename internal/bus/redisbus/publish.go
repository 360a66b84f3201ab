package redisbus

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentchat/agentchat/internal/bus"
	"github.com/agentchat/agentchat/internal/event"
)

// Publish appends ev to its thread's stream. It does not wait for Redis,
// except for an event that ends a run or pauses it for a decision
// (mustWait), or while its shard's publisher is far behind: those return
// once Redis has ev, and with it every earlier event of the thread. An
// XADD that fails is the thread's next Publish's error (ev then reaches
// only this process's subscriptions). Publishes of one thread must not
// overlap; they are sent in the order they arrive.
func (b *Bus) Publish(ctx context.Context, ev event.Event) error {
	return b.publish(ctx, ev, mustWait(ev))
}

// publish is Publish, waiting for Redis when wait is set.
func (b *Bus) publish(ctx context.Context, ev event.Event, wait bool) error {
	if b.isClosed() {
		return bus.ErrClosed
	}
	if ev.Seq <= 0 {
		return fmt.Errorf("redisbus: publish %s: seq %d is not positive", ev.Type, ev.Seq)
	}
	// AppendJSON directly: json.Marshal would reflect on ev and then
	// re-compact the encoder's output, a seventh of a replica's CPU under
	// load. The request and its buffer are reused once sent (see
	// recycle): with go-redis's command per entry, the bus's publishes
	// were two fifths of a replica's allocations.
	req := newReq()
	data, err := ev.AppendJSON(req.data[:0])
	if err != nil {
		return fmt.Errorf("redisbus: publish %s: %w", ev.Type, err)
	}
	key := StreamKey(b.opts.Prefix, ev.Tenant, ev.Thread)
	sh := b.shard(key)
	q := &b.pub
	req.key, req.seq, req.data = key, ev.Seq, data
	// Delivered here before Redis can have it, so the reader never brings
	// it back first; if an earlier XADD failed, it reaches only these
	// subscriptions, which the log (where the run wrote it) backs like any
	// gap of the others.
	b.deliverLocal(sh, key, ev)
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return bus.ErrClosed
	}
	if err := q.failed[key]; err != nil {
		delete(q.failed, key)
		q.mu.Unlock()
		return err
	}
	// Far behind (Redis slow or unreachable): wait, so that the runs slow
	// down with Redis rather than the queue growing without bound.
	wait = wait || len(q.reqs) >= maxQueued
	if wait {
		req.done = make(chan struct{})
		q.waiting++
	}
	q.reqs = append(q.reqs, req)
	// The publisher needs a wake-up only for a request it does not know of:
	// the first in an empty queue (it may be idle), or one that must go at
	// once while it gathers (see sendEvery). The others, it finds with them.
	wake := len(q.reqs) == 1 || wait || len(q.reqs) == maxPipeline
	q.mu.Unlock()
	if wake {
		signal(q.wake)
	}
	if !wait {
		return nil
	}
	// req.done is always closed, with ErrClosed once the bus closes (see
	// publishQueue.closed), so the wait needs no case for b.ctx: a thousand
	// publishers all selecting on that one channel contended for its lock.
	select {
	case <-req.done:
	case <-ctx.Done():
		return ctx.Err() // it may still be sent
	}
	q.mu.Lock()
	if err = q.failed[key]; err != nil { // this one's, or an earlier one's of the thread
		delete(q.failed, key)
	}
	q.mu.Unlock()
	if err == nil {
		err = req.err // refused as the bus closed, or a failure past maxFailed
	}
	return err
}

// mustWait reports whether a publish of ev returns only once Redis has it:
// a run's end (the run's publisher retries it until it is taken, and the
// thread's next run may publish from another replica) and a pause for a
// decision (the continuation may publish from another replica: an earlier
// seq arriving after its events would be refused as stale).
func mustWait(ev event.Event) bool {
	return ev.Terminal() || ev.Type == event.ToolAwaiting
}

// deliverLocal hands ev to this process's subscriptions of its thread at
// once, without the round trip through Redis: a client watching a run on the
// replica executing it sees each event as soon as it is published. The
// reader then finds the same event in the stream and drops it (seq not above
// the subscription's last), so each subscription still gets every event
// once, in order; one that joined between two local publishes may see a
// later event first, and the caller fills the gap from the store, as for any
// gap.
//
// It also marks the topic as published here, which keeps it out of its
// reader's XREAD until localQuiet passes without a local publish, or the
// run's end or a pause for a decision is published: reading back what every subscription already has
// cost Redis one XREAD per event (most of its CPU at a thousand streams) and
// the reader a wake-up per event, for entries that were all dropped.
func (b *Bus) deliverLocal(sh *shard, key string, ev event.Event) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	t := sh.topics[key]
	if t == nil {
		return
	}
	if ev.Terminal() || ev.Type == event.ToolAwaiting {
		// The thread's next run, or the paused one's continuation, may
		// execute on another replica: follow the stream again at once rather
		// than after localQuiet.
		t.local = 0
		t.reader.wake()
	} else {
		t.local = time.Now().UnixNano()
	}
	for s := range t.subs {
		if ev.Seq <= s.last {
			continue
		}
		if !s.q.Push(ev) {
			sh.detach(key, s) // overflowed or ended: Push does not run onStop
			continue
		}
		s.last = ev.Seq
	}
}

// publishQueue is the publishes waiting for the bus's publisher: one queue
// and one goroutine, so that a thread's publishes reach Redis in the order
// they were made, and so that every publish of the process gathered in one
// sendEvery goes in one pipeline. (A publisher per shard of the threads sent
// eight times as many pipelines, of ten events each at a thousand streams:
// a write and a read on the socket, a wake-up and go-redis's setup per ten
// events.) Publish does not wait for the publisher, but for a run's end or
// pause, so one goroutine's turn in the scheduler holds no run.
type publishQueue struct {
	mu   sync.Mutex
	reqs []*publishReq
	// waiting counts the requests in reqs whose Publish waits for them:
	// while there is one, the publisher sends at once rather than gathering.
	waiting int
	// closed is set, under mu, once the publisher has ended and answered
	// every queued request: a Publish after that is refused rather than
	// queued, so every queued request is answered.
	closed bool
	// failed is, by stream key, the first failed XADD of a thread that no
	// Publish has returned yet (at most maxFailed of them).
	failed     map[string]error
	wake       chan struct{}
	expireSeen map[string]time.Time // by the publisher only: when each key's EXPIRE was last refreshed
	// The publisher's own, kept from one pipeline to the next: the entries,
	// the latest entry of each key, the joined entries' bytes and the
	// commands' arguments.
	ents   []entry
	latest map[string]int
	arena  []byte
	args   []any
}

// publishReq is one publish waiting for the publisher.
type publishReq struct {
	key  string
	seq  int64
	data []byte
	done chan struct{} // for a publish that waits: closed once err is set; nil otherwise
	err  error
	next *publishReq // the next request of its entry, while the publisher sends it
}

// reqPool holds the requests sent and not waited for, with their buffers:
// a publish's request and encoding were an allocation each per event.
var reqPool = sync.Pool{New: func() any { return new(publishReq) }}

// maxPooledData is the largest buffer a recycled request keeps: a large
// event (a tool's result) is not held on to for the deltas that follow.
const maxPooledData = 4 << 10

func newReq() *publishReq { return reqPool.Get().(*publishReq) }

// recycle gives back the requests of a batch that no Publish waits for,
// once the batch is sent and its outcome noted.
func recycle(batch []*publishReq) {
	for _, r := range batch {
		if r.done != nil {
			continue // its Publish reads err
		}
		data := r.data[:0]
		if cap(data) > maxPooledData {
			data = nil
		}
		*r = publishReq{data: data}
		reqPool.Put(r)
	}
}

// maxPipeline bounds the commands of one publishing round trip.
const maxPipeline = 1000

// sendTimeout bounds go-redis's retries of one pipeline (dialling again,
// backing off): while Redis is away, a pipeline fails within it, and the
// runs learn of the outage from their next publish (they pause publishing;
// streams fill from the log) instead of the shard's publishes waiting out
// every retry.
const sendTimeout = time.Second

// maxQueued is how many publishes the queue holds before a Publish waits
// for its own: many pipelines' worth, which a publisher keeping up with a
// thousand streams never has queued (it sends about a hundred per pipeline).
const maxQueued = 32 * maxPipeline

// sendEvery is the least time between two of the publisher's pipelines,
// unless a Publish waits for its own or a full pipeline is queued: under
// load, the publishes of this long gather into one pipeline. A publish that
// finds the publisher idle for longer goes at once, so a quiet bus adds no
// latency; under load a subscription on another replica sees an event at
// most this much later (one on this replica has it directly, see
// deliverLocal). At a thousand streams over two replicas, a replica then
// sends a pipeline of about eighty events where it sent ten.
const sendEvery = 2 * time.Millisecond

// maxFailed bounds the failures a shard keeps for the threads' next
// publishes: past it (a long outage over many threads) a failure goes
// unreported, and subscribers fill the gap from the log as for any gap.
const maxFailed = 4096

// expireEvery is how often a published stream's EXPIRE is refreshed.
const expireEvery = time.Minute

// publisher sends q's publishes, as one pipeline per round trip, at most
// one every sendEvery unless a publish waits (see sendEvery).
func (b *Bus) publisher(q *publishQueue) {
	defer b.wg.Done()
	gather := time.NewTimer(0)
	defer gather.Stop()
	var last time.Time // when the last pipeline was sent
	for {
		select {
		case <-q.wake:
		case <-b.ctx.Done():
			q.fail(bus.ErrClosed)
			return
		}
		for {
			q.mu.Lock()
			queued, urgent := len(q.reqs), q.waiting > 0 || len(q.reqs) >= maxPipeline
			q.mu.Unlock()
			if queued == 0 {
				break
			}
			if rest := sendEvery - time.Since(last); rest > 0 && !urgent {
				// Gather until sendEvery has passed, or until a publish
				// must go at once (it wakes q).
				gather.Reset(rest)
				select {
				case <-gather.C:
				case <-q.wake:
				case <-b.ctx.Done():
					q.fail(bus.ErrClosed)
					return
				}
				continue
			}
			q.mu.Lock()
			batch := q.reqs
			if len(batch) > maxPipeline {
				batch = batch[:maxPipeline]
			}
			q.reqs = q.reqs[len(batch):]
			if len(q.reqs) == 0 {
				q.reqs = nil
			}
			for _, r := range batch {
				if r.done != nil {
					q.waiting--
				}
			}
			q.mu.Unlock()
			last = time.Now()
			b.send(q, batch)
		}
	}
}

// entry is the publishes of one thread in a batch that go to Redis as one
// stream entry: consecutive seqs of the thread, in order.
type entry struct {
	key         string
	first, last *publishReq // its requests, linked by next
	n, size     int         // how many, and their encodings' bytes
}

// group sorts a batch into q.ents by thread, each thread's publishes in the
// order they came: at a thousand streams a pipeline carries two or three
// events of a stream (they queued while the previous one was in flight), and
// one entry for them costs Redis and go-redis one command instead of
// several. A seq not above its thread's previous one (a republish) starts an
// entry of its own, which Redis refuses as stale as it would have alone.
func (q *publishQueue) group(batch []*publishReq) {
	q.ents = q.ents[:0]
	clear(q.latest)
	for _, r := range batch {
		r.next = nil
		if i, ok := q.latest[r.key]; ok {
			if e := &q.ents[i]; e.last.seq < r.seq {
				e.last.next, e.last = r, r
				e.n, e.size = e.n+1, e.size+len(r.data)
				continue
			}
		}
		q.latest[r.key] = len(q.ents)
		q.ents = append(q.ents, entry{key: r.key, first: r, last: r, n: 1, size: len(r.data)})
	}
}

// send writes one batch of publishes as a pipeline, an entry per thread (see
// group), and tells each publish its entry's outcome. Its XADDs are built
// here rather than by go-redis's XAdd (an argument list, a values list and
// the id's string per command): an entry of several events is joined in
// q.arena, its id written there too, and the arguments of every command
// share q.args.
func (b *Bus) send(q *publishQueue, batch []*publishReq) {
	now := time.Now()
	q.group(batch)
	ents := q.ents
	// The joined entries ("evs": a JSON array of the events' own
	// encodings) and every entry's id, in one buffer sized first, so that
	// the slices taken of it stay put.
	n := 0
	for _, e := range ents {
		n += 24 // the id
		if e.n > 1 {
			n += e.size + e.n + 1
		}
	}
	arena := q.arena[:0]
	if cap(arena) < n {
		arena = make([]byte, 0, n)
	}
	const argc = 8 // xadd key maxlen ~ n id field value
	args := q.args[:0]
	if cap(args) < argc*len(ents) {
		args = make([]any, 0, argc*len(ents))
	}
	adds := make([]*redis.StringCmd, len(ents))
	var expires []*redis.BoolCmd
	ctx, cancel := context.WithTimeout(b.ctx, sendTimeout)
	defer cancel()
	_, _ = b.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range ents {
			e := &ents[i]
			// The entry's id is its last event's seq: a later position reads
			// it whole and drops the events at or before the position.
			at := len(arena)
			arena = append(strconv.AppendInt(arena, e.last.seq, 10), '-', '0')
			id := arena[at:len(arena):len(arena)]
			var field string
			var value []byte
			if e.n == 1 {
				field, value = "ev", e.first.data
			} else {
				at = len(arena)
				sep := byte('[')
				for r := e.first; r != nil; r = r.next {
					arena = append(append(arena, sep), r.data...)
					sep = ','
				}
				arena = append(arena, ']')
				field, value = "evs", arena[at:len(arena):len(arena)]
			}
			at = len(args)
			args = append(args, "xadd", e.key, "maxlen", "~", b.maxLenArg, id, field, value)
			adds[i] = redis.NewStringCmd(ctx, args[at:len(args):len(args)]...)
			_ = p.Process(ctx, adds[i])
			if now.Sub(q.expireSeen[e.key]) > expireEvery {
				q.expireSeen[e.key] = now
				expires = append(expires, p.Expire(ctx, e.key, b.opts.TTL))
			}
		}
		return nil
	})
	// Kept for the next pipeline, without what this one referenced.
	q.arena = arena[:0]
	clear(args)
	q.args = args[:0]
	var expireErr error
	for _, e := range expires {
		if err := e.Err(); err != nil {
			expireErr = err
		}
	}
	if expireErr != nil {
		clear(q.expireSeen) // refresh them all next time
	} else if len(q.expireSeen) > 4096 {
		for k, at := range q.expireSeen {
			if now.Sub(at) > expireEvery {
				delete(q.expireSeen, k)
			}
		}
	}
	var failed []*publishReq
	for i := range ents {
		e := &ents[i]
		err := adds[i].Err()
		if err != nil && isStaleID(err) {
			err = nil // the events, or later ones, are there already
		}
		if err == nil {
			err = expireErr
		}
		switch {
		case err == nil:
			continue
		case b.ctx.Err() != nil:
			err = bus.ErrClosed
		case ctx.Err() != nil:
			err = fmt.Errorf("%w: not sent within %s: %w", bus.ErrUnavailable, sendTimeout, err)
		default:
			err = unavailable(err)
		}
		for r := e.first; r != nil; r = r.next {
			r.err = fmt.Errorf("redisbus: publish seq %d to %s: %w", r.seq, r.key, err)
			failed = append(failed, r)
		}
	}
	if len(failed) > 0 {
		q.mu.Lock()
		for _, r := range failed {
			if _, ok := q.failed[r.key]; !ok && len(q.failed) < maxFailed {
				q.failed[r.key] = r.err
			}
		}
		q.mu.Unlock()
	}
	clear(q.ents) // drops the requests, which go back to the pool
	q.ents = q.ents[:0]
	for _, r := range batch {
		if r.done != nil {
			close(r.done)
		}
	}
	recycle(batch)
}

// fail answers every queued publish with err and refuses later ones.
func (q *publishQueue) fail(err error) {
	q.mu.Lock()
	reqs := q.reqs
	q.reqs = nil
	q.closed = true
	q.mu.Unlock()
	for _, r := range reqs {
		if r.done != nil {
			r.err = err
			close(r.done)
		}
	}
}

// isStaleID reports Redis refusing an explicit XADD id not above the stream's
// last: the event, or a later one, is already there. Redis says so only in
// the text of an ERR reply (go-redis has no type or code for it), so the
// text is matched here, in one place; TestRepublishIsIdempotent fails if a
// Redis version words it otherwise.
func isStaleID(err error) bool {
	return strings.Contains(err.Error(), "equal or smaller than the target stream top item")
}
