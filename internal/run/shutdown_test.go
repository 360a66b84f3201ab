package run_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentchat/agentchat/internal/bus/membus"
	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/run"
	"github.com/agentchat/agentchat/internal/store"
)

// gatedStore holds the first StartRun at its door until released (or its
// context ends), and counts the calls made after the test declared the
// store closed, as serve closes it once Shutdown returns.
type gatedStore struct {
	store.Store
	entered    chan struct{} // closed when the first StartRun arrives
	release    chan struct{} // closed by open to let it in
	once       sync.Once
	opened     sync.Once
	closed     atomic.Bool
	misused    atomic.Int32
	lastMisuse atomic.Value // the method of the last call after close
}

func newGatedStore(t *testing.T) *gatedStore {
	g := &gatedStore{Store: openStore(t), entered: make(chan struct{}), release: make(chan struct{})}
	t.Cleanup(g.open) // a failed test leaves no start waiting
	return g
}

func (g *gatedStore) open() { g.opened.Do(func() { close(g.release) }) }

func (g *gatedStore) use(method string) {
	if g.closed.Load() {
		g.misused.Add(1)
		g.lastMisuse.Store(method)
	}
}

func (g *gatedStore) StartRun(ctx context.Context, sc chat.Scope, in *store.RunStart) (store.RunStarted, error) {
	first := false
	g.once.Do(func() { first = true })
	if first {
		close(g.entered)
		select {
		case <-g.release:
		case <-ctx.Done():
			return store.RunStarted{}, ctx.Err()
		}
	}
	g.use("StartRun")
	return g.Store.StartRun(ctx, sc, in)
}

func (g *gatedStore) AppendEvents(ctx context.Context, evs []event.Event) error {
	g.use("AppendEvents")
	return g.Store.AppendEvents(ctx, evs)
}

func (g *gatedStore) AppendMessage(ctx context.Context, sc chat.Scope, m chat.Message) (chat.Message, error) {
	g.use("AppendMessage")
	return g.Store.AppendMessage(ctx, sc, m)
}

func (g *gatedStore) UpdateRun(ctx context.Context, tenant, id string, u store.RunUpdate) (chat.Run, error) {
	g.use("UpdateRun")
	return g.Store.UpdateRun(ctx, tenant, id, u)
}

func (g *gatedStore) ReserveSeqs(ctx context.Context, tenant, runID string, upTo int64) error {
	g.use("ReserveSeqs")
	return g.Store.ReserveSeqs(ctx, tenant, runID, upTo)
}

// checkClosedUnused fails if the store was used after it was declared closed.
func (g *gatedStore) checkClosedUnused(t *testing.T) {
	t.Helper()
	if n := g.misused.Load(); n > 0 {
		t.Fatalf("the store was used %d times after Shutdown returned (last: %v)", n, g.lastMisuse.Load())
	}
}

type startResult struct {
	started run.Started
	err     error
}

// startGated starts a run on s whose StartRun waits at g's door, and
// returns once it is there: admitted, inside StartRun.
func startGated(t *testing.T, s *run.Service, g *gatedStore) <-chan startResult {
	t.Helper()
	done := make(chan startResult, 1)
	go func() {
		started, err := s.Start(context.Background(), alice, run.StartRequest{Input: "go"}, false)
		done <- startResult{started, err}
	}()
	select {
	case <-g.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the start never reached StartRun")
	}
	return done
}

// gatedService is a sole replica's service over a gated store (closed
// until the test opens it), its engine streaming tokens tokens per answer.
func gatedService(t *testing.T, tokens int) (*gatedStore, *run.Service) {
	g := newGatedStore(t)
	b := membus.New(0)
	t.Cleanup(func() { b.Close() })
	s := run.New(run.Config{Store: g, Bus: b, Engine: streaming(tokens), Sole: true})
	ready(t, s)
	return g, s
}

// These tests run in a synctest bubble: synctest.Wait tells when every
// goroutine of the service is blocked, so "Shutdown is waiting" is a fact
// the test observes rather than a guess, and Shutdown's wind-down timer
// takes no real time.

// A start that passed admission and is inside StartRun when Shutdown
// begins is waited for: Shutdown does not return while it is there, its run
// executes and ends before Shutdown returns, and nothing touches the store
// after that.
func TestShutdownWaitsForAStartInsideStartRun(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		g, s := gatedService(t, 3)
		startDone := startGated(t, s, g)

		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		shutdownDone := make(chan error, 1)
		go func() { shutdownDone <- s.Shutdown(ctx) }()
		synctest.Wait() // Shutdown has returned, or waits for something
		select {
		case err := <-shutdownDone:
			t.Fatalf("Shutdown returned (%v) while a start it admitted was inside StartRun", err)
		default:
		}
		g.open()
		if err := <-shutdownDone; err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
		g.closed.Store(true)
		res := <-startDone
		if res.err != nil {
			t.Fatalf("the admitted start: %v", res.err)
		}
		got, err := g.Store.GetRun(context.Background(), alice, res.started.Run.ID)
		if err != nil || got.Status != chat.RunSucceeded {
			t.Fatalf("when Shutdown returned, the admitted start's run was %s (%v)", got.Status, err)
		}
		if _, err := s.Start(context.Background(), alice, run.StartRequest{Input: "late"}, false); !errors.Is(err, run.ErrShuttingDown) {
			t.Fatalf("a start after Shutdown: %v", err)
		}
		g.checkClosedUnused(t)
	})
}

// When Shutdown's context ends while a start is inside StartRun, Shutdown
// gives up waiting, returns the context's error, and the start launches
// nothing: the store, closed next, is never used again.
func TestShutdownGivingUpLaunchesNothing(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		g, s := gatedService(t, 3)
		startDone := startGated(t, s, g)

		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := s.Shutdown(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("Shutdown with its context ended: %v", err)
		}
		g.closed.Store(true)
		g.open() // the store answers now, too late
		if res := <-startDone; res.err == nil {
			t.Fatalf("a start admitted before Shutdown launched run %s after Shutdown returned", res.started.Run.ID)
		}
		synctest.Wait() // whatever the start might still do, it has done
		g.checkClosedUnused(t)
	})
}

// Runs still executing when Shutdown's context ends are ended failed
// (server_shutdown) before Shutdown returns the context's error.
func TestShutdownEndsWhatStillExecutes(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		g, s := gatedService(t, 1_000_000)
		g.open()
		started, err := s.Start(context.Background(), alice, run.StartRequest{Input: "go"}, false)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := s.Shutdown(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("Shutdown with a run executing: %v", err)
		}
		g.closed.Store(true)
		got, err := g.Store.GetRun(context.Background(), alice, started.Run.ID)
		if err != nil || got.Status != chat.RunFailed || got.Error == nil || got.Error.Code != "server_shutdown" {
			t.Fatalf("a run cut short by Shutdown: %s %+v (%v)", got.Status, got.Error, err)
		}
		synctest.Wait()
		g.checkClosedUnused(t)
	})
}

// Shutdown may be called more than once, also concurrently: every call
// returns once the service has stopped.
func TestShutdownIsIdempotent(t *testing.T) {
	t.Parallel()
	g, s := gatedService(t, 3)
	g.open()
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Go(func() { errs[i] = s.Shutdown(context.Background()) })
	}
	wg.Wait()
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatalf("a later Shutdown: %v", err)
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("concurrent Shutdown %d: %v", i, err)
		}
	}
}
