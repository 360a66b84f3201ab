//go:build unix

package redisbus_test

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/bus/redisbus"
	"github.com/agentchat/agentchat/internal/event"
)

// BenchmarkPublishPaced is a replica's publishing at a thousand streams over
// two replicas: 500 threads, each followed here and publishing a text delta
// every 20 ms (the bench's upstream pace), its last event published waiting
// for Redis as a run's end is. It reports the process's CPU per event (the
// runs' publishes, the publishers' pipelines and the local deliveries
// together), which ns/op (wall time) does not:
//
//	go test ./internal/bus/redisbus -run XXX -bench PublishPaced -benchtime 100000x
func BenchmarkPublishPaced(b *testing.B) {
	const threads, pace = 500, 20 * time.Millisecond
	bs := benchBus(b)
	perThread := max(1, b.N/threads)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range threads {
		thread := fmt.Sprint("th", i)
		q, err := bs.Subscribe(b.Context(), "acme", thread, 0)
		if err != nil {
			b.Fatal(err)
		}
		wg.Add(2)
		go func() { // the stream's reader, as an SSE handler drains its queue
			defer wg.Done()
			var buf []event.Event
			for n := 0; n < perThread; {
				<-q.Ready()
				if buf, err = q.Drain(buf[:0]); err != nil {
					b.Error(err)
					return
				}
				n += len(buf)
			}
			q.Stop(nil)
		}()
		go func() {
			defer wg.Done()
			<-start
			time.Sleep(time.Duration(i) * pace / threads) // spread over one pace
			tick := time.NewTicker(pace)
			defer tick.Stop()
			for seq := int64(1); seq <= int64(perThread); seq++ {
				pub := bs.Publish
				if seq == int64(perThread) {
					pub = func(ctx context.Context, ev event.Event) error { return redisbus.PublishWaited(ctx, bs, ev) }
				}
				if err := pub(b.Context(), ev(thread, seq)); err != nil {
					b.Error(err)
					return
				}
				<-tick.C
			}
		}()
	}
	before := cpuTime(b)
	b.ResetTimer()
	close(start)
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64((cpuTime(b)-before).Nanoseconds())/float64(perThread*threads), "cpu-ns/event")
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
