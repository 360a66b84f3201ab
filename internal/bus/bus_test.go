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
	q.Notify(func(direct bool) {
		if direct {
			t.Error("a push woke its consumer direct")
		}
		woken++
	})
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

// Add signals Ready but leaves Notify's function to Wake, which runs it
// direct; an overflow is left to Wake too.
func TestQueueAddWake(t *testing.T) {
	q := bus.NewQueue(1, nil)
	var woken []bool
	q.Notify(func(direct bool) { woken = append(woken, direct) })
	if !q.Add(event.Event{Seq: 1}) || len(woken) != 0 {
		t.Fatalf("Add ran Notify's function: %v", woken)
	}
	select {
	case <-q.Ready():
	default:
		t.Fatal("Ready not signalled by Add")
	}
	q.Wake()
	if len(woken) != 1 || !woken[0] {
		t.Fatalf("Wake ran %v", woken)
	}
	if q.Add(event.Event{Seq: 2}) || len(woken) != 1 {
		t.Fatalf("an overflowing Add reported the queue open, or woke: %v", woken)
	}
	select {
	case <-q.Ready():
	default:
		t.Fatal("Ready not signalled by the overflow")
	}
	q.Wake()
	evs, _ := q.Drain(nil) // signals the end still to be told, not direct
	if _, err := q.Drain(nil); len(evs) != 1 || err != bus.ErrSlowConsumer || len(woken) != 3 || !woken[1] || woken[2] {
		t.Fatalf("drained %v, %v; woken %v", evs, err, woken)
	}
}
