package sqlitestore

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/store"
)

// TestThreadNumbersFollowRunsInFlight: the event log's remembered thread
// numbers are those of runs still writing. A run's end forgets its thread,
// so many conversations written one after another leave nothing behind,
// and a conversation's next run looks its number up again and writes on
// under the same number (its events read back whole, in order).
func TestThreadNumbersFollowRunsInFlight(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "agentchat.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sc := chat.Scope{Tenant: "t", User: "u"}
	remembered := func() int {
		s.threads.mu.Lock()
		defer s.threads.mu.Unlock()
		return len(s.threads.m)
	}
	at := time.UnixMilli(1_000_000).UTC()
	ev := func(thread, run string, seq int64, p event.Payload) event.Event {
		return event.Event{Tenant: "t", Thread: thread, Run: run, Seq: seq, Time: at.Add(time.Duration(seq) * time.Millisecond),
			Type: p.EventType(), Turn: run, Iteration: 1, Step: "worker", Payload: p}
	}
	delta := func(thread, run string, seq int64) event.Event {
		return ev(thread, run, seq, event.TextDeltaData{MessageID: "m-" + run, Delta: fmt.Sprint(" w", seq)})
	}
	end := func(thread, run string, seq int64) event.Event {
		return ev(thread, run, seq, event.RunFinishedData{Status: event.StatusSucceeded})
	}

	const conversations = 40
	ids := make([]string, conversations)
	for i := range ids {
		c, err := s.CreateConversation(ctx, sc, chat.Conversation{})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = c.ID
	}
	// Each conversation's first run: deltas in one batch, more deltas and
	// its end in the next, the batches of all runs interleaved as the log
	// writes them.
	var first, second []event.Event
	for _, id := range ids {
		first = append(first, delta(id, "r1", 1), delta(id, "r1", 2))
		second = append(second, delta(id, "r1", 3), end(id, "r1", 4))
	}
	if err := s.AppendEvents(ctx, first); err != nil {
		t.Fatal(err)
	}
	if n := remembered(); n != conversations {
		t.Fatalf("%d numbers remembered with %d runs writing, want %d", n, conversations, conversations)
	}
	if err := s.AppendEvents(ctx, second); err != nil {
		t.Fatal(err)
	}
	if n := remembered(); n != 0 {
		t.Fatalf("%d numbers remembered after every run ended, want 0", n)
	}

	// A second run on the first conversation: its thread is looked up
	// again, remembered while it writes and forgotten at its end.
	id := ids[0]
	if err := s.AppendEvents(ctx, []event.Event{delta(id, "r2", 5), delta(id, "r2", 6)}); err != nil {
		t.Fatal(err)
	}
	if n := remembered(); n != 1 {
		t.Fatalf("%d numbers remembered with one run writing, want 1", n)
	}
	if err := s.AppendEvents(ctx, []event.Event{end(id, "r2", 7)}); err != nil {
		t.Fatal(err)
	}
	if n := remembered(); n != 0 {
		t.Fatalf("%d numbers remembered after its end, want 0", n)
	}
	got, err := s.ListEvents(ctx, sc, store.ListEventsParams{Thread: id})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 7 {
		t.Fatalf("%d events read back, want 7: %v", len(got), got)
	}
	for i, e := range got {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d, want %d", i, e.Seq, i+1)
		}
	}
	// A row overlapping what the first run wrote is still refused: the
	// number looked up again is the thread's own.
	if err := s.AppendEvents(ctx, []event.Event{delta(id, "r2", 3)}); err == nil {
		t.Fatal("a row at an existing seq was accepted after the thread was looked up again")
	}
}
