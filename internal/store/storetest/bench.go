package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/store"
)

// BenchAppendEvents appends b.N batches of size text deltas to s, round
// robin over threads, as the run's group-commit writer sends them: the
// deltas of many streams interleaved in arrival order. It reports ns/event
// and the process's CPU time per event.
func BenchAppendEvents(b *testing.B, s store.Store, size, threads int) {
	seqs := make([]int64, threads)
	names := make([]string, threads)
	for i := range names {
		names[i] = fmt.Sprintf("thread-%02d", i)
	}
	batch := make([]event.Event, size)
	b.ReportAllocs()
	var cpu time.Duration
	for b.Loop() {
		if cpu == 0 {
			cpu = processCPU() // at the first iteration, where b.Loop starts the timer
		}
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
	events := float64(b.N * len(batch))
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/events, "ns/event")
	// The process's CPU (the client, and for an embedded store the database
	// too): what a loaded machine does not distort the way it does time.
	b.ReportMetric(float64((processCPU()-cpu).Nanoseconds())/events, "cpu-ns/event")
}

// AppendBenchmarks are the batch shapes BenchAppendEvents is run with: 200
// events over 50 threads (4 deltas each); a full batch (the writer's
// maximum, 2000) of 50 streams × 40 deltas; and 500 streams with one delta
// each, a batch cut short by a Flush where there is nothing to pack (the
// cost of a row).
var AppendBenchmarks = []struct {
	Name           string
	Batch, Threads int
}{{"200x50", 200, 50}, {"2000x50", 2000, 50}, {"500x500", 500, 500}}

// BenchStartRuns starts b.N runs from concurrent callers (parallelism × GOMAXPROCS
// goroutines), each in a new conversation, as simultaneous chat requests do.
// It reports the process's CPU time per start beside the time.
func BenchStartRuns(b *testing.B, s store.Store, parallelism int) {
	benchParallel(b, s, parallelism, "cpu-ns/start", func() error {
		_, err := s.StartRun(b.Context(), alice, benchStart())
		return err
	})
}

// BenchChats makes b.N one-answer chats from concurrent callers
// (parallelism × GOMAXPROCS goroutines), each a run's three writes as a
// chat makes them: its start in a new conversation with the user's message,
// its answer, and its end with usage. It reports the process's CPU time
// per chat beside the time.
func BenchChats(b *testing.B, s store.Store, parallelism int) {
	benchParallel(b, s, parallelism, "cpu-ns/chat", func() error {
		started, err := s.StartRun(b.Context(), alice, benchStart())
		if err != nil {
			return err
		}
		r := started.Run
		if _, err := s.AppendMessage(b.Context(), alice, chat.Message{ConversationID: r.ConversationID, RunID: r.ID, Role: chat.RoleAssistant, Content: "hi"}); err != nil {
			return err
		}
		end := time.Now()
		_, err = s.UpdateRun(b.Context(), r.Tenant, r.ID, store.RunUpdate{Status: chat.RunSucceeded,
			Usage: &event.Usage{InputTokens: 3, OutputTokens: 1}, EndedAt: &end})
		return err
	})
}

// benchStart is a chat's start in a new conversation with the user's message.
func benchStart() *store.RunStart {
	return &store.RunStart{
		NewConversation: &chat.Conversation{Title: "bench"},
		Run:             chat.Run{Input: "hello", Engine: "local"},
		Message:         chat.Message{Role: chat.RoleUser, Content: "hello"},
		ReserveSeqs:     1000,
	}
}

// benchParallel runs op b.N times from parallelism × GOMAXPROCS goroutines
// and reports the process's CPU time per op as unit beside the time, and,
// for a store with a serial writer (store.SerialWriter), how long per op
// its writes held that writer ("writer-ns/op": the figure that bounds a
// node's chats per second, where the process's CPU counts the callers
// too).
func benchParallel(b *testing.B, s store.Store, parallelism int, unit string, op func() error) {
	b.ReportAllocs()
	b.SetParallelism(parallelism)
	sw, serial := s.(store.SerialWriter)
	held := func() (d time.Duration) {
		if serial {
			for _, p := range sw.WriterStats().Parts {
				d += p.Busy
			}
		}
		return d
	}
	busy := held()
	cpu := processCPU()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := op(); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64((processCPU()-cpu).Nanoseconds())/float64(b.N), unit)
	if serial {
		b.ReportMetric(float64((held()-busy).Nanoseconds())/float64(b.N), "writer-ns/op")
	}
}

// BenchAppendStreams appends batches shaped as the event log's at thousands
// of live streams: each of threads conversations (ids, runs and turns as the
// server makes them, 36 characters each) gets one text delta per batch and
// every other one a second, so a batch holds 1.5 × threads events in about
// threads rows, and the (thread, seq) keys it touches are spread over the
// whole log. The log first holds prefill such batches, so that the timed
// ones write into a grown database, as a long run does. It reports
// ns/event and the process's CPU time per event.
func BenchAppendStreams(b *testing.B, s store.Store, threads, prefill int) {
	type stream struct {
		thread, run, msg string
		seq              int64
	}
	streams := make([]stream, threads)
	for i := range streams {
		streams[i] = stream{thread: chat.NewID(), run: chat.NewID(), msg: chat.NewID()}
	}
	batch := make([]event.Event, 0, threads*3/2+1)
	n := 0
	next := func() []event.Event {
		batch = batch[:0]
		now := time.Now()
		for i := range streams {
			st := &streams[i]
			k := 1 + (i+n)%2
			for range k {
				st.seq++
				batch = append(batch, event.Event{Tenant: "default", Thread: st.thread, Run: st.run, Seq: st.seq, Time: now,
					Type: event.TextDelta, Turn: st.run, Payload: event.TextDeltaData{MessageID: st.msg, Delta: " token"}})
			}
		}
		n++
		return batch
	}
	for range prefill {
		if err := s.AppendEvents(b.Context(), next()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	var cpu time.Duration
	events := 0
	for b.Loop() {
		if cpu == 0 {
			cpu = processCPU()
		}
		evs := next()
		events += len(evs)
		if err := s.AppendEvents(b.Context(), evs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(events), "ns/event")
	b.ReportMetric(float64((processCPU()-cpu).Nanoseconds())/float64(events), "cpu-ns/event")
}
