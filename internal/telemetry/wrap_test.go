package telemetry_test

import (
	"testing"

	"github.com/agentchat/agentchat/internal/bus"
	"github.com/agentchat/agentchat/internal/bus/membus"
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
