package run

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentchat/agentchat/internal/engine"
	"github.com/agentchat/agentchat/internal/store"
)

// Liveness and fencing.
//
// Liveness costs one write per replica per period, whatever the number of
// runs: the replica registers a term (its id and a new epoch) and one
// goroutine renews it every LeaseTTL/3. A run names the term that executes
// it. Another replica takes a run over only once that term is over: ended (a
// newer epoch) or lapsed (not renewed before its end, by the taker's clock).
//
// So that two replicas never act for one run at once, a term stops acting by
// its own clock a margin (LeaseTTL/4) before the end it last renewed: from
// then on its executions emit nothing, their unwritten events are dropped
// from the log queue, and they record no outcome. The replica then registers
// a new term for new work. This holds while the replicas' clocks differ by
// less than the margin and no single write stays in flight longer than it.
//
// A replica that owns the store alone (Config.Sole: the embedded SQLite
// file) writes no heartbeat and is never fenced: nobody else could take its
// runs. At start it ends, or leaves waiting, the runs a previous process
// left active.

// errLeaseLost is the cause of an execution's context when its term is fenced.
var errLeaseLost = errors.New("lease lost: another replica ends this run")

// soleUntil is a sole replica's term end: it lasts as long as the process,
// and the next process's registration ends it.
var soleUntil = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// term is one epoch of this replica's liveness. Executions started in it act
// for their runs while it lasts.
type term struct {
	s     *Service
	epoch int64
	sole  bool
	stop  chan struct{} // closed when fenced
	once  sync.Once
	// ctx ends when the term is fenced, or Shutdown gives up on the store:
	// store calls of its executions give up.
	ctx    context.Context
	cancel context.CancelFunc
	execs  *spread // ctx's children, which executions hang from (spread.go)

	mu       sync.Mutex
	actUntil time.Time // this process's clock; past it the term is fenced (not when sole)
}

func (s *Service) newTerm(epoch int64, start time.Time) *term {
	t := &term{s: s, epoch: epoch, sole: s.cfg.Sole, stop: make(chan struct{})}
	t.ctx, t.cancel = context.WithCancel(s.halt) // outlives Shutdown's cancel, not its giving up
	t.execs = newSpread(t.ctx)
	t.extend(start)
	return t
}

// margin is how long before its stored end a term stops acting.
func (s *Service) margin() time.Duration { return s.cfg.LeaseTTL / 4 }

// extend records a renewal that was asked for at start.
func (t *term) extend(start time.Time) {
	t.mu.Lock()
	t.actUntil = start.Add(t.s.cfg.LeaseTTL - t.s.margin())
	t.mu.Unlock()
}

// until is when the term stops acting by this process's clock.
func (t *term) until() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.actUntil
}

// fenced reports whether the term may no longer act, fencing it when its
// time ran out unrenewed.
func (t *term) fenced() bool {
	if t.stopped() {
		return true
	}
	if t.sole {
		return false
	}
	t.mu.Lock()
	over := time.Now().After(t.actUntil)
	t.mu.Unlock()
	if over {
		t.fence("its heartbeat could not be renewed in time")
	}
	return over
}

func (t *term) stopped() bool {
	select {
	case <-t.stop:
		return true
	default:
		return false
	}
}

// fence stops every execution of the term, once.
func (t *term) fence(why string) {
	t.once.Do(func() {
		close(t.stop)
		t.cancel()
		t.s.log.Error("stopped executing this replica's runs: other replicas end them", "epoch", t.epoch, "reason", why)
		t.s.evlog.poke()
	})
}

// liveness holds this replica's current term.
type liveness struct {
	mu    sync.Mutex
	cur   *term
	ready chan struct{} // closed when the first term began
	next  chan struct{} // closed when a term after cur begins
	// recovered is closed when the runs a previous process left were
	// ended (sole), or with ready (otherwise).
	recovered chan struct{}
}

// Ready waits until the service can run work: its first term began and, on
// a store it owns alone, the runs a previous process left executing were
// ended. A server listens only then, so no client sees those runs still
// "running" after a restart.
func (s *Service) Ready(ctx context.Context) error {
	select {
	case <-s.live.recovered:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: the store did not answer while the server started", store.ErrUnavailable)
	}
}

// notReadyWait bounds how long a request waits for the first term.
const notReadyWait = 2 * time.Second

// term returns the current term, waiting for the first one, and, while the
// current one is fenced (a heartbeat came too late, the store was away),
// for its successor: a request in that gap, right after the store came
// back, waits a moment rather than fail. With no term in notReadyWait the
// store is taken to be away.
func (s *Service) term(ctx context.Context) (*term, error) {
	wait := time.NewTimer(notReadyWait)
	defer wait.Stop()
	unavailable := fmt.Errorf("%w: this replica holds no term with the store yet", store.ErrUnavailable)
	select {
	case <-s.live.ready:
	case <-wait.C:
		return nil, unavailable
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-s.ctx.Done():
		return nil, ErrShuttingDown
	}
	for {
		s.live.mu.Lock()
		t, next := s.live.cur, s.live.next
		s.live.mu.Unlock()
		if !t.fenced() {
			return t, nil
		}
		select {
		case <-next:
		case <-wait.C:
			return nil, unavailable
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-s.ctx.Done():
			return nil, ErrShuttingDown
		}
	}
}

// register begins a new term, retrying while the store is away.
func (s *Service) register() bool {
	backoff := 50 * time.Millisecond
	for {
		start := time.Now()
		until := start.Add(s.cfg.LeaseTTL)
		if s.cfg.Sole {
			until = soleUntil
		}
		ctx, cancel := context.WithTimeout(s.ctx, s.cfg.LeaseTTL)
		epoch, err := s.st.RegisterReplica(ctx, s.cfg.ReplicaID, until, s.cfg.Sole)
		// A registration that took long stored an end already close (other
		// replicas judge by it): renew at once, until a renewal is quick.
		for err == nil && !s.cfg.Sole && time.Since(start) > s.margin() && ctx.Err() == nil {
			start = time.Now()
			err = s.st.RenewReplica(ctx, s.cfg.ReplicaID, epoch, start, start.Add(s.cfg.LeaseTTL))
		}
		cancel()
		if err == nil {
			t := s.newTerm(epoch, start)
			s.live.mu.Lock()
			first := s.live.cur == nil
			s.live.cur = t
			close(s.live.next)
			s.live.next = make(chan struct{})
			s.live.mu.Unlock()
			if first {
				close(s.live.ready)
			}
			s.log.Info("replica term began", "replica_id", s.cfg.ReplicaID, "epoch", epoch)
			return true
		}
		s.log.Warn("registering this replica failed; retrying", "replica_id", s.cfg.ReplicaID, "err", err)
		select {
		case <-time.After(backoff):
		case <-s.ctx.Done():
			return false
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// livenessLoop registers this replica, then keeps its term alive (not when
// sole), begins a new term when one is fenced, and applies stored cancels
// whose messages this replica missed.
func (s *Service) livenessLoop() {
	defer s.wg.Done()
	if !s.register() {
		return
	}
	if s.cfg.Sole {
		s.recoverSole()
		close(s.live.recovered)
		return
	}
	close(s.live.recovered)
	period := s.cfg.LeaseTTL / 3
	retry := max(s.cfg.LeaseTTL/20, 50*time.Millisecond)
	timer := time.NewTimer(period)
	defer timer.Stop()
	failing := false
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-timer.C:
		}
		s.live.mu.Lock()
		t := s.live.cur
		s.live.mu.Unlock()
		if t.stopped() {
			// Fenced by its own clock (a renewal came too late): its
			// executions stopped, so a new term ends this one in the store
			// and the sweep, here or elsewhere, ends their runs.
			if !s.register() {
				return
			}
			failing = false
			timer.Reset(period)
			continue
		}
		start := time.Now()
		// A slow renewal that succeeds is worth waiting for up to the
		// moment the term would stop acting: a slow store slows runs, it
		// does not fail them.
		deadline := t.until()
		if t.fenced() {
			deadline = start.Add(period) // lapsed: the store's refusal begins a new term
		}
		ctx, cancel := context.WithDeadline(s.ctx, deadline)
		err := s.st.RenewReplica(ctx, s.cfg.ReplicaID, t.epoch, start, start.Add(s.cfg.LeaseTTL))
		cancel()
		switch {
		case errors.Is(err, store.ErrConflict):
			t.fence("its term ended: another replica may have taken its runs")
			if !s.register() {
				return
			}
			failing = false
			timer.Reset(period)
			continue
		case err != nil:
			if !failing {
				s.log.Warn("renewing this replica's heartbeat failed; retrying", "err", err)
				failing = true
			}
			// Once the term lapses, the next attempt that reaches the
			// store is refused and begins a new term.
			timer.Reset(retry)
			continue
		}
		failing = false
		t.extend(start)
		if t.stopped() {
			timer.Reset(0) // renewed too late: begin a new term at once
			continue
		}
		ctx, cancel = context.WithTimeout(s.ctx, period)
		cancels, err := s.st.CancelRequests(ctx, s.cfg.ReplicaID, t.epoch)
		cancel()
		if err != nil {
			s.log.Warn("reading stored cancel requests failed; retried at the next heartbeat", "err", err)
		}
		for _, id := range cancels {
			s.mu.Lock()
			x := s.executing[id]
			s.mu.Unlock()
			if x != nil && x.cancel != nil {
				x.cancel(engine.ErrCancelled)
			}
		}
		// Renewals are a period apart from start to start, however long
		// this one and the cancel read took.
		timer.Reset(max(0, period-time.Since(start)))
	}
}

// recoverSole ends, at start, the runs a previous process left executing:
// no other process uses the store, so no one else will. Runs it left
// waiting for a person stay waiting.
func (s *Service) recoverSole() {
	for {
		orphans, err := s.st.OrphanedRuns(s.ctx, time.Now(), 100)
		if err != nil {
			s.log.Error("list runs a previous process left; they are ended at the next start", "err", err)
			return
		}
		if len(orphans) == 0 {
			return
		}
		for _, r := range orphans {
			t, ok := s.takeOver(r)
			if !ok {
				return
			}
			s.endTakenOver(t, r)
		}
	}
}
