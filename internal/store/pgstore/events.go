package pgstore

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

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
	if err := insertEventRows(ctx, s.events, rows); err != nil {
		return fmt.Errorf("append %d events: %w", len(evs), interpretError(err))
	}
	return nil
}

// insertEventRows inserts packed rows as one INSERT of unnest(arrays).
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
	_, err := db.Exec(ctx, `INSERT INTO events (thread_id, seq, seq_end, tenant, run_id, type, turn, iteration, step, at, payload)
		SELECT t, COALESCE((SELECT CASE WHEN COALESCE(e.seq_end, e.seq) >= u.s THEN e.seq END FROM events e
				WHERE e.thread_id = u.t AND e.seq <= u.se ORDER BY e.seq DESC LIMIT 1), u.s),
			NULLIF(se, s), te, r, ty, tu, i, st, a, p::json
		FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::text[], $8::integer[], $9::text[], $10::timestamptz[], $11::text[])
			AS u (t, s, se, te, r, ty, tu, i, st, a, p)`,
		threads, seqs, ends, tenants, runs, types, turns, iterations, steps, ats, payloads)
	return err
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
