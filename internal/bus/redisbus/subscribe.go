package redisbus

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/agentchat/agentchat/internal/bus"
	"github.com/agentchat/agentchat/internal/event"
)

// topic is one followed stream and its local subscriptions.
type topic struct {
	key    string
	cursor string // id of the last entry read; the next XREAD starts after it
	pos    int64  // the seq of cursor
	subs   map[*sub]struct{}
	reader *reader
	local  int64 // when an event was last published here (unix ns); 0 when none since the run's end
}

// sub is one subscription.
type sub struct {
	q    *bus.Queue
	last int64       // highest seq pushed to q
	stop func() bool // unregisters the context watch
}

// Subscribe follows a thread from after: first the retained events with seq >
// after (at most half a queue of the most recent), then every later event.
func (b *Bus) Subscribe(ctx context.Context, tenant, thread string, after int64) (*bus.Queue, error) {
	key := StreamKey(b.opts.Prefix, tenant, thread)
	s := &sub{}
	q := bus.NewQueue(b.opts.QueueLimit, func() { b.unsubscribe(key, s) })
	s.q = q

	start, capped := max(after, 0), false
	sh := b.shard(key)
	for {
		sh.mu.Lock()
		if b.closed.Load() {
			sh.mu.Unlock()
			return nil, bus.ErrClosed
		}
		t := sh.topics[key]
		if !capped {
			if t == nil {
				// Nobody here follows the thread: ask Redis where its stream ends.
				sh.mu.Unlock()
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
			sh.mu.Unlock()
			return q, nil
		}
		if t == nil {
			t = &topic{key: key, cursor: entryID(start), pos: start, subs: map[*sub]struct{}{}}
			sh.topics[key] = t
			b.assign(sh, t)
		}
		if t.pos <= start {
			// The shared position is not past ours: join, skipping what we have.
			s.last = start
			t.subs[s] = struct{}{}
			// Watched from here on: before, Subscribe's own calls heed ctx. Set
			// under the shard's lock, where deliver and unsubscribe read it.
			s.stop = context.AfterFunc(ctx, func() { q.Stop(ctx.Err()) })
			sh.mu.Unlock()
			return q, nil
		}
		// The topic has read past our start: fetch the gap ourselves, then
		// look again (it may have moved on meanwhile).
		cursor, pos := t.cursor, t.pos
		sh.mu.Unlock()
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
		// An entry of several events may start at or before after; a
		// republish may have stored some twice.
		for _, ev := range b.decode(nil, key, m) {
			if ev.Seq > after {
				out = append(out, ev)
				after = ev.Seq
			}
		}
	}
	return out, nil
}

// decode appends the events of one stream entry to dst: its "ev" (one
// event) or its "evs" (several, in increasing seq, the last one's seq the
// entry's id). An entry that is not events of this stream's thread (written
// by something else) is skipped and logged.
func (b *Bus) decode(dst []event.Event, key string, m redis.XMessage) []event.Event {
	seq, ok := seqOf(m.ID)
	if !ok {
		b.log.Warn("redisbus: skipping foreign stream entry", "key", key, "id", m.ID)
		return dst
	}
	var evs []event.Event
	var err error
	if data, one := m.Values["ev"].(string); one {
		evs = make([]event.Event, 1)
		err = json.Unmarshal([]byte(data), &evs[0])
	} else {
		data, _ := m.Values["evs"].(string)
		err = json.Unmarshal([]byte(data), &evs)
	}
	valid := err == nil && len(evs) > 0 && evs[len(evs)-1].Seq == seq
	for i, ev := range evs {
		if !valid || (i > 0 && ev.Seq <= evs[i-1].Seq) || StreamKey(b.opts.Prefix, ev.Tenant, ev.Thread) != key {
			valid = false
			break
		}
	}
	if !valid {
		b.log.Warn("redisbus: skipping foreign stream entry", "key", key, "id", m.ID, "err", err)
		return dst
	}
	return append(dst, evs...)
}

// assign gives a new topic to a reader of its shard with room, starting one
// if needed. Called with sh.mu held.
func (b *Bus) assign(sh *shard, t *topic) {
	var r *reader
	for _, c := range sh.readers {
		if len(c.topics) < streamsPerReader {
			r = c
			break
		}
	}
	if r == nil {
		r = b.newReader(sh)
		sh.readers = append(sh.readers, r)
	}
	r.topics[t.key] = t
	t.reader = r
	r.wake()
}

// unsubscribe detaches s (its queue's onStop); the last subscription of a
// topic takes the topic with it (the reader drops the stream from its next XREAD).
func (b *Bus) unsubscribe(key string, s *sub) {
	sh := b.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.detach(key, s)
}

// detach is unsubscribe with sh.mu held.
func (sh *shard) detach(key string, s *sub) {
	if s.stop != nil {
		s.stop()
	}
	t := sh.topics[key]
	if t == nil {
		return
	}
	delete(t.subs, s)
	if len(t.subs) == 0 {
		delete(sh.topics, key)
		delete(t.reader.topics, key)
	}
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
