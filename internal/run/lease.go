package run

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentchat/agentchat/internal/bus"
	"github.com/agentchat/agentchat/internal/engine"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/store"
)

// Leases and fencing.
//
// A replica executes a run only while it holds the run's lease, renewed every
// LeaseTTL/3. Another replica takes the run over once the stored lease end
// has passed by its own clock (plus up to one SweepInterval). So that the two
// never act for the run at once, an executor stops acting by its own clock a
// margin (LeaseTTL/4) before the lease it last renewed ends: from then on it
// emits nothing, its unwritten events are dropped from the log queue, and it
// records no outcome. This holds as long as the replicas' clocks differ by
// less than the margin, and no single write stays in flight longer than it.
//
// A renewal that fails (the store unreachable from this replica) is retried
// quickly; a renewal refused (the lease is another replica's) fences at once.

// errLeaseLost is the cause of an execution's context when it is fenced.
var errLeaseLost = errors.New("lease lost: another replica ends this run")

// lease is an execution's right to act for its run.
type lease struct {
	s         *Service
	mu        sync.Mutex
	actUntil  time.Time // this process's clock; past it, the execution is fenced
	fenceOnce sync.Once
	stop      chan struct{} // closed when fenced
	// recording is set when the execution records its outcome: a renewal
	// refused from then on means the run ended or paused (and maybe was
	// claimed since), not that another replica took it.
	recording atomic.Bool
	ctx       context.Context
	cancel    context.CancelFunc // ends ctx: store calls give up when fenced
}

// margin is how long before the stored lease end an executor stops acting.
func (s *Service) margin() time.Duration { return s.cfg.LeaseTTL / 4 }

func (l *lease) init(s *Service, r store.Run) {
	l.s = s
	l.stop = make(chan struct{})
	l.ctx, l.cancel = context.WithCancel(context.WithoutCancel(s.ctx))
	until := r.LeaseUntil
	if until.IsZero() {
		until = time.Now().Add(s.cfg.LeaseTTL)
	}
	l.actUntil = until.Add(-s.margin())
}

// extend records a renewal that was asked for at start.
func (l *lease) extend(start time.Time) {
	l.mu.Lock()
	l.actUntil = start.Add(l.s.cfg.LeaseTTL - l.s.margin())
	l.mu.Unlock()
}

// fenced reports whether the execution may no longer act for its run,
// fencing it when its lease ran out unrenewed.
func (x *execution) fenced() bool {
	select {
	case <-x.lease.stop:
		return true
	default:
	}
	x.lease.mu.Lock()
	over := time.Now().After(x.lease.actUntil)
	x.lease.mu.Unlock()
	if over {
		x.fence("its lease could not be renewed in time")
	}
	return over
}

func (x *execution) stopped() bool {
	select {
	case <-x.lease.stop:
		return true
	default:
		return false
	}
}

// fence stops the execution acting for its run, once.
func (x *execution) fence(why string) {
	x.lease.fenceOnce.Do(func() {
		close(x.lease.stop)
		x.lease.cancel()
		x.s.log.Error("stopped executing a run: another replica will end it", "run_id", x.run.ID, "conversation_id", x.run.ConversationID, "reason", why)
		if x.cancel != nil {
			x.cancel(errLeaseLost)
		}
		x.s.evlog.poke()
	})
}

// store runs op until it succeeds, retrying while the store is unavailable,
// unless the execution is fenced meanwhile (then it reports false: the
// outcome is not this process's to record). Other errors are logged and
// taken as done: retrying them would not help.
func (x *execution) store(what string, op func(context.Context) error) bool {
	backoff := 50 * time.Millisecond
	for {
		if x.fenced() {
			return false
		}
		err := op(x.lease.ctx)
		switch {
		case err == nil:
			return true
		case errors.Is(err, store.ErrUnavailable):
		case x.fenced():
			return false
		default:
			x.s.log.Error(what, "run_id", x.run.ID, "err", err)
			return true
		}
		select {
		case <-time.After(backoff):
		case <-x.lease.stop:
			return false
		}
		backoff = min(2*backoff, time.Second)
	}
}

// renewLease keeps the run's lease until stop is called, so other replicas
// know its executor is alive, and applies a cancel that was stored but whose
// message this replica missed.
func (s *Service) renewLease(x *execution) (stop func()) {
	period := s.cfg.LeaseTTL / 3
	retry := max(s.cfg.LeaseTTL/20, 50*time.Millisecond)
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTimer(period)
		defer t.Stop()
		failing := false
		for {
			select {
			case <-quit:
				return
			case <-x.lease.stop:
				return
			case <-t.C:
			}
			start := time.Now()
			ctx, cancel := context.WithTimeout(x.lease.ctx, period)
			ok, err := s.st.AcquireLease(ctx, x.run.Tenant, x.run.ID, s.cfg.ReplicaID, start.Add(s.cfg.LeaseTTL))
			var r store.Run
			if err == nil && ok {
				r, err = s.st.GetRunAnyOwner(ctx, x.run.Tenant, x.run.ID)
			}
			cancel()
			switch {
			case err == nil && !ok:
				if !x.lease.recording.Load() {
					x.fence("its lease is another replica's")
				}
				return
			case err != nil:
				if !failing {
					s.log.Warn("renewing a run's lease failed; retrying", "run_id", x.run.ID, "err", err)
					failing = true
				}
				if x.fenced() {
					return
				}
				t.Reset(retry)
				continue
			}
			failing = false
			x.lease.extend(start)
			if r.CancelRequested && x.cancel != nil {
				x.cancel(engine.ErrCancelled)
			}
			t.Reset(period)
		}
	}()
	return func() {
		close(quit)
		<-done
		x.lease.cancel()
	}
}

// publisher hands events to the bus. While the bus fails, it pauses
// publishing briefly instead of making every event of every run wait out the
// client's retries; subscribers fill what they missed from the log when the
// next event reaches them. A run's final event, which has no next event to
// reveal it, is retried until the bus takes it.
type publisher struct {
	bus       bus.Bus
	s         *Service
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
	ctx, cancel := context.WithTimeout(ctx, publishTimeout)
	err := p.bus.Publish(ctx, ev)
	cancel()
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
