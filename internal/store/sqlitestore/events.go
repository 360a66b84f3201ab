package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/store"
)

// The event log: rows as store.PackEvents makes them, in event_rows under
// their thread's number (event_threads; migration 0011 says why), and in
// events, keyed by the conversation id, the rows written before that
// migration, which stay where they were and are read beside the others. A
// row's seq_end is NULL for a row holding one event (so rows written before
// ranges existed need no rewrite) and the last seq of a range otherwise.

// insertEventSQL inserts one row (the first parameter is the thread's
// number) unless it overlaps
// a stored row of its thread in event_rows. The only stored row that can
// overlap seqs s..e is the last one starting at or before e (rows never
// overlap); when it reaches s, the new row is given that row's seq, and the
// (thread, seq) unique index refuses it as it refuses any repeated seq: one
// index probe, no second statement, and rows inserted earlier in the same
// transaction are seen. The refusal is what makes a retried batch (a commit
// whose answer was lost) and the events of an executor cut off by a takeover
// fail instead of writing seqs twice (the event log's write in
// internal/run/log.go). Rows of events are checked apart (legacyOverlapSQL).
const insertEventSQL = insertEventHead + insertEventValues

const (
	insertEventHead   = `INSERT INTO event_rows (thread, seq, seq_end, tenant, run_id, type, turn, iteration, step, at, payload) VALUES `
	insertEventValues = `(?, coalesce((SELECT CASE WHEN coalesce(seq_end, seq) >= ? THEN seq END FROM event_rows
		WHERE thread = ? AND seq <= ? ORDER BY seq DESC LIMIT 1), ?), ?, ?, ?, ?, ?, ?, ?, ?, ?)`
)

// eventGroups are the numbers of rows the event log inserts with one
// statement, largest first, the last 1: a batch's rows go in groups of the
// largest that fits the rows left. What a statement run costs besides the
// rows (database/sql's argument slice and locks, the driver's bind count,
// step, reset and result, SQLite's per-statement setup) is paid per group:
// BenchmarkAppendStreams' CPU per event fell 10–18 %, its allocations by
// half (docs/benchmarks.md, "twelfth round: the event log's rows").
//
// A group's statement (insertEventsSQL) probes for an overlap as
// insertEventSQL does, each row's probe correlated with its values rather
// than given parameters of its own: SQLite expires (and parses again) a
// statement when a parameter its plan looked at is bound anew, and it tells
// parameters after the 32nd apart only as one, so a multi-row statement
// whose probes took parameters was parsed again at every run (the profile's
// sqlite3Reprepare). The group's
// rows are disjoint (PackEvents refuses a repeated seq, and a row holds
// exactly the seqs from its first to its last), so each row's probe finds
// the same stored row whether the group's other rows are inserted before it
// (one row a statement) or after (SQLite evaluates an insert that reads its
// own table into a temporary table first): a batch is refused, and on the
// same unique index, exactly when it was one row at a time. OR FAIL spares
// SQLite the statement journal a multi-row insert otherwise keeps to undo
// its own rows on a conflict: every caller's transaction is rolled back on
// any error (AppendEvents, PauseRun), which undoes them.
var eventGroups = []int{32, 8, 1}

// insertEventsSQL is the statement inserting n rows, for each n in
// eventGroups (insertEventSQL for 1).
var insertEventsSQL = func() map[int]string {
	const tuple = `(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	m := make(map[int]string, len(eventGroups))
	for _, n := range eventGroups {
		if n == 1 {
			m[n] = insertEventSQL
			continue
		}
		m[n] = `WITH v (thread, seq, last, seq_end, tenant, run_id, type, turn, iteration, step, at, payload) AS (VALUES ` +
			strings.TrimSuffix(strings.Repeat(tuple+", ", n), ", ") + `)
	INSERT OR FAIL INTO event_rows (thread, seq, seq_end, tenant, run_id, type, turn, iteration, step, at, payload)
	SELECT v.thread, coalesce((SELECT CASE WHEN coalesce(e.seq_end, e.seq) >= v.seq THEN e.seq END FROM event_rows e
		WHERE e.thread = v.thread AND e.seq <= v.last ORDER BY e.seq DESC LIMIT 1), v.seq),
		v.seq_end, v.tenant, v.run_id, v.type, v.turn, v.iteration, v.step, v.at, v.payload FROM v`
	}
	return m
}()

// groupInserts are the statements of eventGroups' groups of more than one
// row (hotStatements).
func groupInserts() []string {
	var out []string
	for _, n := range eventGroups {
		if n > 1 {
			out = append(out, insertEventsSQL[n])
		}
	}
	return out
}

// legacyOverlapSQL reports whether seqs ?3..?2 of thread ?1 overlap a row of
// events, as insertEventSQL's probe does in event_rows.
const legacyOverlapSQL = `SELECT EXISTS (SELECT 1 FROM (SELECT coalesce(seq_end, seq) AS last FROM events
	WHERE thread_id = ?1 AND seq <= ?2 ORDER BY seq DESC LIMIT 1) WHERE last >= ?3)`

// threadNumberSQL reads a thread's number, newThreadSQL gives it one, and
// legacyLastSQL reads its last seq in events.
const (
	threadNumberSQL = `SELECT id FROM event_threads WHERE thread_id = ?`
	newThreadSQL    = `INSERT INTO event_threads (thread_id) VALUES (?) RETURNING id`
	legacyLastSQL   = `SELECT coalesce((SELECT coalesce(seq_end, seq) FROM events WHERE thread_id = ? ORDER BY seq DESC LIMIT 1), 0)`
)

// lastSeqSQL reads a thread's last seq (?1 thread, ?2 tenant): the end of its
// row with the greatest seq, one backward probe of each (thread, seq) index.
const lastSeqSQL = `SELECT max(
	coalesce((SELECT coalesce(seq_end, seq) FROM event_rows WHERE thread = (SELECT id FROM event_threads WHERE thread_id = ?1) AND tenant = ?2 ORDER BY seq DESC LIMIT 1), 0),
	coalesce((SELECT coalesce(seq_end, seq) FROM events WHERE thread_id = ?1 AND tenant = ?2 ORDER BY seq DESC LIMIT 1), 0))`

// deleteThreadEventsSQL are a conversation's deletion of its events (?1 the
// conversation, ?2 its tenant): its rows in both tables. Its number stays
// (a row of event_threads, the id alone): a number is then never stale,
// in this process's memory or another's, and a batch arriving after the
// deletion lands where it did when rows were keyed by the id.
var deleteThreadEventsSQL = []string{
	`DELETE FROM event_rows WHERE thread = (SELECT id FROM event_threads WHERE thread_id = ?1) AND tenant = ?2`,
	`DELETE FROM events WHERE thread_id = ?1 AND tenant = ?2`,
}

// deleteOldEventsSQL are retention's deletion of the events of runs ended
// before ?1, through the (thread, seq) indexes: the threads of old runs,
// then their rows of those runs.
var deleteOldEventsSQL = []string{
	`DELETE FROM event_rows WHERE thread IN (SELECT id FROM event_threads WHERE thread_id IN (SELECT conversation_id FROM runs WHERE ended_at IS NOT NULL AND ended_at < ?1))
		AND run_id IN (SELECT id FROM runs WHERE ended_at IS NOT NULL AND ended_at < ?1)`,
	`DELETE FROM events WHERE thread_id IN (SELECT conversation_id FROM runs WHERE ended_at IS NOT NULL AND ended_at < ?1)
		AND run_id IN (SELECT id FROM runs WHERE ended_at IS NOT NULL AND ended_at < ?1)`,
}

// threadNumbers remembers the numbers of the threads whose runs are
// writing to the event log, so that a batch looks up only its new threads.
// A number is remembered once the transaction that read or made it has
// committed (one made in a transaction rolled back does not exist); numbers
// are never deleted, so one remembered stays right.
//
// A thread is forgotten once a batch that ends a run on it has committed:
// its next run looks its number up once (one indexed read on the write
// connection) against a run start's several inserts. So what is remembered
// follows the runs in flight, not every conversation written since the
// process started: kept until a bound and then dropped whole, a number per
// new conversation grew the heap by megabytes over minutes and gave it back
// all at once (at 200 chats a second the bound was reached every six
// minutes: the sawtooth of the soak's RSS).
type threadNumbers struct {
	mu sync.Mutex
	m  map[string]threadNumber
	// legacy is whether events held rows when first looked at (legacyEvents).
	legacy atomic.Int32
}

// The states of threadNumbers.legacy (0: not looked at yet).
const (
	legacyNone int32 = 1 + iota
	legacyHeld
)

// threadNumber is a thread's number and the last seq of its rows in events
// when it was looked up: nothing writes events any more, and deletions
// only lower it, so a row starting after it cannot overlap one there.
type threadNumber struct {
	n, legacyLast int64
}

// maxThreadNumbers bounds the numbers remembered (about 130 bytes each),
// for threads whose end the log never writes (a process stopped mid-run
// leaves its runs to be ended by another).
const maxThreadNumbers = 1 << 16

// lookup fills in the numbers of threads it remembers and reports how many
// it does not.
func (t *threadNumbers) lookup(threads map[string]threadNumber) (missing int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for th := range threads {
		if n, ok := t.m[th]; ok {
			threads[th] = n
		} else {
			missing++
		}
	}
	return missing
}

// settle follows a committed batch of rows: it remembers the numbers the
// batch read or made (numbered) and forgets the threads of the runs the
// batch ended.
func (t *threadNumbers) settle(numbered map[string]threadNumber, rows []store.EventRow) {
	ends := false
	for _, r := range rows {
		if ends = r.Type == event.RunFinished; ends {
			break
		}
	}
	if len(numbered) == 0 && !ends {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(numbered) > 0 {
		if t.m == nil || len(t.m)+len(numbered) > maxThreadNumbers {
			t.m = make(map[string]threadNumber, len(numbered))
		}
		maps.Copy(t.m, numbered)
	}
	if ends {
		for _, r := range rows {
			if r.Type == event.RunFinished {
				delete(t.m, r.Thread)
			}
		}
	}
}

// AppendEvents writes a batch of events in one transaction, packed into rows.
func (s *Store) AppendEvents(ctx context.Context, evs []event.Event) error {
	if len(evs) == 0 {
		return nil
	}
	rows, err := store.PackEvents(evs)
	if err != nil {
		return fmt.Errorf("append %d events: %w", len(evs), err)
	}
	var numbered map[string]threadNumber
	err = s.txFor(ctx, partEvents, len(evs), func(tx *sql.Tx) (err error) {
		numbered, err = s.insertEventRows(ctx, tx, rows)
		return err
	})
	if err != nil {
		return fmt.Errorf("append %d events: %w", len(evs), err)
	}
	s.threads.settle(numbered, rows)
	return nil
}

// number fills in the numbers of threads (those left 0), giving one to a
// thread without, and the last seq of each in events. Its statements stay
// prepared (hotStatements): in a burst of new conversations every batch
// numbers hundreds of threads, and parsing three statements a thread was
// most of the cost (0.42 s of the writer's 4.65 s at 5000 new streams on
// 16 cores). A store whose events table is empty (every store created
// since migration 0011) skips the third.
func (s *Store) number(ctx context.Context, tx *sql.Tx, threads map[string]threadNumber) error {
	legacy := s.legacyEvents(ctx)
	for th, n := range threads {
		if n.n != 0 {
			continue
		}
		err := s.prep.queryRow(ctx, tx, threadNumberSQL, th).Scan(&n.n)
		if errors.Is(err, sql.ErrNoRows) {
			err = s.prep.queryRow(ctx, tx, newThreadSQL, th).Scan(&n.n)
		}
		if err == nil && legacy {
			err = s.prep.queryRow(ctx, tx, legacyLastSQL, th).Scan(&n.legacyLast)
		}
		if err != nil {
			return fmt.Errorf("number thread %s: %w", th, err)
		}
		threads[th] = n
	}
	return nil
}

// insertEventRows inserts packed rows in tx, each under its thread's
// number. It returns the numbers it read or made, for s.threads to remember
// once tx has committed (nil where it knew them all).
func (s *Store) insertEventRows(ctx context.Context, tx *sql.Tx, rows []store.EventRow) (map[string]threadNumber, error) {
	numbers := make(map[string]threadNumber, min(len(rows), 1024))
	for _, r := range rows {
		numbers[r.Thread] = threadNumber{}
	}
	missing := s.threads.lookup(numbers)
	if missing > 0 {
		if err := s.number(ctx, tx, numbers); err != nil {
			return nil, err
		}
	}
	if err := s.insertNumberedRows(ctx, tx, rows, numbers); err != nil {
		return nil, err
	}
	if missing == 0 {
		return nil, nil
	}
	return numbers, nil
}

// insertNumberedRows inserts rows, numbers holding their threads' numbers,
// in groups of eventGroups rows, each group one statement.
func (s *Store) insertNumberedRows(ctx context.Context, tx *sql.Tx, rows []store.EventRow, numbers map[string]threadNumber) error {
	groups := eventGroups
	for _, r := range rows {
		if r.Seq <= numbers[r.Thread].legacyLast {
			// Rare (below): the batch goes one row at a time, each row
			// checked against events before it is inserted, as it always
			// was.
			groups = eventGroups[len(eventGroups)-1:]
			break
		}
	}
	// The rows are inserted under a context without cancellation, looked
	// at between groups instead: given one that can end, the driver starts
	// a goroutine (and a progress handler) to interrupt each statement,
	// which cost more than the insert itself. An insert does not wait (the
	// write pool's one connection holds the write lock from BeginTx), so
	// a batch still stops within a group of ctx's end, and the transaction
	// still ends with it.
	rowCtx := context.WithoutCancel(ctx)
	args := make([]any, 0, min(len(rows), groups[0])*14) // 14 parameters a row at most (insertEventSQL's)
	for len(rows) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := groups[0]
		for _, g := range groups {
			if n = g; g <= len(rows) {
				break
			}
		}
		args = args[:0]
		for _, r := range rows[:n] {
			num := numbers[r.Thread]
			if r.Seq <= num.legacyLast {
				// Rare: a thread with rows in events, and a row that may
				// overlap one of them (a retry of a batch written before
				// the upgrade).
				var overlaps bool
				if err := tx.QueryRowContext(rowCtx, legacyOverlapSQL, r.Thread, r.SeqEnd, r.Seq).Scan(&overlaps); err != nil {
					return err
				}
				if overlaps {
					return fmt.Errorf("%w: seqs %d..%d of %s overlap a stored row", store.ErrConflict, r.Seq, r.SeqEnd, r.Thread)
				}
			}
			var end any
			if r.IsRange() {
				end = r.SeqEnd
			}
			// Plain ? parameters, each bound once: numbered ones cost the
			// driver a name lookup per parameter per row. The iteration
			// goes as an int64, which database/sql passes on as it is (an
			// int it converts by reflection).
			if n == 1 {
				args = append(args, num.n, r.Seq, num.n, r.SeqEnd, r.Seq, end, r.Tenant, r.Run, string(r.Type), r.Turn, int64(r.Iteration), r.Step,
					ms(r.Time), string(r.Payload))
			} else {
				args = append(args, num.n, r.Seq, r.SeqEnd, end, r.Tenant, r.Run, string(r.Type), r.Turn, int64(r.Iteration), r.Step,
					ms(r.Time), string(r.Payload))
			}
		}
		stmt, err := s.prep.txStmt(ctx, tx, insertEventsSQL[n])
		if err != nil {
			return err
		}
		if _, err := stmt.ExecContext(rowCtx, args...); err != nil {
			return err
		}
		rows = rows[n:]
	}
	return nil
}

// ListEvents reads a thread's log in seq order. The rows read are those
// overlapping (after, until]: from the last row starting at or before after
// (which may hold after+1), found by one probe, up to until. Each holds at
// least one wanted event, so limit rows hold enough.
func (s *Store) ListEvents(ctx context.Context, sc chat.Scope, p store.ListEventsParams) ([]event.Event, error) {
	thread, after, until, limit := p.Thread, p.AfterSeq, p.UntilSeq, p.Limit
	if _, err := s.GetConversation(ctx, sc, thread); err != nil {
		return nil, err
	}
	// Each table's rows overlapping (after, until], merged in seq order:
	// a thread's rows in the two never overlap either.
	args := []any{thread, sc.Tenant, after}
	var cond string
	if until > 0 {
		args = append(args, until)
		cond += fmt.Sprintf(` AND seq <= ?%d`, len(args))
	}
	if p.RunID != "" {
		args = append(args, p.RunID)
		cond += fmt.Sprintf(` AND run_id = ?%d`, len(args))
	}
	q := `SELECT ?1 AS thread_id, seq, coalesce(seq_end, seq), tenant, run_id, type, turn, iteration, step, at, payload FROM event_rows
		WHERE thread = (SELECT id FROM event_threads WHERE thread_id = ?1) AND tenant = ?2
		AND seq >= coalesce((SELECT seq FROM event_rows WHERE thread = (SELECT id FROM event_threads WHERE thread_id = ?1) AND seq <= ?3 ORDER BY seq DESC LIMIT 1), 0)
		AND coalesce(seq_end, seq) > ?3` + cond
	if s.legacyEvents(ctx) {
		q += `
		UNION ALL
		SELECT thread_id, seq, coalesce(seq_end, seq), tenant, run_id, type, turn, iteration, step, at, payload FROM events
		WHERE thread_id = ?1 AND tenant = ?2
		AND seq >= coalesce((SELECT seq FROM events WHERE thread_id = ?1 AND seq <= ?3 ORDER BY seq DESC LIMIT 1), 0)
		AND coalesce(seq_end, seq) > ?3` + cond
	}
	q += ` ORDER BY seq`
	if limit > 0 {
		args = append(args, limit)
		q += fmt.Sprintf(` LIMIT ?%d`, len(args))
	}
	rows, err := collect(scanEventRow)(s.read.QueryContext(ctx, q, args...))
	if err != nil {
		return nil, fmt.Errorf("list events of %s: %w", thread, err)
	}
	out, err := store.UnpackRows(rows, after, until, limit)
	if err != nil {
		return nil, fmt.Errorf("list events of %s: %w", thread, err)
	}
	return out, nil
}

func scanEventRow(row scanner) (store.EventRow, error) {
	var r store.EventRow
	var typ, payload string
	var at int64
	err := row.Scan(&r.Thread, &r.Seq, &r.SeqEnd, &r.Tenant, &r.Run, &typ, &r.Turn, &r.Iteration, &r.Step, &at, &payload)
	r.Type, r.Time, r.Payload = event.Type(typ), fromMS(at), []byte(payload)
	return r, err
}

// LastSeq is the thread's highest stored seq.
func (s *Store) LastSeq(ctx context.Context, tenant, thread string) (int64, error) {
	var n int64
	var err error
	// The write pool sees every committed batch, including one committed an instant ago.
	labelled(ctx, partReads, func(ctx context.Context) {
		start := time.Now()
		err = s.prep.row(ctx, lastSeqSQL, thread, tenant).Scan(&n)
		s.held(partReads, start, 1)
	})
	if err != nil {
		return 0, fmt.Errorf("last seq of %s: %w", thread, interpret(err))
	}
	return n, nil
}

// legacyEvents reports whether events may hold rows (of versions before
// migration 0011), so that a read without them is parsed without its half
// for them (the parse of a query run unprepared is most of a short read's
// cost). It is looked at once: nothing writes events, so once empty it
// stays empty.
func (s *Store) legacyEvents(ctx context.Context) bool {
	switch s.threads.legacy.Load() {
	case legacyNone:
		return false
	case legacyHeld:
		return true
	}
	var held bool
	if err := s.read.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM events)`).Scan(&held); err != nil {
		return true // read both
	}
	state := legacyNone
	if held {
		state = legacyHeld
	}
	s.threads.legacy.Store(state)
	return held
}
