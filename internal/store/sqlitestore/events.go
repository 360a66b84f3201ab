package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/store"
)

// The event log: rows as store.PackEvents makes them. seq_end is NULL for a
// row holding one event (so rows written before ranges existed need no
// rewrite) and the last seq of a range otherwise.

// insertEventSQL inserts one row unless it overlaps a stored row of its
// thread. The only stored row that can overlap seqs s..e is the last one
// starting at or before e (rows never overlap); when it reaches s, the new
// row is given that row's seq, and the (thread, seq) unique index refuses it
// as it refuses any repeated seq: one index probe, no second statement, and
// rows inserted earlier in the same transaction are seen.
const insertEventSQL = `INSERT INTO events (thread_id, seq, seq_end, tenant, run_id, type, turn, iteration, step, at, payload)
	VALUES (?, coalesce((SELECT CASE WHEN coalesce(seq_end, seq) >= ? THEN seq END FROM events
		WHERE thread_id = ? AND seq <= ? ORDER BY seq DESC LIMIT 1), ?), ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// lastSeqSQL reads a thread's last seq (?1 thread, ?2 tenant): the end of its
// row with the greatest seq, one backward probe of the (thread, seq) index.
const lastSeqSQL = `SELECT coalesce((SELECT coalesce(seq_end, seq) FROM events WHERE thread_id = ?1 AND tenant = ?2 ORDER BY seq DESC LIMIT 1), 0)`

// AppendEvents writes a batch of events in one transaction, packed into rows.
func (s *Store) AppendEvents(ctx context.Context, evs []event.Event) error {
	if len(evs) == 0 {
		return nil
	}
	rows, err := store.PackEvents(evs)
	if err != nil {
		return fmt.Errorf("append %d events: %w", len(evs), err)
	}
	err = s.txFor(ctx, partEvents, len(evs), func(tx *sql.Tx) error { return s.insertEventRows(ctx, tx, rows) })
	if err != nil {
		return fmt.Errorf("append %d events: %w", len(evs), err)
	}
	return nil
}

// insertEventRows inserts packed rows in tx.
func (s *Store) insertEventRows(ctx context.Context, tx *sql.Tx, rows []store.EventRow) error {
	stmt, err := s.prep.stmt(ctx, tx, insertEventSQL)
	if err != nil {
		return err
	}
	defer stmt.Close()
	// The rows are inserted under a context without cancellation, looked
	// at between rows instead: given one that can end, the driver starts a
	// goroutine (and a progress handler) to interrupt each statement, which
	// cost more than the insert itself. A row insert does not wait (the
	// write pool's one connection holds the write lock from BeginTx), so
	// a batch still stops within a row of ctx's end, and the transaction
	// still ends with it.
	rowCtx := context.WithoutCancel(ctx)
	for _, r := range rows {
		if err := ctx.Err(); err != nil {
			return err
		}
		var end any
		if r.IsRange() {
			end = r.SeqEnd
		}
		// Plain ? parameters, each bound once: numbered ones cost the
		// driver a name lookup per parameter per row.
		if _, err := stmt.ExecContext(rowCtx, r.Thread, r.Seq, r.Thread, r.SeqEnd, r.Seq, end, r.Tenant, r.Run, string(r.Type), r.Turn, r.Iteration, r.Step,
			ms(r.Time), string(r.Payload)); err != nil {
			return err
		}
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
	q := `SELECT thread_id, seq, coalesce(seq_end, seq), tenant, run_id, type, turn, iteration, step, at, payload FROM events
		WHERE thread_id = ?1 AND tenant = ?2
		AND seq >= coalesce((SELECT seq FROM events WHERE thread_id = ?1 AND seq <= ?3 ORDER BY seq DESC LIMIT 1), 0)
		AND coalesce(seq_end, seq) > ?3`
	args := []any{thread, sc.Tenant, after}
	if until > 0 {
		q += ` AND seq <= ?`
		args = append(args, until)
	}
	if p.RunID != "" {
		q += ` AND run_id = ?`
		args = append(args, p.RunID)
	}
	q += ` ORDER BY seq`
	if limit > 0 {
		q += ` LIMIT ?`
		args = append(args, limit)
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
		err = s.write.QueryRowContext(ctx, lastSeqSQL, thread, tenant).Scan(&n)
		s.held(partReads, start, 1)
	})
	if err != nil {
		return 0, fmt.Errorf("last seq of %s: %w", thread, interpret(err))
	}
	return n, nil
}
