package run_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/engine"
	"github.com/agentchat/agentchat/internal/run"
	"github.com/agentchat/agentchat/internal/store"
)

// With MaxExecutions runs executing, a new run is refused with
// ErrOverloaded before anything is stored; once one ends, the next starts.
func TestStartBeyondMaxExecutionsIsOverloaded(t *testing.T) {
	t.Parallel()
	st, b := openStore(t), newRetainingBus(t)
	release := make(chan struct{})
	running := make(chan struct{}, 2)
	eng := engineFunc(func(ctx context.Context, t engine.Task, h engine.Host) engine.Outcome {
		running <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return engine.Outcome{Status: engine.StatusSucceeded}
	})
	s := run.New(run.Config{Store: st, Bus: b, Engine: eng, ReplicaID: "r", LeaseTTL: leaseTTL, SweepInterval: 20 * time.Millisecond, MaxExecutions: 2})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		s.Shutdown(ctx)
	})
	ctx := context.Background()
	var first chat.Run
	for i := range 2 {
		started, err := s.Start(ctx, alice, run.StartRequest{Input: "hold"}, false)
		if err != nil {
			t.Fatalf("start %d: %v", i, err)
		}
		if i == 0 {
			first = started.Run
		}
		<-running
	}
	before, _, err := st.ListConversations(ctx, alice, store.ConversationFilter{}, store.Page{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Start(ctx, alice, run.StartRequest{Input: "one too many"}, false); !errors.Is(err, run.ErrOverloaded) {
		t.Fatalf("third start: %v, want ErrOverloaded", err)
	}
	after, _, err := st.ListConversations(ctx, alice, store.ConversationFilter{}, store.Page{Limit: 10})
	if err != nil || len(after) != len(before) {
		t.Fatalf("the refused start stored a conversation: %d before, %d after (%v)", len(before), len(after), err)
	}
	release <- struct{}{} // one ends
	waitRun(t, st, first.ID, ended)
	var started run.Started
	// The place is given back as the execution returns, just after the
	// run's row says it ended: poll (bounded) as waitRun does.
	for range 1000 {
		started, err = s.Start(ctx, alice, run.StartRequest{Input: "now there is room"}, false)
		if !errors.Is(err, run.ErrOverloaded) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("start after one ended: %v", err)
	}
	<-running
	close(release)
	waitRun(t, st, started.Run.ID, ended)
}
