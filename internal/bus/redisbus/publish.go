package redisbus

import (
	"context"
	"fmt"
	"maps"
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
	// MarshalJSON directly: json.Marshal would reflect on ev and then
	// re-compact the encoder's output, a seventh of a replica's CPU under load.
	data, err := ev.MarshalJSON()
	if err != nil {
		return fmt.Errorf("redisbus: publish %s: %w", ev.Type, err)
	}
	key := StreamKey(b.opts.Prefix, ev.Tenant, ev.Thread)
	sh := b.shard(key)
	q := &b.pub
	req := &publishReq{key: key, seq: ev.Seq, data: data}
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
	// expireSweep is the size at which expireSeen is next swept.
	expireSweep int
}

// minExpireSweep is the least size at which expireSeen is swept.
const minExpireSweep = 4096

// sweepExpireSeen drops the keys whose EXPIRE is due again, once
// expireSeen has reached its mark, and moves the mark to twice what is
// left: with a fixed mark, a minute's new threads beyond it (at 70 new
// conversations a second) made every pipeline walk them all.
func (q *publishQueue) sweepExpireSeen(now time.Time) {
	if len(q.expireSeen) < q.expireSweep {
		return
	}
	maps.DeleteFunc(q.expireSeen, func(_ string, at time.Time) bool { return now.Sub(at) > expireEvery })
	q.expireSweep = max(minExpireSweep, 2*len(q.expireSeen))
}

// publishReq is one publish waiting for the publisher.
type publishReq struct {
	key  string
	seq  int64
	data []byte
	done chan struct{} // for a publish that waits: closed once err is set; nil otherwise
	err  error
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
	key  string
	reqs []*publishReq
}

// entries groups a batch by thread, each thread's publishes in the order
// they came: at a thousand streams a pipeline carries two or three events of
// a stream (they queued while the previous one was in flight), and one
// entry for them costs Redis and go-redis one command instead of several. A
// seq not above its thread's previous one (a republish) starts an entry of
// its own, which Redis refuses as stale as it would have alone.
func entries(batch []*publishReq) []entry {
	out := make([]entry, 0, len(batch))
	last := make(map[string]int, len(batch)) // key → index in out of its latest entry
	for _, r := range batch {
		if i, ok := last[r.key]; ok {
			if e := &out[i]; e.reqs[len(e.reqs)-1].seq < r.seq {
				e.reqs = append(e.reqs, r)
				continue
			}
		}
		last[r.key] = len(out)
		out = append(out, entry{key: r.key, reqs: []*publishReq{r}})
	}
	return out
}

// values is an entry's fields: "ev" and the event for one publish, "evs" and
// a JSON array of the events for several (the events' own encodings,
// joined).
func (e entry) values() []any {
	if len(e.reqs) == 1 {
		return []any{"ev", e.reqs[0].data}
	}
	n := 1 + len(e.reqs)
	for _, r := range e.reqs {
		n += len(r.data)
	}
	data, sep := make([]byte, 0, n), byte('[')
	for _, r := range e.reqs {
		data = append(append(data, sep), r.data...)
		sep = ','
	}
	return []any{"evs", append(data, ']')}
}

// send writes one batch of publishes as a pipeline, an entry per thread (see
// entries), and tells each publish its entry's outcome.
func (b *Bus) send(q *publishQueue, batch []*publishReq) {
	now := time.Now()
	ents := entries(batch)
	adds := make([]*redis.StringCmd, len(ents))
	var expires []*redis.BoolCmd
	ctx, cancel := context.WithTimeout(b.ctx, sendTimeout)
	defer cancel()
	_, _ = b.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, e := range ents {
			// The entry's id is its last event's seq: a later position reads
			// it whole and drops the events at or before the position.
			adds[i] = p.XAdd(ctx, &redis.XAddArgs{Stream: e.key, ID: entryID(e.reqs[len(e.reqs)-1].seq), MaxLen: b.opts.MaxLen, Approx: true,
				Values: e.values()})
			if now.Sub(q.expireSeen[e.key]) > expireEvery {
				q.expireSeen[e.key] = now
				expires = append(expires, p.Expire(ctx, e.key, b.opts.TTL))
			}
		}
		return nil
	})
	var expireErr error
	for _, e := range expires {
		if err := e.Err(); err != nil {
			expireErr = err
		}
	}
	if expireErr != nil {
		clear(q.expireSeen) // refresh them all next time
	} else {
		q.sweepExpireSeen(now)
	}
	var failed []*publishReq
	for i, e := range ents {
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
		for _, r := range e.reqs {
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
	for _, r := range batch {
		if r.done != nil {
			close(r.done)
		}
	}
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
