package sqlitestore_test

import (
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/store"
	"github.com/agentchat/agentchat/internal/store/sqlitestore"
)

// TestRowsOfEarlierVersions reads a log whose first rows are where versions
// before migration 0011 wrote them (events, keyed by the conversation id)
// and the rest in event_rows: both are read, resumed from any seq, and
// refused an overlapping row; a conversation's deletion removes both.
func TestRowsOfEarlierVersions(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "agentchat.db")
	s, err := sqlitestore.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sc := chat.Scope{Tenant: "t", User: "u"}
	c, err := s.CreateConversation(ctx, sc, chat.Conversation{})
	if err != nil {
		t.Fatal(err)
	}
	delta := func(seq int64) event.Event {
		return event.Event{Tenant: "t", Thread: c.ID, Run: "run", Seq: seq, Time: time.UnixMilli(1000 * seq).UTC(), Type: event.TextDelta,
			Turn: "run", Iteration: 1, Step: "worker", Payload: event.TextDeltaData{MessageID: "m", Delta: fmt.Sprint(" t", seq)}}
	}
	deltas := func(from, to int64) []event.Event {
		var evs []event.Event
		for seq := from; seq <= to; seq++ {
			evs = append(evs, delta(seq))
		}
		return evs
	}
	// Seqs 1..5 as one range row and 6 alone, as an earlier version wrote them.
	for _, batch := range [][]event.Event{deltas(1, 5), deltas(6, 6)} {
		rows, err := store.PackEvents(batch)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			var end any
			if r.IsRange() {
				end = r.SeqEnd
			}
			if _, err := db.ExecContext(ctx, `INSERT INTO events (thread_id, seq, seq_end, tenant, run_id, type, turn, iteration, step, at, payload)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, r.Thread, r.Seq, end, r.Tenant, r.Run, string(r.Type), r.Turn, r.Iteration, r.Step,
				r.Time.UnixMilli(), string(r.Payload)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.AppendEvents(ctx, deltas(7, 10)); err != nil {
		t.Fatal(err)
	}
	if n, err := s.LastSeq(ctx, "t", c.ID); err != nil || n != 10 {
		t.Fatalf("last seq %d, %v; want 10", n, err)
	}
	for _, p := range []store.ListEventsParams{{}, {AfterSeq: 3}, {AfterSeq: 5, Limit: 2}, {AfterSeq: 4, UntilSeq: 8}, {AfterSeq: 9}, {AfterSeq: 2, Limit: 1}} {
		p.Thread = c.ID
		got, err := s.ListEvents(ctx, sc, p)
		if err != nil {
			t.Fatal(err)
		}
		until := p.UntilSeq
		if until == 0 {
			until = 10
		}
		if p.Limit > 0 {
			until = min(until, p.AfterSeq+int64(p.Limit))
		}
		want := deltas(p.AfterSeq+1, until)
		if len(got) != len(want) {
			t.Fatalf("%+v: %d events, want %d", p, len(got), len(want))
		}
		for i := range got {
			if got[i].Seq != want[i].Seq || got[i].Payload != want[i].Payload || !got[i].Time.Equal(want[i].Time) {
				t.Fatalf("%+v: event %d is %+v, want %+v", p, i, got[i], want[i])
			}
		}
	}
	// A row overlapping one of either table is refused, and the batch with it.
	for _, seqs := range [][2]int64{{4, 4}, {6, 6}, {5, 7}, {8, 8}, {10, 11}} {
		if err := s.AppendEvents(ctx, append(deltas(seqs[0], seqs[1]), delta(20))); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("seqs %d..%d: %v, want a conflict", seqs[0], seqs[1], err)
		}
	}
	if err := s.AppendEvents(ctx, deltas(11, 12)); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteConversation(ctx, sc, c.ID); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := db.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM events) + (SELECT count(*) FROM event_rows)`).Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d rows left after the deletion (%v)", left, err)
	}
}
