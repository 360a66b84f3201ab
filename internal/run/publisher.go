package run

import (
	"context"
	"errors"
	"sync"
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
	// The clock is read only once the bus has failed: every token passes here.
	if until := p.downUntil.Load(); until != 0 && time.Now().UnixNano() < until {
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
		ctx := &boundedCtx{Context: ctx, deadline: time.Now().Add(publishTimeout)}
		err = p.bus.Publish(ctx, ev)
		ctx.stop()
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

// boundedCtx is a publish's context: its parent's values, not its
// cancellation, and a deadline whose timer starts only when the bus waits
// (calls Done). A bus that does not wait for most events (redisbus returns
// before its XADD) then costs no timer per token, where
// context.WithTimeout's was 2-3 % of a replica's CPU.
type boundedCtx struct {
	context.Context // for Value only
	deadline        time.Time

	mu    sync.Mutex
	done  chan struct{} // made by the first Done
	timer *time.Timer
	err   error
}

func (c *boundedCtx) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *boundedCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		c.timer = time.AfterFunc(time.Until(c.deadline), func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.err == nil {
				c.err = context.DeadlineExceeded
				close(c.done)
			}
		})
	}
	return c.done
}

func (c *boundedCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil && c.err == nil && !time.Now().Before(c.deadline) {
		return context.DeadlineExceeded // nobody waited on Done: no timer ran
	}
	return c.err
}

// stop releases the timer, if the bus started it.
func (c *boundedCtx) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.timer != nil {
		c.timer.Stop()
	}
}
