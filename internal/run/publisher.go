package run

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/agentchat/agentchat/internal/bus"
	"github.com/agentchat/agentchat/internal/event"
)

// publisher hands events to the bus. While the bus fails, it pauses
// publishing briefly instead of making every event of every run wait out the
// client's retries; subscribers fill what they missed from the log when the
// next event reaches them. A run's final event, which has no next event to
// reveal it, is retried until the bus takes it.
type publisher struct {
	bus bus.Bus
	s   *Service
	// bounded: each publish gets publishTimeout. Not on the embedded
	// default (Service.lossless), whose bus never waits, where every token
	// would pay for a timer.
	bounded   bool
	downUntil atomic.Int64 // unix nanos; publishing is skipped before it
	down      atomic.Bool  // an outage was logged
}

// pausePublishing is how long publishing rests after the bus failed.
const pausePublishing = 250 * time.Millisecond

func (p *publisher) publish(ctx context.Context, ev event.Event) {
	if time.Now().UnixNano() < p.downUntil.Load() {
		return
	}
	p.try(ctx, ev)
}

// publishTimeout bounds one publish: a client's own retries against a bus
// that is down would otherwise hold the run for seconds per event.
const publishTimeout = time.Second

func (p *publisher) try(ctx context.Context, ev event.Event) bool {
	var err error
	if p.bounded {
		// A run's cancellation must not cut its last events' publish short,
		// so the bound replaces ctx's cancellation. The unbounded bus never
		// waits, so ctx passes as it is: detaching it there cost an
		// allocation per token.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), publishTimeout)
		err = p.bus.Publish(ctx, ev)
		cancel()
	} else {
		err = p.bus.Publish(ctx, ev)
	}
	switch {
	case err == nil:
		if p.down.CompareAndSwap(true, false) {
			p.s.log.Info("bus available again; streams fill what they missed from the log")
		}
		return true
	case errors.Is(err, bus.ErrClosed):
		return true // shutting down
	}
	p.downUntil.Store(time.Now().Add(pausePublishing).UnixNano())
	if p.down.CompareAndSwap(false, true) {
		p.s.log.Error("bus unavailable: events are written to the log, streams catch up when it returns", "run_id", ev.Run, "seq", ev.Seq, "err", err)
	}
	return false
}

// publishEnd publishes a run's final event, retrying in the background until
// the bus takes it (or the service stops), so that no stream waits forever.
func (p *publisher) publishEnd(ev event.Event) {
	if p.try(context.WithoutCancel(p.s.ctx), ev) {
		return
	}
	p.s.wg.Add(1)
	go func() {
		defer p.s.wg.Done()
		backoff := 100 * time.Millisecond
		for {
			select {
			case <-time.After(backoff):
			case <-p.s.ctx.Done():
				return
			}
			if p.try(p.s.ctx, ev) {
				return
			}
			backoff = min(2*backoff, 2*time.Second)
		}
	}()
}
