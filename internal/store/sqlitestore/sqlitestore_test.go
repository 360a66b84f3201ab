package sqlitestore_test

import (
	"database/sql"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/agentchat/agentchat/internal/store"
	"github.com/agentchat/agentchat/internal/store/sqlitestore"
	"github.com/agentchat/agentchat/internal/store/sqlitestore/sqlitetest"
	"github.com/agentchat/agentchat/internal/store/storetest"
)

func TestContract(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.Store {
		// A copy of a migrated database: TestMigrateIsIdempotent migrates new files.
		s, err := sqlitestore.Open(t.Context(), sqlitetest.Path(t))
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

// BenchmarkAppendEvents measures the event log's write path with the batch
// shapes of storetest.AppendBenchmarks.
func BenchmarkAppendEvents(b *testing.B) {
	for _, bc := range storetest.AppendBenchmarks {
		b.Run(bc.Name, func(b *testing.B) {
			s, err := sqlitestore.Open(b.Context(), filepath.Join(b.TempDir(), "bench.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			storetest.BenchAppendEvents(b, s, bc.Batch, bc.Threads)
		})
	}
}

// BenchmarkAppendStreams measures the event log's write path at thousands
// of live streams (storetest.BenchAppendStreams): a batch per iteration,
// each stream's deltas a row, into a log that already holds 100 batches.
func BenchmarkAppendStreams(b *testing.B) {
	for _, threads := range []int{1000, 5000} {
		b.Run(strconv.Itoa(threads), func(b *testing.B) {
			s, err := sqlitestore.Open(b.Context(), filepath.Join(b.TempDir(), "bench.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			storetest.BenchAppendStreams(b, s, threads, 100)
		})
	}
}

// TestDeltasShareARow counts the event log's rows: a message's deltas in one
// batch are one row, however many streams the batch interleaves.
func TestDeltasShareARow(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "agentchat.db")
	s, err := sqlitestore.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	storetest.CountRows(t, s, func(thread string) (rows, lastSeqEnd int64) {
		t.Helper()
		if err := db.QueryRowContext(t.Context(), `SELECT count(*), coalesce(max(coalesce(seq_end, seq)), 0) FROM event_rows WHERE thread = (SELECT id FROM event_threads WHERE thread_id = ?)`, thread).Scan(&rows, &lastSeqEnd); err != nil {
			t.Fatal(err)
		}
		return rows, lastSeqEnd
	})
}

// BenchmarkStartRuns measures concurrent run starts (64 callers on two
// cores), which SQLite's one writer serialises.
func BenchmarkStartRuns(b *testing.B) {
	s, err := sqlitestore.Open(b.Context(), filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	storetest.BenchStartRuns(b, s, 32)
}

// BenchmarkChats measures a one-answer chat's three grouped writes (start,
// answer, end) from concurrent callers.
func BenchmarkChats(b *testing.B) {
	s, err := sqlitestore.Open(b.Context(), filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	storetest.BenchChats(b, s, 8)
}

// BenchmarkManyChats is BenchmarkChats from 256 callers: a group then
// carries up to a few hundred writes, as at thousands of streams (~200 per
// transaction on 16 cores at 5000 streams).
func BenchmarkManyChats(b *testing.B) {
	s, err := sqlitestore.Open(b.Context(), filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	storetest.BenchChats(b, s, 128)
}
