// Package membus is the in-process bus.Bus of the embedded setup: one process,
// every subscriber in it. It retains nothing: a subscriber replays the store's
// log for anything published before it subscribed.
package membus

import (
	"context"
	"sync"

	"github.com/agentchat/agentchat/internal/bus"
	"github.com/agentchat/agentchat/internal/event"
)

type topicKey struct{ tenant, thread string }

// Bus is an in-process bus.Bus.
type Bus struct {
	mu       sync.RWMutex
	topics   map[topicKey]map[*bus.Queue]struct{}
	controls map[chan bus.Control]struct{}
	closed   bool
	limit    int
}

var _ bus.Bus = (*Bus)(nil)

// New makes a bus whose subscriptions queue at most queueLimit events (0: the default).
func New(queueLimit int) *Bus {
	return &Bus{topics: map[topicKey]map[*bus.Queue]struct{}{}, controls: map[chan bus.Control]struct{}{}, limit: queueLimit}
}

// Publish hands ev to each subscriber's queue without blocking.
func (b *Bus) Publish(_ context.Context, ev event.Event) error {
	key := topicKey{ev.Tenant, ev.Thread}
	var ended []*bus.Queue
	b.mu.RLock()
	if b.closed {
		b.mu.RUnlock()
		return bus.ErrClosed
	}
	for q := range b.topics[key] {
		if !q.Push(ev) {
			ended = append(ended, q)
		}
	}
	b.mu.RUnlock()
	for _, q := range ended {
		b.remove(key, q)
	}
	return nil
}

// Subscribe follows a thread from now on; after is ignored since nothing is retained.
func (b *Bus) Subscribe(ctx context.Context, tenant, thread string, _ int64) (*bus.Queue, error) {
	key := topicKey{tenant, thread}
	var q *bus.Queue
	q = bus.NewQueue(b.limit, func() { b.remove(key, q) })
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, bus.ErrClosed
	}
	subs := b.topics[key]
	if subs == nil {
		subs = map[*bus.Queue]struct{}{}
		b.topics[key] = subs
	}
	subs[q] = struct{}{}
	b.mu.Unlock()
	context.AfterFunc(ctx, func() { q.Stop(ctx.Err()) })
	return q, nil
}

func (b *Bus) remove(key topicKey, q *bus.Queue) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if subs := b.topics[key]; subs != nil {
		delete(subs, q)
		if len(subs) == 0 {
			delete(b.topics, key)
		}
	}
}

// Retained returns nothing: the in-process bus holds no events.
func (b *Bus) Retained(context.Context, string, string, int64) ([]event.Event, error) {
	if b.isClosed() {
		return nil, bus.ErrClosed
	}
	return nil, nil
}

func (b *Bus) isClosed() bool {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.closed
}

// PublishControl delivers c to every Controls stream of this process.
func (b *Bus) PublishControl(ctx context.Context, c bus.Control) error {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed {
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
	if b.closed {
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
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	var queues []*bus.Queue
	for _, subs := range b.topics {
		for q := range subs {
			queues = append(queues, q)
		}
	}
	for ch := range b.controls {
		delete(b.controls, ch)
		close(ch)
	}
	b.mu.Unlock()
	for _, q := range queues {
		q.Stop(bus.ErrClosed)
	}
	return nil
}
