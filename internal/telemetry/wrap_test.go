package telemetry_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/agentchat/agentchat/internal/bus"
	"github.com/agentchat/agentchat/internal/bus/membus"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/telemetry"
)

// The wrapper that counts failed publishes keeps what the bus says of
// itself: hidden, the in-process bus would make every stream of the
// embedded default poll the log once a second (issue 25).
func TestObservedBusKeepsLossless(t *testing.T) {
	t.Parallel()
	b := membus.New(0)
	t.Cleanup(func() { b.Close() })
	tel := telemetry.New(telemetry.Config{})
	if !bus.Lossless(tel.Bus(b)) {
		t.Fatal("the observed in-process bus is not lossless")
	}
	if bus.Lossless(tel.Bus(struct{ bus.Bus }{b})) {
		t.Fatal("the observed wrapper claims lossless for a bus that does not")
	}
}

// failingBus is a real bus whose publishes fail as Redis's do when it is
// unreachable.
type failingBus struct{ bus.Bus }

func (failingBus) Publish(context.Context, event.Event) error {
	return fmt.Errorf("redisbus: publish: %w", bus.ErrUnavailable)
}

// agentchat_bus_publish_errors_total counts the events the bus failed to
// publish, and not the publishes a closing bus refuses: the name and its
// meaning are a contract of the metrics endpoint.
func TestBusPublishErrorsCounted(t *testing.T) {
	t.Parallel()
	tel := telemetry.New(telemetry.Config{})
	ev := event.Event{Tenant: "acme", Thread: "th", Run: "run", Seq: 1, Type: event.TextDelta,
		Payload: event.TextDeltaData{MessageID: "m", Delta: "hi"}}

	ok := membus.New(0)
	t.Cleanup(func() { ok.Close() })
	if err := tel.Bus(ok).Publish(t.Context(), ev); err != nil {
		t.Fatal(err)
	}
	failing := tel.Bus(failingBus{ok})
	for range 2 {
		if err := failing.Publish(t.Context(), ev); !errors.Is(err, bus.ErrUnavailable) {
			t.Fatalf("publish: %v, want ErrUnavailable", err)
		}
	}
	closed := membus.New(0)
	closed.Close()
	if err := tel.Bus(closed).Publish(t.Context(), ev); !errors.Is(err, bus.ErrClosed) {
		t.Fatalf("publish to a closed bus: %v, want ErrClosed", err)
	}

	if got := publishErrors(t, tel); got != 2 {
		t.Fatalf("agentchat_bus_publish_errors_total = %v, want 2", got)
	}
}

// publishErrors reads agentchat_bus_publish_errors_total from tel's registry.
func publishErrors(t *testing.T, tel *telemetry.Telemetry) float64 {
	t.Helper()
	mfs, err := tel.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "agentchat_bus_publish_errors_total" {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatal("agentchat_bus_publish_errors_total is not exported")
	return 0
}
