package pgstore

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/store"
)

// The event log: rows as store.PackEvents makes them. seq_end is NULL for a
// row holding one event (so rows written before ranges existed need no
// rewrite) and the last seq of a range otherwise.

// lastSeqSQL reads a thread's last seq ($1 thread, $2 tenant): the end of its
// row with the greatest seq, one backward probe of the primary key.
const lastSeqSQL = `SELECT COALESCE((SELECT COALESCE(seq_end, seq) FROM events WHERE thread_id = $1 AND tenant = $2 ORDER BY seq DESC LIMIT 1), 0)`

// AppendEvents writes a batch of events, packed into rows, as one INSERT of
// unnest(arrays): one statement (all or nothing) and one round trip however
// large the batch.
//
// A row overlapping a stored row of its thread is refused: the only stored
// row that can overlap seqs s..se is the last one starting at or before se
// (rows never overlap); when it reaches s, the new row is given that row's
// seq and the primary key refuses it, as it refuses any repeated seq. The
// probe sees committed rows; two writers racing on one thread (which the
// run's fencing prevents) are refused by the primary key when their rows
// start at the same seq, as a takeover continuing from the same last seq does.
func (s *Store) AppendEvents(ctx context.Context, evs []event.Event) error {
	if len(evs) == 0 {
		return nil
	}
	rows, err := store.PackEvents(evs)
	if err != nil {
		return fmt.Errorf("append %d events: %w", len(evs), err)
	}
	if s.eventsPrepared {
		err = appendEventRows(ctx, s.events, rows)
	} else {
		// A deployment that asked for another mode (no prepared
		// statements behind a pooler) gets pgx's.
		err = insertEventRows(ctx, s.events, rows)
	}
	if err != nil {
		return fmt.Errorf("append %d events: %w", len(evs), interpretError(err))
	}
	return nil
}

// insertEventsSQL inserts rows given as eleven arrays, one per column (see
// AppendEvents for the seq the overlap probe gives a row).
const insertEventsSQL = `INSERT INTO events (thread_id, seq, seq_end, tenant, run_id, type, turn, iteration, step, at, payload)
		SELECT t, COALESCE((SELECT CASE WHEN COALESCE(e.seq_end, e.seq) >= u.s THEN e.seq END FROM events e
				WHERE e.thread_id = u.t AND e.seq <= u.se ORDER BY e.seq DESC LIMIT 1), u.s),
			NULLIF(se, s), te, r, ty, tu, i, st, a, p::json
		FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::text[], $8::integer[], $9::text[], $10::timestamptz[], $11::text[])
			AS u (t, s, se, te, r, ty, tu, i, st, a, p)`

// insertEventRows inserts packed rows as one INSERT of unnest(arrays),
// through pgx's encoding of the arguments.
func insertEventRows(ctx context.Context, db execer, rows []store.EventRow) error {
	n := len(rows)
	threads, tenants, runs, types := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	turns, steps, payloads := make([]string, n), make([]string, n), make([]string, n)
	seqs, ends, iterations, ats := make([]int64, n), make([]int64, n), make([]int32, n), make([]time.Time, n)
	for i, r := range rows {
		if r.Iteration > math.MaxInt32 || r.Iteration < math.MinInt32 {
			return fmt.Errorf("iteration %d out of range", r.Iteration)
		}
		threads[i], seqs[i], ends[i], tenants[i], runs[i], types[i] = r.Thread, r.Seq, r.SeqEnd, r.Tenant, r.Run, string(r.Type)
		turns[i], iterations[i], steps[i], ats[i], payloads[i] = r.Turn, int32(r.Iteration), r.Step, ms(r.Time), string(r.Payload)
	}
	_, err := db.Exec(ctx, insertEventsSQL, threads, seqs, ends, tenants, runs, types, turns, iterations, steps, ats, payloads)
	return err
}

// insertEventsStmt names insertEventsSQL prepared on the event log's
// connections.
const insertEventsStmt = "agentchat_insert_events"

// appendEventRows is insertEventRows with the arrays encoded here, in
// PostgreSQL's binary array format, into one buffer reused from batch to
// batch, and sent as the prepared statement's parameters. pgx encoded
// each element through its generic plans (a string boxed per element) into
// a buffer grown by doubling and dropped after each statement: the event
// log's appends were a third of a replica's allocations under load, the
// largest part after the bus's (docs/benchmarks.md, "Issue 25, twelfth
// round: PostgreSQL + Redis").
func appendEventRows(ctx context.Context, pool *pgxpool.Pool, rows []store.EventRow) error {
	enc := rowEncoders.Get().(*rowEncoder)
	defer enc.release()
	params, err := enc.encode(rows)
	if err != nil {
		return err
	}
	c, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	// Prepared once per connection: pgx keeps it by name and answers a
	// later Prepare of the same statement without a round trip.
	if _, err := c.Conn().Prepare(ctx, insertEventsStmt, insertEventsSQL); err != nil {
		return err
	}
	_, err = c.Conn().PgConn().ExecPrepared(ctx, insertEventsStmt, params, binaryParams[:], nil).Close()
	return err
}

// binaryParams says each of insertEventsSQL's parameters is sent in
// binary.
var binaryParams = [11]int16{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}

// rowEncoder holds the buffer the event log's parameters are encoded into.
type rowEncoder struct {
	buf    []byte
	params [11][]byte
}

var rowEncoders = sync.Pool{New: func() any { return new(rowEncoder) }}

// maxKeptEncoding is the largest buffer an encoder keeps for the next
// batch: a burst's batch is not held on to.
const maxKeptEncoding = 1 << 20

func (e *rowEncoder) release() {
	e.params = [11][]byte{}
	if cap(e.buf) > maxKeptEncoding {
		e.buf = nil
	}
	rowEncoders.Put(e)
}

// The element types of insertEventsSQL's arrays, as array_recv checks them.
const (
	oidInt8        = 20
	oidInt4        = 23
	oidText        = 25
	oidTimestamptz = 1184
)

// pgEpochMicros is PostgreSQL's epoch (2000-01-01 UTC) in Unix microseconds:
// a binary timestamptz counts microseconds from it.
const pgEpochMicros = 946684800000000

// encode writes rows as insertEventsSQL's eleven array parameters.
func (e *rowEncoder) encode(rows []store.EventRow) ([][]byte, error) {
	for _, r := range rows {
		if r.Iteration > math.MaxInt32 || r.Iteration < math.MinInt32 {
			return nil, fmt.Errorf("iteration %d out of range", r.Iteration)
		}
	}
	b := e.buf[:0]
	var ends [11]int
	col := 0
	text := func(f func(r *store.EventRow) string) {
		b = arrayHeader(b, oidText, len(rows))
		for i := range rows {
			v := f(&rows[i])
			b = binary.BigEndian.AppendUint32(b, uint32(len(v)))
			b = append(b, v...)
		}
		ends[col] = len(b)
		col++
	}
	int8s := func(f func(r *store.EventRow) int64) {
		b = arrayHeader(b, oidInt8, len(rows))
		for i := range rows {
			b = binary.BigEndian.AppendUint32(b, 8)
			b = binary.BigEndian.AppendUint64(b, uint64(f(&rows[i])))
		}
		ends[col] = len(b)
		col++
	}
	text(func(r *store.EventRow) string { return r.Thread })
	int8s(func(r *store.EventRow) int64 { return r.Seq })
	int8s(func(r *store.EventRow) int64 { return r.SeqEnd })
	text(func(r *store.EventRow) string { return r.Tenant })
	text(func(r *store.EventRow) string { return r.Run })
	text(func(r *store.EventRow) string { return string(r.Type) })
	text(func(r *store.EventRow) string { return r.Turn })
	b = arrayHeader(b, oidInt4, len(rows))
	for _, r := range rows {
		b = binary.BigEndian.AppendUint32(b, 4)
		b = binary.BigEndian.AppendUint32(b, uint32(int32(r.Iteration)))
	}
	ends[col] = len(b)
	col++
	text(func(r *store.EventRow) string { return r.Step })
	b = arrayHeader(b, oidTimestamptz, len(rows))
	for _, r := range rows {
		b = binary.BigEndian.AppendUint32(b, 8)
		b = binary.BigEndian.AppendUint64(b, uint64(ms(r.Time).UnixMicro()-pgEpochMicros))
	}
	ends[col] = len(b)
	col++
	b = arrayHeader(b, oidText, len(rows))
	for _, r := range rows {
		b = binary.BigEndian.AppendUint32(b, uint32(len(r.Payload)))
		b = append(b, r.Payload...)
	}
	ends[col] = len(b)
	e.buf = b
	start := 0
	for i, end := range ends {
		e.params[i] = b[start:end:end]
		start = end
	}
	return e.params[:], nil
}

// arrayHeader starts a one-dimensional array of n elements of type oid, none
// of them NULL, in PostgreSQL's binary format.
func arrayHeader(b []byte, oid uint32, n int) []byte {
	b = binary.BigEndian.AppendUint32(b, 1) // dimensions
	b = binary.BigEndian.AppendUint32(b, 0) // no NULLs
	b = binary.BigEndian.AppendUint32(b, oid)
	b = binary.BigEndian.AppendUint32(b, uint32(n))
	return binary.BigEndian.AppendUint32(b, 1) // lower bound
}

// ListEvents reads a thread's log in seq order: a range scan of the primary
// key over the rows overlapping (after, until], from the last row starting at
// or before after (which may hold after+1). Each row read holds at least one
// wanted event, so limit rows hold enough.
func (s *Store) ListEvents(ctx context.Context, sc chat.Scope, p store.ListEventsParams) ([]event.Event, error) {
	thread, after, until, limit := p.Thread, p.AfterSeq, p.UntilSeq, p.Limit
	if until <= 0 {
		until = math.MaxInt64
	}
	q := `SELECT thread_id, seq, COALESCE(seq_end, seq), tenant, run_id, type, turn, iteration, step, at, payload FROM events
		WHERE thread_id = $1 AND tenant = $2
		AND seq >= COALESCE((SELECT max(seq) FROM events WHERE thread_id = $1 AND seq <= $3), 0)
		AND COALESCE(seq_end, seq) > $3 AND seq <= $4`
	args := []any{thread, sc.Tenant, after, until}
	if p.RunID != "" {
		args = append(args, p.RunID)
		q += ` AND run_id = $` + strconv.Itoa(len(args))
	}
	q += ` ORDER BY seq`
	if limit > 0 {
		args = append(args, limit)
		q += ` LIMIT $` + strconv.Itoa(len(args))
	}
	var rows []store.EventRow
	err := s.scoped(ctx, sc, thread, q, args, func(rs pgx.Rows) error {
		var err error
		rows, err = pgx.CollectRows(rs, func(row pgx.CollectableRow) (store.EventRow, error) {
			var r store.EventRow
			var typ string
			var iteration int32
			err := row.Scan(&r.Thread, &r.Seq, &r.SeqEnd, &r.Tenant, &r.Run, &typ, &r.Turn, &iteration, &r.Step, &r.Time, &r.Payload)
			r.Type, r.Iteration = event.Type(typ), int(iteration)
			return r, err
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list events of %s: %w", thread, err)
	}
	out, err := store.UnpackRows(rows, after, until, limit)
	if err != nil {
		return nil, fmt.Errorf("list events of %s: %w", thread, err)
	}
	return out, nil
}

// LastSeq is the thread's highest stored seq.
func (s *Store) LastSeq(ctx context.Context, tenant, thread string) (int64, error) {
	var n int64
	if err := s.pool.QueryRow(ctx, lastSeqSQL, thread, tenant).Scan(&n); err != nil {
		return 0, fmt.Errorf("last seq of %s: %w", thread, interpretError(err))
	}
	return n, nil
}
