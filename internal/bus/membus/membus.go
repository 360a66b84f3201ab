// Package membus is the in-process bus.Bus of the embedded setup: one process,
// every subscriber in it. It retains nothing: a subscriber replays the store's
// log for anything published before it subscribed.
package membus

import (
	"context"
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/agentchat/agentchat/internal/bus"
	"github.com/agentchat/agentchat/internal/event"
)

type topicKey struct{ tenant, thread string }

// Bus is an in-process bus.Bus.
//
// Its topics are spread over topicShards locks by thread: every token of
// every stream is a Publish, and a single lock made each Subscribe (a
// writer) wait for all the publishers of a thousand streams (the mutex
// profile of `agentchat bench --profile`).
type Bus struct {
	seed   maphash.Seed
	shards [topicShards]topicShard
	closed atomic.Bool
	limit  int

	mu       sync.RWMutex // guards controls
	controls map[chan bus.Control]struct{}
}

// topicShard holds the subscriptions of the threads hashed to it.
type topicShard struct {
	mu sync.RWMutex
	// topics holds each thread's queues in a slice, not a set: every
	// token of every stream walks it, a thread rarely has more than one
	// or two subscribers, and a map's iterator cost more than the push.
	topics map[topicKey][]*bus.Queue
	_      [40]byte // keeps neighbouring shards' locks off one cache line
}

// topicShards is how many locks the topics are spread over.
const topicShards = 32

var _ bus.Bus = (*Bus)(nil)

// New makes a bus whose subscriptions queue at most queueLimit events (0: the default).
func New(queueLimit int) *Bus {
	b := &Bus{seed: maphash.MakeSeed(), controls: map[chan bus.Control]struct{}{}, limit: queueLimit}
	for i := range b.shards {
		b.shards[i].topics = map[topicKey][]*bus.Queue{}
	}
	return b
}

func (b *Bus) shard(thread string) *topicShard {
	return &b.shards[maphash.String(b.seed, thread)%topicShards]
}

// Publish hands ev to each subscriber's queue without blocking.
func (b *Bus) Publish(_ context.Context, ev event.Event) error {
	key := topicKey{ev.Tenant, ev.Thread}
	sh := b.shard(ev.Thread)
	var ended []*bus.Queue
	sh.mu.RLock()
	if b.closed.Load() {
		sh.mu.RUnlock()
		return bus.ErrClosed
	}
	for _, q := range sh.topics[key] {
		if !q.Push(ev) {
			ended = append(ended, q)
		}
	}
	sh.mu.RUnlock()
	for _, q := range ended {
		b.remove(key, q)
	}
	return nil
}

// Lossless is true: Publish pushes to every queue of the topic before it
// returns, and a queue never refuses an event but by ending (see bus.Lossless).
func (b *Bus) Lossless() bool { return true }

// Subscribe follows a thread from now on; after is ignored since nothing is retained.
func (b *Bus) Subscribe(ctx context.Context, tenant, thread string, _ int64) (*bus.Queue, error) {
	key := topicKey{tenant, thread}
	var q *bus.Queue
	q = bus.NewQueue(b.limit, func() { b.remove(key, q) })
	sh := b.shard(thread)
	sh.mu.Lock()
	// Close sets closed before it collects each shard's queues under
	// the shard's lock: a queue added here is either collected or refused.
	if b.closed.Load() {
		sh.mu.Unlock()
		return nil, bus.ErrClosed
	}
	sh.topics[key] = append(sh.topics[key], q)
	sh.mu.Unlock()
	context.AfterFunc(ctx, func() { q.Stop(ctx.Err()) })
	return q, nil
}

func (b *Bus) remove(key topicKey, q *bus.Queue) {
	sh := b.shard(key.thread)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	subs := sh.topics[key]
	i := slices.Index(subs, q)
	if i < 0 {
		return // removed already (a queue may end more than once: Stop, then a failed Push)
	}
	if len(subs) == 1 {
		delete(sh.topics, key)
		return
	}
	sh.topics[key] = slices.Delete(subs, i, i+1) // in place: every walk of it holds the lock
}

// Retained returns nothing: the in-process bus holds no events.
func (b *Bus) Retained(context.Context, string, string, int64) ([]event.Event, error) {
	if b.closed.Load() {
		return nil, bus.ErrClosed
	}
	return nil, nil
}

// PublishControl delivers c to every Controls stream of this process.
func (b *Bus) PublishControl(ctx context.Context, c bus.Control) error {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed.Load() {
		return bus.ErrClosed
	}
	for ch := range b.controls {
		select {
		case ch <- c:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Controls streams control messages until ctx ends.
func (b *Bus) Controls(ctx context.Context) (<-chan bus.Control, error) {
	ch := make(chan bus.Control, 64)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed.Load() {
		return nil, bus.ErrClosed
	}
	b.controls[ch] = struct{}{}
	context.AfterFunc(ctx, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if _, ok := b.controls[ch]; ok {
			delete(b.controls, ch)
			close(ch)
		}
	})
	return ch, nil
}

// Close ends all subscriptions and control streams.
func (b *Bus) Close() error {
	b.mu.Lock()
	if !b.closed.CompareAndSwap(false, true) {
		b.mu.Unlock()
		return nil
	}
	for ch := range b.controls {
		delete(b.controls, ch)
		close(ch)
	}
	b.mu.Unlock()
	var queues []*bus.Queue
	for i := range b.shards {
		sh := &b.shards[i]
		sh.mu.Lock()
		for _, subs := range sh.topics {
			for _, q := range subs {
				queues = append(queues, q)
			}
		}
		sh.mu.Unlock()
	}
	for _, q := range queues {
		q.Stop(bus.ErrClosed)
	}
	return nil
}
