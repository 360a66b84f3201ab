package telemetry

import (
	"context"
	"errors"
	"time"

	"github.com/agentchat/agentchat/internal/bus"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/store"
)

// Store wraps st so that event-log commits (AppendEvents) are measured:
// batch size, latency, failures. Every other method passes through.
func (t *Telemetry) Store(st store.Store) store.Store {
	if t == nil {
		return st
	}
	return &observedStore{Store: st, t: t}
}

type observedStore struct {
	store.Store
	t *Telemetry
}

func (s *observedStore) AppendEvents(ctx context.Context, evs []event.Event) error {
	start := time.Now()
	err := s.Store.AppendEvents(ctx, evs)
	s.t.m.logCommit.Observe(time.Since(start).Seconds())
	s.t.m.logBatch.Observe(float64(len(evs)))
	if err != nil {
		s.t.m.logErrors.Inc()
	}
	return err
}

// Bus wraps b so that failed publishes are counted. Every other method
// passes through.
func (t *Telemetry) Bus(b bus.Bus) bus.Bus {
	if t == nil {
		return b
	}
	return &observedBus{Bus: b, t: t}
}

type observedBus struct {
	bus.Bus
	t *Telemetry
}

func (b *observedBus) Publish(ctx context.Context, ev event.Event) error {
	err := b.Bus.Publish(ctx, ev)
	if err != nil && !errors.Is(err, bus.ErrClosed) {
		b.t.m.publishError.Inc()
	}
	return err
}

// Lossless passes through what the wrapped bus says (bus.Lossless): counting
// failures loses nothing, and hiding it would make every stream on the
// in-process bus poll the log.
func (b *observedBus) Lossless() bool { return bus.Lossless(b.Bus) }

// Ping passes a health check through to the wrapped bus.
func (b *observedBus) Ping(ctx context.Context) error { return PingBus(ctx, b.Bus) }
