package redisbus

import (
	"context"
	"errors"
	"math"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentchat/agentchat/internal/event"
)

const (
	// streamsPerReader bounds one XREAD's key list: big enough that a
	// thousand followed threads need few connections, small enough that the
	// command a reader re-sends after every wake-up stays cheap.
	streamsPerReader = 128
	// readCount bounds the entries one XREAD returns per stream.
	readCount = 512
	// blockFor is how long an XREAD waits for new entries before it is
	// re-issued; a wake-up (CLIENT UNBLOCK) usually ends it sooner.
	blockFor = 5 * time.Second
	// localQuiet is how long after this process's last publish to a thread
	// its reader leaves the thread's stream out of its XREAD (see
	// deliverLocal). It bounds how late a subscription here sees events
	// another replica publishes to a thread this one published to less than
	// localQuiet ago with no run's end or pause between: a run taken over
	// from a replica still alive.
	localQuiet = 500 * time.Millisecond
)

// reader follows a set of topics with one blocking XREAD on its own connection.
type reader struct {
	b      *Bus
	sh     *shard        // whose topics it follows
	client *redis.Client // PoolSize 1: the connection its XREAD blocks
	id     atomic.Int64  // that connection's CLIENT ID, for CLIENT UNBLOCK
	read   atomic.Int64  // entries its XREADs returned, for tests
	idle   chan struct{} // wakes the reader when it had nothing to follow
	kick   chan struct{} // asks the unblocker to end the XREAD in flight

	// Guarded by sh.mu.
	topics  map[string]*topic
	blocked bool // an XREAD is in flight
	dirty   bool // topics were added (or published here no longer) since the XREAD in flight was built
}

// wake makes the reader rebuild its XREAD: its topics changed. Called with
// sh.mu held.
func (r *reader) wake() {
	r.dirty = true
	if r.blocked {
		signal(r.kick)
	} else {
		signal(r.idle)
	}
}

// newReader starts a reader of sh on a client of its own. Called with sh.mu held.
func (b *Bus) newReader(sh *shard) *reader {
	r := &reader{b: b, sh: sh, idle: make(chan struct{}, 1), kick: make(chan struct{}, 1), topics: map[string]*topic{}}
	opts, _ := redis.ParseURL(b.url) // parsed once already by Open
	opts.PoolSize, opts.MinIdleConns, opts.PipelinePoolSize = 1, 0, -1
	if opts.ClientName == "" {
		opts.ClientName = clientName(b.opts.Prefix, "reader")
	}
	// Errors come back to the reader, which backs off and logs, rather than
	// being retried blind inside go-redis.
	opts.MaxRetries = -1
	opts.OnConnect = func(ctx context.Context, cn *redis.Conn) error {
		id, err := cn.ClientID(ctx).Result()
		if err == nil {
			r.id.Store(id)
		}
		return err
	}
	r.client = redis.NewClient(opts)
	b.wg.Add(2)
	go r.run()
	go r.unblocker()
	return r
}

// run is the reader's loop: XREAD every followed stream from its cursor,
// deliver, repeat; on an error keep the cursors and retry after a backoff.
func (r *reader) run() {
	defer r.b.wg.Done()
	var delay time.Duration
	for {
		streams, snap, block, ok := r.prepare()
		if !ok {
			return
		}
		if len(snap) == 0 {
			// Nothing to read: wait for a topic, or for one published here
			// to fall quiet.
			var quiet <-chan time.Time
			var tm *time.Timer
			if block < time.Duration(r.b.block.Load()) {
				tm = time.NewTimer(block)
				quiet = tm.C
			}
			select {
			case <-r.idle:
			case <-quiet:
			case <-r.b.ctx.Done():
				return
			}
			if tm != nil {
				tm.Stop()
			}
			continue
		}
		res, err := r.client.XRead(r.b.ctx, &redis.XReadArgs{Streams: streams, Count: readCount, Block: block}).Result()
		r.sh.mu.Lock()
		r.blocked = false
		r.sh.mu.Unlock()
		switch {
		case r.b.ctx.Err() != nil:
			return
		case errors.Is(err, redis.Nil): // timed out, or unblocked to pick up new streams
			delay = 0
		case err != nil:
			delay = min(max(2*delay, 50*time.Millisecond), maxBackoff)
			r.b.log.Warn("redisbus: read failed; retrying", "err", err, "in", delay)
			select {
			case <-time.After(delay):
			case <-r.b.ctx.Done():
				return
			}
		default:
			delay = 0
			r.deliver(snap, res)
		}
	}
}

// prepare snapshots the reader's topics and their cursors for one XREAD,
// and how long it may block: at most until a topic left out of it because it
// was published here falls quiet.
//
// A topic's cursor first moves past what every subscription of it already
// has (published here and delivered directly): the reader would read those
// entries only to drop them.
func (r *reader) prepare() (streams []string, snap map[string]*topic, block time.Duration, ok bool) {
	r.sh.mu.Lock()
	defer r.sh.mu.Unlock()
	if r.b.closed.Load() {
		return nil, nil, 0, false
	}
	now, quiet := time.Now().UnixNano(), r.b.quiet.Load()
	block = time.Duration(r.b.block.Load())
	snap = make(map[string]*topic, len(r.topics))
	keys, ids := make([]string, 0, len(r.topics)), make([]string, 0, len(r.topics))
	for key, t := range r.topics {
		if t.local != 0 {
			if rest := time.Duration(t.local + quiet - now); rest > 0 {
				block = min(block, rest)
				continue
			}
			t.local = 0
		}
		if floor := t.floor(); floor > t.pos {
			t.cursor, t.pos = entryID(floor), floor
		}
		snap[key] = t
		keys, ids = append(keys, key), append(ids, t.cursor)
	}
	// XREAD BLOCK 0 would wait forever.
	block = max(block, time.Millisecond)
	r.dirty, r.blocked = false, len(snap) > 0
	return append(keys, ids...), snap, block, true
}

// deliver pushes what one XREAD returned to the subscriptions, in order.
func (r *reader) deliver(snap map[string]*topic, res []redis.XStream) {
	type batch struct {
		key    string
		evs    []event.Event
		cursor string
		pos    int64
	}
	// What every subscription of a topic already has (its events published
	// here were delivered directly) is not even decoded.
	floors := make(map[string]int64, len(res))
	r.sh.mu.Lock()
	for _, st := range res {
		t := r.topics[st.Stream]
		if t == nil || t != snap[st.Stream] || len(t.subs) == 0 {
			continue
		}
		floors[st.Stream] = max(t.floor(), t.pos)
	}
	r.sh.mu.Unlock()
	batches := make([]batch, 0, len(res))
	for _, st := range res { // decoded outside the lock
		r.read.Add(int64(len(st.Messages)))
		bt := batch{key: st.Stream}
		for _, m := range st.Messages {
			// The cursor passes every entry, even one skipped below, so that
			// no entry is read twice.
			bt.cursor = m.ID
			seq, ok := seqOf(m.ID)
			if ok {
				bt.pos = seq
				if seq <= floors[st.Stream] {
					continue
				}
			}
			bt.evs = r.b.decode(bt.evs, st.Stream, m)
		}
		batches = append(batches, bt)
	}
	r.sh.mu.Lock()
	defer r.sh.mu.Unlock()
	for _, bt := range batches {
		t := r.topics[bt.key]
		if t == nil || t != snap[bt.key] || bt.cursor == "" {
			continue // unfollowed (or followed anew, from its own cursor) since the XREAD was built
		}
		for _, ev := range bt.evs {
			if ev.Seq <= t.pos {
				continue
			}
			for s := range t.subs {
				if ev.Seq <= s.last {
					continue
				}
				if !s.q.Push(ev) {
					r.sh.detach(bt.key, s) // overflowed or ended: Push does not run onStop
					continue
				}
				s.last = ev.Seq
			}
		}
		t.cursor, t.pos = bt.cursor, max(t.pos, bt.pos)
	}
}

// floor is the highest seq every subscription of t has. Called with its
// shard's lock held.
func (t *topic) floor() int64 {
	floor := int64(math.MaxInt64)
	for s := range t.subs {
		floor = min(floor, s.last)
	}
	if floor == math.MaxInt64 {
		return 0
	}
	return floor
}

// unblocker ends the reader's XREAD in flight when streams were added to it,
// so that a new subscription is served at once rather than after blockFor.
func (r *reader) unblocker() {
	defer r.b.wg.Done()
	for {
		select {
		case <-r.kick:
		case <-r.b.ctx.Done():
			return
		}
		// CLIENT UNBLOCK finds nothing when the XREAD has not reached Redis
		// yet; try again until the reader has rebuilt its XREAD.
		delay := time.Millisecond
		for r.needsUnblock() {
			if n, err := r.b.rdb.ClientUnblock(r.b.ctx, r.id.Load()).Result(); err == nil && n == 1 {
				break
			}
			select {
			case <-time.After(delay):
			case <-r.b.ctx.Done():
				return
			}
			delay = min(2*delay, 100*time.Millisecond)
		}
	}
}

func (r *reader) needsUnblock() bool {
	r.sh.mu.Lock()
	defer r.sh.mu.Unlock()
	return r.dirty && r.blocked && !r.b.closed.Load()
}
