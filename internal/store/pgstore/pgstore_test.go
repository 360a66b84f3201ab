package pgstore_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/file"
	"github.com/agentchat/agentchat/internal/file/filetest"
	"github.com/agentchat/agentchat/internal/store"
	"github.com/agentchat/agentchat/internal/store/pgstore"
	"github.com/agentchat/agentchat/internal/store/storetest"
	"github.com/agentchat/agentchat/internal/testenv"
)

// newSchema creates an empty schema for one test and drops it afterwards.
func newSchema(t *testing.T, dbURL string) string {
	t.Helper()
	b := make([]byte, 8)
	rand.Read(b)
	schema := "agentchat_test_" + hex.EncodeToString(b)
	exec(t, dbURL, `CREATE SCHEMA `+schema)
	t.Cleanup(func() { exec(t, dbURL, `DROP SCHEMA `+schema+` CASCADE`) })
	return schema
}

// exec runs one statement on a connection of its own, outside any store.
func exec(t testing.TB, dbURL, sql string) {
	t.Helper()
	// Not t.Context(): cleanups run after it is cancelled.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatal(err)
	}
}

// withParam returns dbURL with one query parameter set.
func withParam(t testing.TB, dbURL, key, value string) string {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}

func open(t *testing.T, dbURL string) *pgstore.Store {
	t.Helper()
	s, err := pgstore.Open(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestContract(t *testing.T) {
	t.Parallel()
	dbURL := testenv.Postgres(t)
	storetest.Run(t, func(t *testing.T) store.Store {
		return open(t, withParam(t, dbURL, "schema", newSchema(t, dbURL)))
	})
}

func TestSearchPathParameter(t *testing.T) {
	t.Parallel()
	dbURL := testenv.Postgres(t)
	schema := newSchema(t, dbURL)
	s := open(t, withParam(t, dbURL, "search_path", schema))
	sc := chat.Scope{Tenant: "acme", User: "alice"}
	if _, err := s.CreateConversation(t.Context(), sc, chat.Conversation{Title: "x"}); err != nil {
		t.Fatal(err)
	}
	// The tables live in the named schema, not in public.
	exec(t, dbURL, `SELECT 1 FROM `+schema+`.conversations`)
}

func TestSchemaParameterCreatesSchema(t *testing.T) {
	t.Parallel()
	dbURL := testenv.Postgres(t)
	b := make([]byte, 8)
	rand.Read(b)
	schema := "agentchat_test_" + hex.EncodeToString(b)
	t.Cleanup(func() { exec(t, dbURL, `DROP SCHEMA IF EXISTS `+schema+` CASCADE`) })
	open(t, withParam(t, dbURL, "schema", schema))
	exec(t, dbURL, `SELECT 1 FROM `+schema+`.schema_migrations`)
}

func TestMigrateConcurrently(t *testing.T) {
	t.Parallel()
	dbURL := testenv.Postgres(t)
	u := withParam(t, dbURL, "schema", newSchema(t, dbURL))
	// Replicas starting at once: the advisory lock lets one migrate and the
	// others find the work done.
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if err := pgstore.Migrate(t.Context(), u); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if err := pgstore.Migrate(t.Context(), u); err != nil {
		t.Fatal(err)
	}
}

func TestUnreachableIsUnavailable(t *testing.T) {
	t.Parallel()
	// Port 1 refuses connections: a dial failure, not a cancelled context.
	_, err := pgstore.Open(t.Context(), "postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=5")
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("error = %v, want ErrUnavailable", err)
	}
}

func TestLargeEventBatch(t *testing.T) {
	t.Parallel()
	dbURL := testenv.Postgres(t)
	s := open(t, withParam(t, dbURL, "schema", newSchema(t, dbURL)))
	sc := chat.Scope{Tenant: "acme", User: "alice"}
	c, err := s.CreateConversation(t.Context(), sc, chat.Conversation{})
	if err != nil {
		t.Fatal(err)
	}
	// Far more rows than a VALUES list could bind (65535 parameters / 10 columns).
	const n = 10000
	evs := make([]event.Event, n)
	for i := range evs {
		evs[i] = event.Event{Tenant: "acme", Thread: c.ID, Run: "r", Seq: int64(i + 1), Time: time.Now(),
			Type: event.TextDelta, Payload: event.TextDeltaData{MessageID: "m", Delta: "x"}}
	}
	if err := s.AppendEvents(t.Context(), evs); err != nil {
		t.Fatal(err)
	}
	if last, err := s.LastSeq(t.Context(), "acme", c.ID); err != nil || last != n {
		t.Fatalf("last seq %d, %v", last, err)
	}
}

// StartRun is one implicit transaction: a statement failing late in the
// batch (here the message's parts, refused by the json column) takes the
// conversation and the run written before it along.
func TestStartRunIsAtomic(t *testing.T) {
	t.Parallel()
	dbURL := testenv.Postgres(t)
	s := open(t, withParam(t, dbURL, "schema", newSchema(t, dbURL)))
	sc := chat.Scope{Tenant: "acme", User: "alice"}
	_, err := s.StartRun(t.Context(), sc, &store.RunStart{
		NewConversation: &chat.Conversation{ID: "c1", Title: "t"},
		Run:             chat.Run{Input: "x", Status: chat.RunRunning, LeaseOwner: "r", LeaseEpoch: 1},
		Message:         chat.Message{Role: chat.RoleUser, Content: "x", Parts: []byte(`{not json`)},
	})
	if err == nil {
		t.Fatal("a start with bad parts succeeded")
	}
	if _, err := s.GetConversation(t.Context(), sc, "c1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the failed start left its conversation: %v", err)
	}
	if runs, err := s.OrphanedRuns(t.Context(), time.Now().Add(time.Hour), 10); err != nil || len(runs) != 0 {
		t.Fatalf("the failed start left runs: %v (%v)", runs, err)
	}
}

// TestDeltasShareARow counts the event log's rows: a message's deltas in one
// batch are one row, however many streams the batch interleaves.
func TestDeltasShareARow(t *testing.T) {
	t.Parallel()
	dbURL := testenv.Postgres(t)
	schema := newSchema(t, dbURL)
	s := open(t, withParam(t, dbURL, "schema", schema))
	conn, err := pgx.Connect(t.Context(), withParam(t, dbURL, "search_path", schema))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	storetest.CountRows(t, s, func(thread string) (rows, lastSeqEnd int64) {
		t.Helper()
		if err := conn.QueryRow(t.Context(), `SELECT count(*), COALESCE(max(COALESCE(seq_end, seq)), 0) FROM events WHERE thread_id = $1`, thread).Scan(&rows, &lastSeqEnd); err != nil {
			t.Fatal(err)
		}
		return rows, lastSeqEnd
	})
}

// BenchmarkAppendEvents measures the event log's write path over PostgreSQL
// with the batch shapes of storetest.AppendBenchmarks.
func BenchmarkAppendEvents(b *testing.B) {
	dbURL := testenv.Postgres(b)
	for _, bc := range storetest.AppendBenchmarks {
		b.Run(bc.Name, func(b *testing.B) {
			schema := "agentchat_bench_" + hex.EncodeToString([]byte(bc.Name))
			exec(b, dbURL, `DROP SCHEMA IF EXISTS `+schema+` CASCADE`) // left by an interrupted run
			s, err := pgstore.Open(b.Context(), withParam(b, dbURL, "schema", schema))
			if err != nil {
				b.Fatal(err)
			}
			defer func() {
				s.Close()
				exec(b, dbURL, `DROP SCHEMA `+schema+` CASCADE`)
			}()
			storetest.BenchAppendEvents(b, s, bc.Batch, bc.Threads)
		})
	}
}

// The store's database as file storage passes the file storage contract.
func TestFileStorageContract(t *testing.T) {
	t.Parallel()
	dbURL := testenv.Postgres(t)
	filetest.Run(t, func(t *testing.T) file.Storage {
		return open(t, withParam(t, dbURL, "schema", newSchema(t, dbURL))).FileStorage()
	})
}

// Two replicas on one database share files: what one stores the other
// reads, and a delete on either is seen by both.
func TestFileStorageSharedByReplicas(t *testing.T) {
	t.Parallel()
	dbURL := testenv.Postgres(t)
	u := withParam(t, dbURL, "schema", newSchema(t, dbURL))
	a, b := open(t, u).FileStorage(), open(t, u).FileStorage()
	body := bytes.Repeat([]byte("shared between replicas "), 40_000) // ~1 MiB: several chunks
	key := filetest.Key(body)
	if err := a.Put(t.Context(), key, bytes.NewReader(body), int64(len(body))); err != nil {
		t.Fatal(err)
	}
	o, err := b.Open(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	// A Range from the middle of a chunk to the middle of another.
	if _, err := o.Seek(300_000, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 100_000)
	if _, err := io.ReadFull(o, got); err != nil || !bytes.Equal(got, body[300_000:400_000]) {
		t.Fatalf("range read on the other replica: %v", err)
	}
	_ = o.Close()
	if err := b.Delete(t.Context(), key); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Open(t.Context(), key); !errors.Is(err, file.ErrNotFound) {
		t.Fatalf("after the other replica deleted it: %v", err)
	}
}

// The event log's appends encode their arrays by hand unless the URL asks
// pgx for another exec mode: both write the same rows, whatever the values.
func TestEventRowsEncodedAsPgxDoes(t *testing.T) {
	t.Parallel()
	dbURL := testenv.Postgres(t)
	at := time.Date(2026, 11, 27, 12, 0, 0, 123456789, time.FixedZone("x", -7200))
	evs := func(thread string) []event.Event {
		return []event.Event{
			{Tenant: "acmé\t\"{}", Thread: thread, Run: "run\\1", Seq: 1, Time: at, Type: event.RunStarted, Turn: "turn 漢",
				Payload: event.RunStartedData{}},
			{Tenant: "acmé\t\"{}", Thread: thread, Run: "run\\1", Seq: 2, Time: at.Add(time.Millisecond), Type: event.TextDelta,
				Iteration: -7, Step: "worker", Payload: event.TextDeltaData{MessageID: "m", Delta: "a\n<b>"}},
			{Tenant: "acmé\t\"{}", Thread: thread, Run: "run\\1", Seq: 3, Time: at.Add(1500 * time.Microsecond), Type: event.TextDelta,
				Iteration: -7, Step: "worker", Payload: event.TextDeltaData{MessageID: "m", Delta: "\u2028é"}},
			{Tenant: "acmé\t\"{}", Thread: thread, Run: "run\\1", Seq: 1 << 40, Time: time.Date(1999, 12, 31, 23, 59, 59, 0, time.UTC),
				Type: event.ToolResult, Iteration: 1 << 30, Payload: event.ToolResultData{ToolCallID: "c", Name: "n", Output: []byte(`{"a":[1,null]}`)}},
		}
	}
	var got [2][]event.Event
	for i, mode := range []string{"", "exec"} {
		u := withParam(t, dbURL, "schema", newSchema(t, dbURL))
		if mode != "" {
			u = withParam(t, u, "default_query_exec_mode", mode)
		}
		s := open(t, u)
		sc := chat.Scope{Tenant: "acmé\t\"{}", User: "u"}
		c, err := s.CreateConversation(t.Context(), sc, chat.Conversation{})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.AppendEvents(t.Context(), evs(c.ID)); err != nil {
			t.Fatal(err)
		}
		// A row overlapping a stored one is refused on either path.
		if err := s.AppendEvents(t.Context(), evs(c.ID)[1:2]); err == nil {
			t.Errorf("mode %q: an overlapping row was stored", mode)
		}
		got[i], err = s.ListEvents(t.Context(), sc, store.ListEventsParams{Thread: c.ID})
		if err != nil {
			t.Fatal(err)
		}
		for j := range got[i] {
			got[i][j].Thread = ""
		}
	}
	if len(got[0]) != 4 {
		t.Fatalf("read %d events back, want 4", len(got[0]))
	}
	for j := range got[0] {
		a, b := got[0][j], got[1][j]
		if !a.Time.Equal(b.Time) || fmt.Sprint(a.Payload) != fmt.Sprint(b.Payload) {
			t.Errorf("event %d: %+v, pgx's %+v", j, a, b)
		}
		a.Time, b.Time, a.Payload, b.Payload = time.Time{}, time.Time{}, nil, nil
		if a != b {
			t.Errorf("event %d: %+v, pgx's %+v", j, a, b)
		}
	}
}
