package run_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agentchat/agentchat/internal/bus/membus"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/run"
	"github.com/agentchat/agentchat/internal/store/sqlitestore"
)

// BenchmarkStreamNext is a live thread stream's work per token on the
// embedded default: the bus hands it an event and Next takes it (issue 25:
// every token of every stream passes here).
func BenchmarkStreamNext(b *testing.B) {
	st, err := sqlitestore.Open(context.Background(), filepath.Join(b.TempDir(), "agentchat.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	bs := membus.New(0)
	defer bs.Close()
	s := run.New(run.Config{Store: st, Bus: bs, Engine: streaming(0), Sole: true})
	defer s.Shutdown(context.Background())
	started, err := s.Start(b.Context(), alice, run.StartRequest{Input: "go"}, true)
	if err != nil {
		b.Fatal(err)
	}
	thread := started.Run.ConversationID
	for !started.Stream.Done() { // the run ends: nothing else is published on the thread
		if !started.Stream.Pending() {
			<-started.Stream.Ready()
		}
		if _, err := started.Stream.Next(b.Context(), nil); err != nil {
			b.Fatal(err)
		}
	}
	started.Stream.Close()
	stream, err := s.Follow(b.Context(), alice, thread, "", 0)
	if err != nil {
		b.Fatal(err)
	}
	defer stream.Close()
	evs, err := stream.Next(b.Context(), nil) // the log's backlog
	if err != nil {
		b.Fatal(err)
	}
	seq := evs[len(evs)-1].Seq
	ev := event.New(event.TextDeltaData{MessageID: "m", Delta: "token "})
	ev.Tenant, ev.Thread, ev.Run, ev.Type = alice.Tenant, thread, "r", event.TextDelta
	b.ReportAllocs()
	for b.Loop() {
		seq++
		ev.Seq = seq
		if err := bs.Publish(b.Context(), ev); err != nil {
			b.Fatal(err)
		}
		<-stream.Ready()
		if evs, err = stream.Next(b.Context(), evs[:0]); err != nil || len(evs) != 1 {
			b.Fatalf("next: %d events, %v", len(evs), err)
		}
	}
}
