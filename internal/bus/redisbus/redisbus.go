// Package redisbus is the scale-out bus.Bus: Redis Streams for events and
// Redis Pub/Sub for control messages, through go-redis v9, so that a client
// attached to any replica follows a run executing on any other.
//
// # Keys
//
// With Options.Prefix p (default "agentchat"):
//
//	p:{<tenant>}:thread:<thread>   a stream per thread, one entry per event
//	p:control                      the Pub/Sub channel of bus.Control messages
//
// The tenant is a Redis Cluster hash tag, so a tenant's streams share a slot
// (this package itself talks to a single Redis node). The characters % : { }
// in a tenant are percent-escaped so that no two (tenant, thread) pairs share
// a key; the thread, last in the key, needs no escaping.
//
// A stream entry's id is "<seq>-0" and its fields are "seq" (decimal) and "ev"
// (the event as event.Event.MarshalJSON encodes it). Seq increases per thread
// across runs, so these ids increase as Redis requires, and a Last-Event-ID is
// directly a stream position on every replica. Publishing an event whose seq
// is not above the stream's last id (a retry, or a re-publish after a
// takeover) is accepted as a no-op rather than an error, which also makes
// go-redis's network retries of XADD safe. Each publish is one pipelined round
// trip: XADD with MAXLEN ~ Options.MaxLen, and EXPIRE Options.TTL.
//
// Publishing is group-committed: every Publish waits for its own XADD, but
// one writer sends whatever publishes accumulated while its previous
// pipeline was in flight as one pipeline, so a thousand streams publishing
// at once cost a few round trips and syscalls, not a thousand. A stream's
// EXPIRE is refreshed at most once a minute rather than with every event.
//
// # Subscriptions
//
// Events published by this process reach its own subscriptions directly, as
// on the in-process bus; the reader drops them again by seq.
//
// Subscriptions of one process are multiplexed: all subscriptions to a thread
// share one position in its stream, and readers, each holding one connection,
// follow up to 128 streams with a single blocking XREAD. A thousand
// subscriptions cost a thousand queues but only a handful of connections. A
// reader is woken with CLIENT UNBLOCK when a stream is added to it.
//
// Subscribe(after) first delivers the events the stream retains with seq >
// after, at most half a queue of them (older ones come from the store), then
// every event published later, in seq order. On a Redis error a reader keeps
// its positions and retries with bounded backoff, so a reconnect loses nothing
// the stream still holds. If entries are gone (trimmed by MaxLen, expired, or
// Redis restarted empty), delivery simply continues with what is there: the
// bus is not the record, and the caller fills gaps from the store's log, as
// the bus package says.
//
// Control messages are Pub/Sub: delivered to every replica connected at the
// time, and lost for one that is reconnecting. They are a fast path; the state
// they announce (a cancelled run, a decided confirmation) is in the store.
//
// Close ends every subscription with bus.ErrClosed, closes every Controls
// channel, and returns once all the bus's goroutines have ended.
package redisbus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentchat/agentchat/internal/bus"
	"github.com/agentchat/agentchat/internal/event"
)

// Options configures a Bus. Zero values mean the defaults.
type Options struct {
	// Prefix starts every key and channel; replicas of one deployment share
	// it. Default "agentchat".
	Prefix string
	// MaxLen caps each thread's stream, approximately (XADD MAXLEN ~), in
	// entries. Default 10000.
	MaxLen int64
	// TTL expires a thread's stream this long after its last publish. Default 24h.
	TTL time.Duration
	// QueueLimit bounds each subscription's backlog, in events. Default
	// bus.DefaultQueueLimit.
	QueueLimit int
	// Logger receives warnings about Redis errors being retried. Default: discarded.
	Logger *slog.Logger
}

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
	// maxBackoff bounds the wait between retries after a Redis error.
	maxBackoff = 2 * time.Second
)

// Bus is a Redis Streams bus.Bus. It is safe for concurrent use.
type Bus struct {
	url     string
	opts    Options
	log     *slog.Logger
	rdb     *redis.Client // everything but the readers' blocking XREADs
	backlog int64         // retained events a new subscription may receive
	block   time.Duration // XREAD BLOCK; tests lengthen it

	ctx    context.Context // ends at Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // readers, unblockers, control streams and the publisher

	pubMu      sync.Mutex
	pubQueue   []*publishReq
	pubWake    chan struct{}
	expireSeen map[string]time.Time // by the publisher only: when each key's EXPIRE was last refreshed

	mu      sync.Mutex
	closed  bool
	topics  map[string]*topic // by stream key
	readers []*reader
}

var _ bus.Bus = (*Bus)(nil)

// topic is one followed stream and its local subscriptions.
type topic struct {
	key    string
	cursor string // id of the last entry read; the next XREAD starts after it
	pos    int64  // the seq of cursor
	subs   map[*sub]struct{}
	reader *reader
}

// sub is one subscription.
type sub struct {
	q    *bus.Queue
	last int64       // highest seq pushed to q
	stop func() bool // unregisters the context watch
}

// reader follows a set of topics with one blocking XREAD on its own connection.
type reader struct {
	b      *Bus
	client *redis.Client // PoolSize 1: the connection its XREAD blocks
	id     atomic.Int64  // that connection's CLIENT ID, for CLIENT UNBLOCK
	idle   chan struct{} // wakes the reader when it had nothing to follow
	kick   chan struct{} // asks the unblocker to end the XREAD in flight

	// Guarded by b.mu.
	topics  map[string]*topic
	blocked bool // an XREAD is in flight
	dirty   bool // topics were added since the XREAD in flight was built
}

// Open connects to the Redis at url (redis:// or rediss://, with go-redis's
// query options such as pool_size) and checks that it answers.
func Open(ctx context.Context, url string, opts Options) (*Bus, error) {
	ropts, err := redis.ParseURL(url)
	if err != nil {
		// The parse error may quote the URL, password included.
		return nil, errors.New("redisbus: invalid redis url")
	}
	opts.Prefix = cmpOr(opts.Prefix, "agentchat")
	opts.MaxLen = cmpOr(opts.MaxLen, 10000)
	opts.TTL = cmpOr(opts.TTL, 24*time.Hour)
	opts.QueueLimit = cmpOr(opts.QueueLimit, bus.DefaultQueueLimit)
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if ropts.ClientName == "" {
		ropts.ClientName = clientName(opts.Prefix, "bus")
	}
	rdb := redis.NewClient(ropts)
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		return nil, fmt.Errorf("redisbus: connect: %w", err)
	}
	b := &Bus{
		url: url, opts: opts, log: log, rdb: rdb,
		backlog: int64(max(1, opts.QueueLimit/2)), block: blockFor,
		topics: map[string]*topic{},
	}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	b.pubWake, b.expireSeen = make(chan struct{}, 1), map[string]time.Time{}
	b.wg.Add(1)
	go b.publisher()
	return b, nil
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

var tenantEscaper = strings.NewReplacer("%", "%25", ":", "%3A", "{", "%7B", "}", "%7D")

// StreamKey is the key of the stream holding a thread's events under prefix.
func StreamKey(prefix, tenant, thread string) string {
	return prefix + ":{" + tenantEscaper.Replace(tenant) + "}:thread:" + thread
}

// clientName names the bus's connections in CLIENT LIST ("<prefix>:bus",
// "<prefix>:reader"), with the spaces and controls Redis refuses replaced.
func clientName(prefix, role string) string {
	return strings.Map(func(r rune) rune {
		if r <= ' ' || r > '~' {
			return '_'
		}
		return r
	}, prefix+":"+role)
}

func (b *Bus) controlChannel() string { return b.opts.Prefix + ":control" }

func entryID(seq int64) string { return strconv.FormatInt(seq, 10) + "-0" }

// seqOf reads the seq part of a stream entry id.
func seqOf(id string) (int64, bool) {
	ms, _, _ := strings.Cut(id, "-")
	n, err := strconv.ParseInt(ms, 10, 64)
	return n, err == nil
}

// Publish appends ev to its thread's stream, and returns once Redis has it
// (or refused it). Publishes of one thread must not overlap; they are sent
// in the order they arrive.
func (b *Bus) Publish(ctx context.Context, ev event.Event) error {
	if b.isClosed() {
		return bus.ErrClosed
	}
	if ev.Seq <= 0 {
		return fmt.Errorf("redisbus: publish %s: seq %d is not positive", ev.Type, ev.Seq)
	}
	data, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("redisbus: publish %s: %w", ev.Type, err)
	}
	req := &publishReq{key: StreamKey(b.opts.Prefix, ev.Tenant, ev.Thread), seq: ev.Seq, data: data, done: make(chan error, 1)}
	b.deliverLocal(req.key, ev)
	b.pubMu.Lock()
	b.pubQueue = append(b.pubQueue, req)
	b.pubMu.Unlock()
	signal(b.pubWake)
	select {
	case err := <-req.done:
		if err != nil {
			return fmt.Errorf("redisbus: publish seq %d to %s: %w", ev.Seq, req.key, err)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err() // it may still be sent
	case <-b.ctx.Done():
		return bus.ErrClosed
	}
}

// deliverLocal hands ev to this process's subscriptions of its thread at
// once, without the round trip through Redis: a client watching a run on the
// replica executing it sees each event as soon as it is published. The
// reader then finds the same event in the stream and drops it (seq not above
// the subscription's last), so each subscription still gets every event
// once, in order; one that joined between two local publishes may see a
// later event first, and the caller fills the gap from the store, as for any
// gap.
func (b *Bus) deliverLocal(key string, ev event.Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.topics[key]
	if t == nil {
		return
	}
	for s := range t.subs {
		if ev.Seq <= s.last {
			continue
		}
		if !s.q.Push(ev) {
			b.detach(key, s) // overflowed or ended: Push does not run onStop
			continue
		}
		s.last = ev.Seq
	}
}

// publishReq is one Publish waiting for the publisher.
type publishReq struct {
	key  string
	seq  int64
	data []byte
	done chan error
}

// maxPipeline bounds the commands of one publishing round trip.
const maxPipeline = 1000

// expireEvery is how often a published stream's EXPIRE is refreshed.
const expireEvery = time.Minute

// publisher sends queued publishes, as one pipeline per round trip.
func (b *Bus) publisher() {
	defer b.wg.Done()
	for {
		select {
		case <-b.pubWake:
		case <-b.ctx.Done():
			b.failQueued(bus.ErrClosed)
			return
		}
		for {
			b.pubMu.Lock()
			batch := b.pubQueue
			if len(batch) > maxPipeline {
				batch = batch[:maxPipeline]
			}
			b.pubQueue = b.pubQueue[len(batch):]
			if len(b.pubQueue) == 0 {
				b.pubQueue = nil
			}
			b.pubMu.Unlock()
			if len(batch) == 0 {
				break
			}
			b.send(batch)
		}
	}
}

// send writes one batch of publishes as a pipeline and tells each its outcome.
func (b *Bus) send(batch []*publishReq) {
	now := time.Now()
	adds := make([]*redis.StringCmd, len(batch))
	var expires []*redis.BoolCmd
	_, _ = b.rdb.Pipelined(b.ctx, func(p redis.Pipeliner) error {
		for i, r := range batch {
			adds[i] = p.XAdd(b.ctx, &redis.XAddArgs{Stream: r.key, ID: entryID(r.seq), MaxLen: b.opts.MaxLen, Approx: true,
				Values: []any{"seq", r.seq, "ev", r.data}})
			if now.Sub(b.expireSeen[r.key]) > expireEvery {
				b.expireSeen[r.key] = now
				expires = append(expires, p.Expire(b.ctx, r.key, b.opts.TTL))
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
		clear(b.expireSeen) // refresh them all next time
	} else if len(b.expireSeen) > 4096 {
		for k, at := range b.expireSeen {
			if now.Sub(at) > expireEvery {
				delete(b.expireSeen, k)
			}
		}
	}
	for i, r := range batch {
		err := adds[i].Err()
		if err != nil && isStaleID(err) {
			err = nil // the event, or a later one, is there already
		}
		if err == nil {
			err = expireErr
		}
		switch {
		case err != nil && b.ctx.Err() != nil:
			err = bus.ErrClosed
		case err != nil:
			err = unavailable(err)
		}
		r.done <- err
	}
}

// failQueued answers every queued publish with err.
func (b *Bus) failQueued(err error) {
	b.pubMu.Lock()
	q := b.pubQueue
	b.pubQueue = nil
	b.pubMu.Unlock()
	for _, r := range q {
		r.done <- err
	}
}

// unavailable marks a Redis error as the bus being unavailable (the caller
// may retry), unless it is the caller's own cancellation.
func unavailable(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%w: %w", bus.ErrUnavailable, err)
}

// isStaleID reports Redis refusing an explicit XADD id not above the stream's
// last: the event, or a later one, is already there.
func isStaleID(err error) bool {
	return strings.Contains(err.Error(), "equal or smaller than the target stream top item")
}

// Subscribe follows a thread from after: first the retained events with seq >
// after (at most half a queue of the most recent), then every later event.
func (b *Bus) Subscribe(ctx context.Context, tenant, thread string, after int64) (*bus.Queue, error) {
	key := StreamKey(b.opts.Prefix, tenant, thread)
	s := &sub{}
	q := bus.NewQueue(b.opts.QueueLimit, func() { b.unsubscribe(key, s) })
	s.q = q

	start, capped := max(after, 0), false
	for {
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			return nil, bus.ErrClosed
		}
		t := b.topics[key]
		if !capped {
			if t == nil {
				// Nobody here follows the thread: ask Redis where its stream ends.
				b.mu.Unlock()
				top, err := b.top(ctx, key)
				if err != nil {
					return nil, fmt.Errorf("redisbus: subscribe to %s: %w", key, unavailable(err))
				}
				start, capped = max(start, top-b.backlog), true
				continue
			}
			start, capped = max(start, t.pos-b.backlog), true
		}
		if q.Err() != nil { // overflowed while catching up: the consumer learns it from q
			b.mu.Unlock()
			return q, nil
		}
		if t == nil {
			t = &topic{key: key, cursor: entryID(start), pos: start, subs: map[*sub]struct{}{}}
			b.topics[key] = t
			b.assign(t)
		}
		if t.pos <= start {
			// The shared position is not past ours: join, skipping what we have.
			s.last = start
			t.subs[s] = struct{}{}
			// Watched from here on: before, Subscribe's own calls heed ctx. Set
			// under b.mu, where deliver and unsubscribe read it.
			s.stop = context.AfterFunc(ctx, func() { q.Stop(ctx.Err()) })
			b.mu.Unlock()
			return q, nil
		}
		// The topic has read past our start: fetch the gap ourselves, then
		// look again (it may have moved on meanwhile).
		cursor, pos := t.cursor, t.pos
		b.mu.Unlock()
		evs, err := b.fetch(ctx, key, start, cursor)
		if err != nil {
			return nil, fmt.Errorf("redisbus: subscribe to %s: %w", key, unavailable(err))
		}
		for _, ev := range evs {
			q.Push(ev)
		}
		start = pos
	}
}

// top is the seq of the stream's last entry, 0 when there is none.
func (b *Bus) top(ctx context.Context, key string) (int64, error) {
	msgs, err := b.rdb.XRevRangeN(ctx, key, "+", "-", 1).Result()
	if err != nil || len(msgs) == 0 {
		return 0, err
	}
	seq, _ := seqOf(msgs[0].ID)
	return seq, nil
}

// fetch reads the retained events with seq > after up to the entry id until.
func (b *Bus) fetch(ctx context.Context, key string, after int64, until string) ([]event.Event, error) {
	msgs, err := b.rdb.XRange(ctx, key, entryID(after+1), until).Result()
	if err != nil {
		return nil, err
	}
	out := make([]event.Event, 0, len(msgs))
	for _, m := range msgs {
		if ev, ok := b.decode(key, m); ok && ev.Seq > after {
			out = append(out, ev)
		}
	}
	return out, nil
}

// decode reads one stream entry. An entry that is not an event of this
// stream's thread (written by something else) is skipped and logged.
func (b *Bus) decode(key string, m redis.XMessage) (event.Event, bool) {
	var ev event.Event
	seq, ok := seqOf(m.ID)
	data, _ := m.Values["ev"].(string)
	if !ok {
		b.log.Warn("redisbus: skipping foreign stream entry", "key", key, "id", m.ID)
		return ev, false
	}
	if err := json.Unmarshal([]byte(data), &ev); err != nil || ev.Seq != seq || StreamKey(b.opts.Prefix, ev.Tenant, ev.Thread) != key {
		b.log.Warn("redisbus: skipping foreign stream entry", "key", key, "id", m.ID, "err", err)
		return ev, false
	}
	return ev, true
}

// assign gives a new topic to a reader with room, starting one if needed.
// Called with b.mu held.
func (b *Bus) assign(t *topic) {
	var r *reader
	for _, c := range b.readers {
		if len(c.topics) < streamsPerReader {
			r = c
			break
		}
	}
	if r == nil {
		r = b.newReader()
		b.readers = append(b.readers, r)
	}
	r.topics[t.key] = t
	t.reader = r
	r.dirty = true
	if r.blocked {
		signal(r.kick)
	} else {
		signal(r.idle)
	}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// unsubscribe detaches s (its queue's onStop); the last subscription of a
// topic takes the topic with it (the reader drops the stream from its next XREAD).
func (b *Bus) unsubscribe(key string, s *sub) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.detach(key, s)
}

// detach is unsubscribe with b.mu held.
func (b *Bus) detach(key string, s *sub) {
	if s.stop != nil {
		s.stop()
	}
	t := b.topics[key]
	if t == nil {
		return
	}
	delete(t.subs, s)
	if len(t.subs) == 0 {
		delete(b.topics, key)
		delete(t.reader.topics, key)
	}
}

// newReader starts a reader on a client of its own. Called with b.mu held.
func (b *Bus) newReader() *reader {
	r := &reader{b: b, idle: make(chan struct{}, 1), kick: make(chan struct{}, 1), topics: map[string]*topic{}}
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
		streams, snap, ok := r.prepare()
		if !ok {
			return
		}
		if len(snap) == 0 {
			select {
			case <-r.idle:
				continue
			case <-r.b.ctx.Done():
				return
			}
		}
		res, err := r.client.XRead(r.b.ctx, &redis.XReadArgs{Streams: streams, Count: readCount, Block: r.b.block}).Result()
		r.b.mu.Lock()
		r.blocked = false
		r.b.mu.Unlock()
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

// prepare snapshots the reader's topics and their cursors for one XREAD.
func (r *reader) prepare() (streams []string, snap map[string]*topic, ok bool) {
	r.b.mu.Lock()
	defer r.b.mu.Unlock()
	if r.b.closed {
		return nil, nil, false
	}
	snap = make(map[string]*topic, len(r.topics))
	keys, ids := make([]string, 0, len(r.topics)), make([]string, 0, len(r.topics))
	for key, t := range r.topics {
		snap[key] = t
		keys, ids = append(keys, key), append(ids, t.cursor)
	}
	r.dirty, r.blocked = false, len(snap) > 0
	return append(keys, ids...), snap, true
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
	r.b.mu.Lock()
	for _, st := range res {
		t := r.topics[st.Stream]
		if t == nil || t != snap[st.Stream] || len(t.subs) == 0 {
			continue
		}
		floor := int64(math.MaxInt64)
		for s := range t.subs {
			floor = min(floor, s.last)
		}
		floors[st.Stream] = max(floor, t.pos)
	}
	r.b.mu.Unlock()
	batches := make([]batch, 0, len(res))
	for _, st := range res { // decoded outside the lock
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
			if ev, ok := r.b.decode(st.Stream, m); ok {
				bt.evs = append(bt.evs, ev)
			}
		}
		batches = append(batches, bt)
	}
	r.b.mu.Lock()
	defer r.b.mu.Unlock()
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
					r.b.detach(bt.key, s) // overflowed or ended: Push does not run onStop
					continue
				}
				s.last = ev.Seq
			}
		}
		t.cursor, t.pos = bt.cursor, max(t.pos, bt.pos)
	}
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
	r.b.mu.Lock()
	defer r.b.mu.Unlock()
	return r.dirty && r.blocked && !r.b.closed
}

// Retained reads the thread's stream after seq after: every entry the stream
// still holds (at most MaxLen, approximately), in one XRANGE.
func (b *Bus) Retained(ctx context.Context, tenant, thread string, after int64) ([]event.Event, error) {
	if b.isClosed() {
		return nil, bus.ErrClosed
	}
	key := StreamKey(b.opts.Prefix, tenant, thread)
	evs, err := b.fetch(ctx, key, max(after, 0), "+")
	if err != nil {
		return nil, fmt.Errorf("redisbus: read %s: %w", key, unavailable(err))
	}
	return evs, nil
}

// PublishControl sends c to every replica's Controls streams.
func (b *Bus) PublishControl(ctx context.Context, c bus.Control) error {
	if b.isClosed() {
		return bus.ErrClosed
	}
	data, err := json.Marshal(c)
	if err != nil {
		return err
	}
	if err := b.rdb.Publish(ctx, b.controlChannel(), data).Err(); err != nil {
		return fmt.Errorf("redisbus: publish control %s: %w", c.Kind, unavailable(err))
	}
	return nil
}

// Controls streams control messages until ctx ends or the bus closes. It
// returns once the subscription is active, so a message published after it
// returns is delivered; a broken connection is re-established by go-redis.
func (b *Bus) Controls(ctx context.Context) (<-chan bus.Control, error) {
	if b.isClosed() {
		return nil, bus.ErrClosed
	}
	ps := b.rdb.Subscribe(ctx, b.controlChannel())
	if _, err := ps.Receive(ctx); err != nil { // the subscription's confirmation
		ps.Close()
		return nil, fmt.Errorf("redisbus: subscribe to controls: %w", unavailable(err))
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		ps.Close()
		return nil, bus.ErrClosed
	}
	b.wg.Add(1)
	b.mu.Unlock()

	ch := make(chan bus.Control, 64)
	cctx, cancel := context.WithCancel(ctx)
	stopOnClose := context.AfterFunc(b.ctx, cancel)
	// A blocked receive ignores its context; closing the PubSub ends it.
	closeOnDone := context.AfterFunc(cctx, func() { ps.Close() })
	go func() {
		defer b.wg.Done()
		defer close(ch)
		defer func() {
			cancel()
			stopOnClose()
			if closeOnDone() {
				ps.Close()
			}
		}()
		var delay time.Duration
		for {
			msg, err := ps.ReceiveMessage(cctx)
			if cctx.Err() != nil {
				return
			}
			if err != nil {
				delay = min(max(2*delay, 50*time.Millisecond), maxBackoff)
				b.log.Warn("redisbus: control stream failed; retrying", "err", err, "in", delay)
				select {
				case <-time.After(delay):
				case <-cctx.Done():
					return
				}
				continue
			}
			delay = 0
			var c bus.Control
			if err := json.Unmarshal([]byte(msg.Payload), &c); err != nil {
				b.log.Warn("redisbus: skipping malformed control message", "err", err)
				continue
			}
			select {
			case ch <- c:
			case <-cctx.Done():
				return
			}
		}
	}()
	return ch, nil
}

func (b *Bus) isClosed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}

// Close ends every subscription with bus.ErrClosed and every Controls stream,
// waits for the bus's goroutines and releases its connections.
func (b *Bus) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	var queues []*bus.Queue
	for _, t := range b.topics {
		for s := range t.subs {
			s.stop()
			queues = append(queues, s.q)
		}
	}
	readers := b.readers
	b.mu.Unlock()

	b.cancel()
	var errs []error
	for _, r := range readers {
		// Closing the client ends a blocked XREAD, which ignores contexts.
		errs = append(errs, r.client.Close())
	}
	b.wg.Wait()
	for _, q := range queues {
		q.Stop(bus.ErrClosed)
	}
	errs = append(errs, b.rdb.Close())
	return errors.Join(errs...)
}
