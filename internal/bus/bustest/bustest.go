// Package bustest is the contract every bus.Bus backend must pass.
package bustest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/bus"
	"github.com/agentchat/agentchat/internal/event"
)

// Run runs the contract against buses made by newBus; each call returns an
// independent bus (its own key prefix), and a second call within one test
// must return a bus sharing the first one's backend (another replica).
func Run(t *testing.T, newBus func(t *testing.T) bus.Bus) {
	tests := []struct {
		name string
		fn   func(*testing.T, func(*testing.T) bus.Bus)
	}{
		{"OrderedDelivery", testOrdered},
		{"IsolatedByTenantAndThread", testIsolation},
		{"ManySubscribers", testManySubscribers},
		{"SlowConsumerIsEnded", testSlowConsumer},
		{"UnsubscribeOnContext", testUnsubscribe},
		{"Controls", testControls},
		{"Close", testClose},
		{"ClosedBusRefuses", testClosedRefuses},
		{"ControlsEnd", testControlsEnd},
		{"ThreadsPublishedConcurrently", testConcurrentThreads},
		{"Retained", testRetained},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, newBus)
		})
	}
}

func ev(tenant, thread string, seq int64) event.Event {
	return event.Event{Tenant: tenant, Thread: thread, Run: "run", Seq: seq, Time: time.UnixMilli(1700000000000).UTC(),
		Type: event.TextDelta, Payload: event.TextDeltaData{MessageID: "m", Delta: fmt.Sprintf("t%d", seq)}}
}

// Collect reads n events (skipping any with seq <= after, which a bus may
// redeliver) or fails after a generous bound.
func Collect(t *testing.T, q *bus.Queue, after int64, n int) []event.Event {
	t.Helper()
	var out []event.Event
	timeout := time.After(10 * time.Second)
	for len(out) < n {
		select {
		case <-q.Ready():
		case <-timeout:
			t.Fatalf("got %d of %d events", len(out), n)
		}
		got, err := q.Drain(nil)
		for _, e := range got {
			if e.Seq > after {
				out = append(out, e)
				after = e.Seq
			}
		}
		if err != nil && len(out) < n {
			t.Fatalf("subscription ended after %d of %d events: %v", len(out), n, err)
		}
	}
	return out
}

func publish(t *testing.T, b bus.Bus, evs ...event.Event) {
	t.Helper()
	for _, e := range evs {
		if err := b.Publish(t.Context(), e); err != nil {
			t.Fatal(err)
		}
	}
}

// retainedSuffix fails unless got is what Retained may return after
// `after` from a thread whose events 1..published were published as
// delta(seq): a suffix without holes, ending at or after last (when not
// empty).
func retainedSuffix(t *testing.T, got []event.Event, after, last, published int64) {
	t.Helper()
	for i, e := range got {
		if e.Tenant != "acme" || e.Thread != "kept" || e.Seq <= after || e.Seq > published || e.Payload.(event.TextDeltaData).Delta != fmt.Sprintf("t%d", e.Seq) {
			t.Fatalf("after %d: event %d = %+v", after, i, e)
		}
		if i > 0 && e.Seq != got[i-1].Seq+1 {
			t.Fatalf("after %d: seq %d follows %d", after, e.Seq, got[i-1].Seq)
		}
	}
	if len(got) > 0 && got[len(got)-1].Seq < last {
		t.Fatalf("after %d: ends at %d, before %d", after, got[len(got)-1].Seq, last)
	}
}

func testRetained(t *testing.T, newBus func(*testing.T) bus.Bus) {
	pub := newBus(t)
	other := newBus(t) // what a replica taking over reads
	if got, err := other.Retained(t.Context(), "acme", "kept", 0); err != nil || len(got) != 0 {
		t.Fatalf("empty thread: %v (%v)", got, err)
	}
	// Before a run's end, the bus may hold any part of what was published:
	// a suffix of a prefix, without holes.
	for i := int64(1); i <= 10; i++ {
		publish(t, pub, ev("acme", "kept", i))
	}
	got, err := other.Retained(t.Context(), "acme", "kept", 0)
	if err != nil {
		t.Fatal(err)
	}
	retainedSuffix(t, got, 0, 0, 10)
	// A run's end is held, with all before it, once its publish returns.
	for i := int64(11); i <= 19; i++ {
		publish(t, pub, ev("acme", "kept", i))
	}
	end := ev("acme", "kept", 20)
	end.Type, end.Payload = event.RunFinished, event.RunFinishedData{Status: "succeeded"}
	publish(t, pub, end, ev("evil", "kept", 21), ev("acme", "other", 22))
	for _, after := range []int64{0, 5, 19, 20, 30} {
		got, err := other.Retained(t.Context(), "acme", "kept", after)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(got); n > 0 && got[n-1].Seq == 20 {
			if got[n-1].Type != event.RunFinished {
				t.Fatalf("after %d: the end is %+v", after, got[n-1])
			}
			got = got[:n-1]
		} else if n > 0 {
			t.Fatalf("after %d: ends at %d, not the run's end", after, got[n-1].Seq)
		}
		retainedSuffix(t, got, after, 0, 19)
		if len(got) > 0 && got[len(got)-1].Seq != 19 {
			t.Fatalf("after %d: a hole before the end", after)
		}
	}
	pub.Close()
	if _, err := pub.Retained(t.Context(), "acme", "kept", 0); !errors.Is(err, bus.ErrClosed) {
		t.Fatalf("closed bus: %v", err)
	}
}

func testOrdered(t *testing.T, newBus func(*testing.T) bus.Bus) {
	b := newBus(t)
	q, err := b.Subscribe(t.Context(), "acme", "th", 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := int64(1); i <= 200; i++ {
		publish(t, b, ev("acme", "th", i))
	}
	got := Collect(t, q, 0, 200)
	for i, e := range got {
		if e.Seq != int64(i+1) || e.Payload.(event.TextDeltaData).Delta != fmt.Sprintf("t%d", i+1) || e.Tenant != "acme" || e.Thread != "th" {
			t.Fatalf("event %d = %+v", i, e)
		}
	}
}

func testIsolation(t *testing.T, newBus func(*testing.T) bus.Bus) {
	b := newBus(t)
	q, err := b.Subscribe(t.Context(), "acme", "th", 0)
	if err != nil {
		t.Fatal(err)
	}
	publish(t, b, ev("evil", "th", 1), ev("acme", "other", 1), ev("acme", "th", 1))
	got := Collect(t, q, 0, 1)
	if got[0].Tenant != "acme" || got[0].Thread != "th" {
		t.Fatalf("received another topic's event %+v", got[0])
	}
	publish(t, b, ev("acme", "th", 2))
	if got := Collect(t, q, 1, 1); got[0].Seq != 2 || got[0].Tenant != "acme" || got[0].Thread != "th" {
		t.Fatalf("received %+v", got[0])
	}
}

func testManySubscribers(t *testing.T, newBus func(*testing.T) bus.Bus) {
	pub := newBus(t)
	other := newBus(t) // a second replica on the same backend
	var qs []*bus.Queue
	for i := range 10 {
		b := pub
		if i%2 == 1 {
			b = other
		}
		q, err := b.Subscribe(t.Context(), "acme", "th", 0)
		if err != nil {
			t.Fatal(err)
		}
		qs = append(qs, q)
	}
	for i := int64(1); i <= 50; i++ {
		publish(t, pub, ev("acme", "th", i))
	}
	var wg sync.WaitGroup
	for _, q := range qs {
		wg.Go(func() {
			got := Collect(t, q, 0, 50)
			if got[49].Seq != 50 {
				t.Errorf("last = %d", got[49].Seq)
			}
		})
	}
	wg.Wait()
}

func testSlowConsumer(t *testing.T, newBus func(*testing.T) bus.Bus) {
	b := newBus(t)
	q, err := b.Subscribe(t.Context(), "acme", "slow", 0)
	if err != nil {
		t.Fatal(err)
	}
	fast, err := b.Subscribe(t.Context(), "acme", "slow", 0)
	if err != nil {
		t.Fatal(err)
	}
	// The fast subscriber drains every chunk before the next is published:
	// collected concurrently, it overflowed too on a loaded machine (and
	// Collect's Fatalf, off the test's goroutine, left the test hanging).
	n := int64(bus.DefaultQueueLimit + 100)
	const chunk = 500
	for from := int64(1); from <= n; from += chunk {
		to := min(from+chunk-1, n)
		for i := from; i <= to; i++ {
			publish(t, b, ev("acme", "slow", i)) // never blocks on the stalled subscriber
		}
		if got := Collect(t, fast, from-1, int(to-from+1)); got[len(got)-1].Seq != to {
			t.Fatalf("fast subscriber at %d, want %d", got[len(got)-1].Seq, to)
		}
	}
	// The stalled one is ended: it drains what it had, then learns why.
	deadline := time.After(10 * time.Second)
	for {
		select {
		case <-q.Ready():
		case <-deadline:
			t.Fatal("slow subscriber never ended")
		}
		_, err := q.Drain(nil)
		if err != nil {
			if !errors.Is(err, bus.ErrSlowConsumer) {
				t.Fatalf("slow subscriber ended with %v", err)
			}
			return
		}
	}
}

func testUnsubscribe(t *testing.T, newBus func(*testing.T) bus.Bus) {
	b := newBus(t)
	ctx, cancel := context.WithCancel(t.Context())
	q, err := b.Subscribe(ctx, "acme", "th", 0)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case <-q.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("cancelled subscription not ended")
	}
	for {
		if _, err := q.Drain(nil); err != nil {
			break
		}
		<-q.Ready()
	}
	publish(t, b, ev("acme", "th", 1)) // must not panic or block
}

func testControls(t *testing.T, newBus func(*testing.T) bus.Bus) {
	a, b := newBus(t), newBus(t)
	ca, err := a.Controls(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	cb, err := b.Controls(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// A run's cancel, and an agent's change that every replica's cache hears.
	for _, want := range []bus.Control{{Kind: bus.ControlCancel, Tenant: "acme", RunID: "r1"}, {Kind: bus.ControlAgent, Tenant: "acme", AgentID: "a1"}} {
		if err := a.PublishControl(t.Context(), want); err != nil {
			t.Fatal(err)
		}
		for _, ch := range []<-chan bus.Control{ca, cb} {
			select {
			case got := <-ch:
				if got != want {
					t.Fatalf("control %+v, want %+v", got, want)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("control not delivered to every replica")
			}
		}
	}
}

func testClose(t *testing.T, newBus func(*testing.T) bus.Bus) {
	b := newBus(t)
	q, err := b.Subscribe(t.Context(), "acme", "th", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-q.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("close did not end the subscription")
	}
	if _, err := q.Drain(nil); !errors.Is(err, bus.ErrClosed) {
		t.Fatalf("after close: %v", err)
	}
}

func testClosedRefuses(t *testing.T, newBus func(*testing.T) bus.Bus) {
	b := newBus(t)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if err := b.Publish(t.Context(), ev("acme", "th", 1)); !errors.Is(err, bus.ErrClosed) {
		t.Fatalf("publish after close: %v", err)
	}
	if _, err := b.Subscribe(t.Context(), "acme", "th", 0); !errors.Is(err, bus.ErrClosed) {
		t.Fatalf("subscribe after close: %v", err)
	}
	if err := b.PublishControl(t.Context(), bus.Control{Kind: bus.ControlCancel}); !errors.Is(err, bus.ErrClosed) {
		t.Fatalf("publish control after close: %v", err)
	}
	if _, err := b.Controls(t.Context()); !errors.Is(err, bus.ErrClosed) {
		t.Fatalf("controls after close: %v", err)
	}
}

// waitClosed fails unless ch is closed soon (after any messages still in it).
func waitClosed(t *testing.T, ch <-chan bus.Control, why string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-timeout:
			t.Fatalf("control stream not closed after %s", why)
		}
	}
}

func testControlsEnd(t *testing.T, newBus func(*testing.T) bus.Bus) {
	b := newBus(t)
	ctx, cancel := context.WithCancel(t.Context())
	byCtx, err := b.Controls(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byClose, err := b.Controls(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	waitClosed(t, byCtx, "its context ended")
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, byClose, "the bus closed")
}

func testConcurrentThreads(t *testing.T, newBus func(*testing.T) bus.Bus) {
	pub, sub := newBus(t), newBus(t)
	const threads, n = 8, 100
	qs := make([]*bus.Queue, threads)
	for i := range qs {
		q, err := sub.Subscribe(t.Context(), "acme", fmt.Sprint("th", i), 0)
		if err != nil {
			t.Fatal(err)
		}
		qs[i] = q
	}
	var wg sync.WaitGroup
	for i := range threads {
		wg.Go(func() {
			for seq := int64(1); seq <= n; seq++ {
				if err := pub.Publish(t.Context(), ev("acme", fmt.Sprint("th", i), seq)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for i, q := range qs {
		wg.Go(func() {
			for j, e := range Collect(t, q, 0, n) {
				if e.Thread != fmt.Sprint("th", i) || e.Seq != int64(j+1) {
					t.Errorf("thread %d event %d = %s/%d", i, j, e.Thread, e.Seq)
					return
				}
			}
		})
	}
	wg.Wait()
}
