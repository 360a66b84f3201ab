package pgstore

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentchat/agentchat/internal/store/groupcommit"
)

// The writes of every chat (its run's start, the assistant's message, the
// run's end, the claim of the conversation's next queued input) are
// group-committed. At 1000 chats arriving over 2 s each of them waited for
// one of the pool's few connections (77 % of acquires found none idle, about
// 3 s each on average: docs/benchmarks.md, "Issue 25, ninth round:
// PostgreSQL + Redis"), and that queue is where the seconds of added first
// text went; a larger pool moved the convoy into PostgreSQL instead.
//
// A grouped write queues itself; the caller that finds no group in progress
// leads: it acquires a connection, then takes every write queued by then
// (its own among them) and sends them all in one pipelined batch: one round
// trip, one commit. While it does, new writes queue; when it is done it
// hands the lead to the first of them, so each caller leads at most once and
// a write that finds no group in progress is sent at once, as before.
//
// A batch is one implicit transaction, so a statement the database refuses
// rolls the whole group back: then each write of it is sent again in a
// batch of its own, where it fails alone (a busy conversation) or succeeds.
// Nothing of a group that was rolled back was committed, so nothing is
// written twice. A write that finds no row (a conversation that is not the
// caller's) is no error to the database: the group's others commit. Two
// replicas' groups that lock the same two rows in opposite orders deadlock
// until PostgreSQL's deadlock_timeout (1 s) cancels one, which is then
// retried write by write: rare (two replicas writing to the same two
// conversations at once), and correct.
//
// Who leads and when each caller's wait ends is package groupcommit's, as
// for the SQLite store's groups.

// groupTimeout bounds a group's wait for a connection and its round trip:
// the event log's bound on one write (run.writeTimeout).
const groupTimeout = 30 * time.Second

// maxGroup bounds one batch, so that the leader's own wait stays bounded
// under a flood.
const maxGroup = 64

// groupedWrite is one caller's statements in a group's batch: writes, or a
// read that every chat makes (the knowledge search).
type groupedWrite interface {
	// queue queues the write's statements in b.
	queue(b *pgx.Batch)
	// read reads every result of the write's statements from br (the
	// writes of a group share br, each reading its own) and returns the
	// first error.
	read(br pgx.BatchResults) error
}

// groupReq is one grouped write waiting for its group.
type groupReq struct {
	groupcommit.Turn
	ctx   context.Context
	w     groupedWrite
	err   error
	alone bool // the group was rolled back: the caller sends its write on its own
}

// grouped sends w in a batch it may share with other callers' writes and
// returns w's error, not interpreted. ctx is looked at before w is sent: a
// caller gone by then is skipped.
func (s *Store) grouped(ctx context.Context, w groupedWrite) error {
	r := &groupReq{ctx: ctx, w: w}
	if s.group.Join(r) {
		s.leadGroup()
	}
	if !r.alone {
		return r.err
	}
	b := &pgx.Batch{}
	w.queue(b)
	br := s.pool.SendBatch(ctx, b)
	err := w.read(br)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

// leadGroup sends the queued writes (the leader's own among them), then
// hands the lead to the first write queued meanwhile, if any.
//
// The group is taken once the leader holds a connection, not before: the
// writes that queue while it waits for one join its batch rather than each
// waiting for a connection of its own.
func (s *Store) leadGroup() {
	q := &s.group
	// The batch is the group's, not one caller's: a caller that goes away
	// must not cancel the others' writes (each is looked at before it is
	// sent). It is bounded all the same: a database that stops answering
	// (a partition, no reset) would otherwise hold every caller of the
	// group, and every caller queued behind it, for good.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(q.First().ctx), groupTimeout)
	defer cancel()

	conn, err := s.pool.Acquire(ctx)
	batch := q.Take(maxGroup)
	if err != nil {
		for _, r := range batch {
			r.err = err
		}
	} else {
		sendGroup(ctx, conn, batch)
		conn.Release()
	}
	q.Done(batch)
}

// sendGroup sends batch's writes in one batch on conn, setting each one's
// err or alone.
func sendGroup(ctx context.Context, conn batchSender, batch []*groupReq) {
	b := &pgx.Batch{}
	var sent []*groupReq
	for _, r := range batch {
		if r.err = r.ctx.Err(); r.err != nil {
			continue
		}
		sent = append(sent, r)
		r.w.queue(b)
	}
	if len(sent) == 0 {
		return
	}
	br := conn.SendBatch(ctx, b)
	for _, r := range sent {
		r.err = r.w.read(br)
	}
	closeErr := br.Close()
	// An error from the database rolled the whole group back: each write
	// is sent again on its own. Any other error (the connection lost, say)
	// leaves the commit unknown, as it does for a write alone: it is the
	// answer of every write that has none of its own.
	var rolledBack bool
	var lost error
	for _, err := range append(errorsOf(sent), closeErr) {
		var pgErr *pgconn.PgError
		switch {
		case err == nil || errors.Is(err, pgx.ErrNoRows):
		case errors.As(err, &pgErr):
			rolledBack = true
		case lost == nil:
			lost = err
		}
	}
	for _, r := range sent {
		switch {
		case lost != nil:
			if r.err == nil {
				r.err = lost
			}
		case rolledBack:
			r.err, r.alone = nil, true
		}
	}
}

func errorsOf(rs []*groupReq) []error {
	out := make([]error, len(rs))
	for i, r := range rs {
		out[i] = r.err
	}
	return out
}

// rowWrite is one statement whose one row (or none) scan reads.
type rowWrite struct {
	sql  string
	args []any
	scan func(pgx.Row) error
}

func (w *rowWrite) queue(b *pgx.Batch)             { b.Queue(w.sql, w.args...) }
func (w *rowWrite) read(br pgx.BatchResults) error { return w.scan(br.QueryRow()) }

// groupedRow runs one statement through the group and scans its row.
func (s *Store) groupedRow(ctx context.Context, sql string, args []any, scan func(pgx.Row) error) error {
	return s.grouped(ctx, &rowWrite{sql: sql, args: args, scan: scan})
}

// rowsRead is one query whose rows collect reads (and closes).
type rowsRead struct {
	sql     string
	args    []any
	collect func(pgx.Rows) error
}

func (w *rowsRead) queue(b *pgx.Batch) { b.Queue(w.sql, w.args...) }

func (w *rowsRead) read(br pgx.BatchResults) error {
	rows, _ := br.Query() // an error is rows' own: collect returns it
	return w.collect(rows)
}
