package run

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/bus/membus"
	"github.com/agentchat/agentchat/internal/event"
)

// BenchmarkPublishToken is the bus's share of the token path on the
// embedded default: an execution publishes a delta under its run's
// (cancellable) context, and the one stream watching the thread takes it.
func BenchmarkPublishToken(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	bs := membus.New(0)
	defer bs.Close()
	q, err := bs.Subscribe(ctx, "t", "c", 0)
	if err != nil {
		b.Fatal(err)
	}
	p := &publisher{bus: bs, bounded: false}
	ev := event.Event{Tenant: "t", Thread: "c", Type: event.TextDelta, Payload: event.TextDeltaData{MessageID: "m", Delta: " token"}}
	var buf []event.Event
	b.ReportAllocs()
	for b.Loop() {
		ev.Seq++
		p.publish(ctx, ev)
		if buf, err = q.Drain(buf[:0]); err != nil || len(buf) != 1 {
			b.Fatalf("drained %d events, %v", len(buf), err)
		}
	}
}

// A bounded publish's context keeps its parent's values, not its
// cancellation, and ends at its deadline once something waits on it.
func TestBoundedCtx(t *testing.T) {
	type key struct{}
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
	cancel()
	ctx := &boundedCtx{Context: parent, deadline: time.Now().Add(time.Hour)}
	if ctx.Value(key{}) != "v" || ctx.Err() != nil {
		t.Fatalf("value %v, err %v", ctx.Value(key{}), ctx.Err())
	}
	select {
	case <-ctx.Done():
		t.Fatal("done before its deadline, with its parent cancelled")
	default:
	}
	ctx.stop()

	ctx = &boundedCtx{Context: parent, deadline: time.Now().Add(time.Millisecond)}
	<-ctx.Done()
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("err %v after the deadline", ctx.Err())
	}
	ctx.stop()
	// Past its deadline with no one waiting: no timer, and still over.
	ctx = &boundedCtx{Context: parent, deadline: time.Now().Add(-time.Millisecond)}
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("err %v past the deadline", ctx.Err())
	}
}
