package sqlitestore_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/event"

	"github.com/agentchat/agentchat/internal/store"
	"github.com/agentchat/agentchat/internal/store/sqlitestore"
	"github.com/agentchat/agentchat/internal/store/storetest"
)

func TestContract(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := sqlitestore.Open(t.Context(), filepath.Join(t.TempDir(), "agentchat.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

func TestMigrateIsIdempotent(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "a.db")
	for range 2 {
		if err := sqlitestore.Migrate(t.Context(), path); err != nil {
			t.Fatal(err)
		}
	}
}

// BenchmarkAppendEvents measures the event log's write path: batches of 200
// token events spread over 50 threads, as the group-commit writer sends them.
func BenchmarkAppendEvents(b *testing.B) {
	s, err := sqlitestore.Open(b.Context(), filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	seqs := make([]int64, 50)
	batch := make([]event.Event, 200)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for i := range batch {
			th := i % len(seqs)
			seqs[th]++
			batch[i] = event.Event{Tenant: "t", Thread: fmt.Sprintf("thread-%02d", th), Run: "run", Seq: seqs[th], Time: time.Now(),
				Type: event.TextDelta, Turn: "run", Iteration: 1, Step: "worker", Payload: event.TextDeltaData{MessageID: "m", Delta: " token"}}
		}
		if err := s.AppendEvents(b.Context(), batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(batch)), "ns/event")
}
