package membus_test

import (
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/agentchat/agentchat/internal/bus"
	"github.com/agentchat/agentchat/internal/bus/bustest"
	"github.com/agentchat/agentchat/internal/bus/membus"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestContract(t *testing.T) {
	// Replicas of an in-process bus share one instance.
	var mu sync.Mutex
	buses := map[string]*membus.Bus{}
	bustest.Run(t, func(t *testing.T) bus.Bus {
		mu.Lock()
		defer mu.Unlock()
		if b, ok := buses[t.Name()]; ok {
			return b
		}
		b := membus.New(0)
		buses[t.Name()] = b
		t.Cleanup(func() { b.Close() })
		return b
	})
}
