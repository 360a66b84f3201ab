package bus_test

import (
	"testing"

	"github.com/agentchat/agentchat/internal/bus"
	"github.com/agentchat/agentchat/internal/event"
)

// Notify runs with each signal of Ready, from Push and from Stop, and the
// signal is still on Ready for the consumer it woke.
func TestQueueNotify(t *testing.T) {
	q := bus.NewQueue(2, nil)
	woken := 0
	q.Notify(func() { woken++ })
	q.Push(event.Event{Seq: 1})
	if woken != 1 {
		t.Fatalf("woken %d times by a push", woken)
	}
	select {
	case <-q.Ready():
	default:
		t.Fatal("Ready not signalled with Notify")
	}
	q.Stop(nil)
	if woken != 2 {
		t.Fatalf("woken %d times after Stop", woken)
	}
	evs, err := q.Drain(nil)
	if len(evs) != 1 || err != nil {
		t.Fatalf("drained %v, %v", evs, err)
	}
}
