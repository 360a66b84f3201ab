package run

import (
	"context"
	"testing"

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
