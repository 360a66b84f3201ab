package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/store"
)

// BenchAppendEvents appends b.N batches of size text deltas to s, round
// robin over threads, as the run's group-commit writer sends them: the
// deltas of many streams interleaved in arrival order. It reports ns/event.
func BenchAppendEvents(b *testing.B, s store.Store, size, threads int) {
	seqs := make([]int64, threads)
	names := make([]string, threads)
	for i := range names {
		names[i] = fmt.Sprintf("thread-%02d", i)
	}
	batch := make([]event.Event, size)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for i := range batch {
			th := i % threads
			seqs[th]++
			batch[i] = event.Event{Tenant: "t", Thread: names[th], Run: "run", Seq: seqs[th], Time: time.Now(),
				Type: event.TextDelta, Turn: "run", Iteration: 1, Step: "worker", Payload: event.TextDeltaData{MessageID: "m", Delta: " token"}}
		}
		if err := s.AppendEvents(b.Context(), batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(batch)), "ns/event")
}

// AppendBenchmarks are the batch shapes BenchAppendEvents is run with: 200
// events over 50 threads (4 deltas each), and a full batch (the writer's
// maximum, 2000) of 50 streams × 40 deltas, what 1000 streams at 50
// tokens/s fill in one linger.
var AppendBenchmarks = []struct {
	Name           string
	Batch, Threads int
}{{"200x50", 200, 50}, {"2000x50", 2000, 50}}
