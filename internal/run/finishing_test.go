package run_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/bus/membus"
	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/run"
	"github.com/agentchat/agentchat/internal/store"
)

// endHolding is a store that holds the update recording a run's end until
// released, so a test can act in the moment between the run's end reaching
// the log and its row saying so.
type endHolding struct {
	store.Store
	held     chan struct{} // closed when the end's update is waiting
	release  chan struct{}
	starting chan struct{} // receives a value on each StartRun
}

func (s *endHolding) UpdateRun(ctx context.Context, tenant, id string, u store.RunUpdate) (chat.Run, error) {
	if !chat.Active(u.Status) && u.Status != "" {
		select {
		case <-s.held:
		default:
			close(s.held)
		}
		<-s.release
	}
	return s.Store.UpdateRun(ctx, tenant, id, u)
}

func (s *endHolding) StartRun(ctx context.Context, sc chat.Scope, in *store.RunStart) (store.RunStarted, error) {
	select {
	case s.starting <- struct{}{}:
	default:
	}
	return s.Store.StartRun(ctx, sc, in)
}

// A client that read a run's end from the log may start the next run in
// its conversation at once: the start waits for the finishing run's row
// rather than answer that the conversation is busy.
func TestStartAfterAnEndInTheLog(t *testing.T) {
	t.Parallel()
	st := &endHolding{Store: openStore(t), held: make(chan struct{}), release: make(chan struct{}), starting: make(chan struct{}, 1)}
	b := membus.New(0)
	t.Cleanup(func() { b.Close() })
	s := run.New(run.Config{Store: st, Bus: b, Engine: streaming(2), Sole: true})
	t.Cleanup(func() { s.Shutdown(context.Background()) })

	first, err := s.Start(t.Context(), alice, run.StartRequest{Input: "one"}, false)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-st.held: // the end is in the log; the row still says running
	case <-time.After(time.Minute):
		t.Fatal("the run never recorded its end")
	}
	<-st.starting // the first start's own StartRun
	done := make(chan error, 1)
	go func() {
		_, err := s.Start(context.Background(), alice, run.StartRequest{ConversationID: first.Conversation.ID, Input: "two"}, false)
		done <- err
	}()
	<-st.starting // the second start found the conversation busy, or is about to
	close(st.release)
	if err := <-done; err != nil {
		t.Fatalf("start after the end was logged: %v", err)
	}
}
