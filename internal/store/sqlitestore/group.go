package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"runtime"
	"time"

	"github.com/agentchat/agentchat/internal/store/groupcommit"
)

// The writes every run makes (its start, its answer, its end) are
// group-committed, as the event log is: SQLite has one writer, and a
// transaction's BEGIN and COMMIT (its WAL frames, the lock) cost about as
// much for one write as for a hundred; at a few hundred runs a second the
// commits of their starts and ends were a third of the writer's CPU.
//
// A grouped write queues itself; the caller that finds no batch in progress
// leads: it takes every queued write, runs each inside its own savepoint (a
// write that fails, a busy conversation say, is rolled back alone and its
// caller gets its error) and commits them all at once. While it commits, new
// writes queue; when it is done it hands the lead to the first of them, so
// each caller leads at most once and nobody lingers: a write that finds the
// writer idle is committed at once.
//
// Who leads and when each caller's wait ends is package groupcommit's.

// maxGroup bounds one commit's writes, so that the leader's own wait stays
// bounded under a flood.
const maxGroup = 256

// groupReq is one grouped write waiting for its batch.
type groupReq struct {
	groupcommit.Turn
	ctx context.Context
	fn  func(context.Context, *sql.Tx) error
	err error
}

// grouped runs fn in a write transaction it may share with other grouped
// writes, and returns fn's error (interpreted) or the commit's. fn must use
// the context it is given, not ctx: a statement cancelled mid-batch could
// roll back the whole transaction, the other callers' writes with it. ctx is
// looked at before fn runs: a caller gone by then is skipped.
func (s *Store) grouped(ctx context.Context, fn func(context.Context, *sql.Tx) error) error {
	r := &groupReq{ctx: ctx, fn: fn}
	if s.group.Join(r) {
		s.leadGroup()
	}
	return r.err
}

// leadGroup commits the queued writes (the leader's own among them), then
// hands the lead to the first write queued meanwhile, if any.
//
// The batch is taken once the leader holds the write connection, not
// before: while the event log's commit holds it, the writes that queue
// meanwhile join this batch rather than wait for the next one, so a busy
// connection commits more writes per transaction instead of more
// transactions (each commit writes its pages to the WAL again).
func (s *Store) leadGroup() {
	q := &s.group
	// The transaction is the batch's, not one caller's: a caller that goes
	// away must not roll back the others (each is looked at before its turn).
	ctx := context.WithoutCancel(q.First().ctx)
	// The leader runs SQLite for the whole batch on its thread. In a burst
	// of starts, the other requests already runnable (a chat's handler, a
	// run sending its model request) go first: their first tokens wait for
	// their model call, not for this commit (an early run's start has until
	// its model's first token to be stored, run/early.go), and the writes
	// they queue meanwhile join this batch. With nothing else runnable the
	// yield returns at once.
	runtime.Gosched()

	var batch []*groupReq
	// The batch's transaction is labelled as the writer's (busy.go): the
	// leader is whichever caller came first, any goroutine.
	labelled(ctx, partRuns, func(context.Context) {
		tx, err := s.write.BeginTx(ctx, nil)
		batch = q.Take(maxGroup)
		if err != nil {
			for _, r := range batch {
				r.err = interpret(err)
			}
			return
		}
		s.commitGroup(ctx, tx, batch)
	})

	q.Done(batch)
}

// commitGroup runs batch in tx, setting each write's err, and ends tx.
func (s *Store) commitGroup(ctx context.Context, tx *sql.Tx, batch []*groupReq) {
	fail := func(err error) {
		for _, r := range batch {
			if r.err == nil {
				r.err = err
			}
		}
	}
	defer s.held(partRuns, time.Now(), len(batch))
	single := len(batch) == 1
	wrote := 0
	for _, r := range batch {
		if r.err = r.ctx.Err(); r.err != nil {
			continue
		}
		if !single {
			if _, err := s.prep.exec(ctx, tx, savepointSQL); err != nil {
				tx.Rollback()
				fail(interpret(err))
				return
			}
		}
		r.err = r.fn(context.WithoutCancel(r.ctx), tx)
		switch {
		case r.err == nil:
			wrote++
			if !single {
				if _, err := s.prep.exec(ctx, tx, releaseSQL); err != nil {
					tx.Rollback()
					fail(interpret(err))
					return
				}
			}
		case !single:
			r.err = interpret(r.err)
			// A failed statement that ended the transaction (a full disk,
			// an I/O error) makes this fail too: then nothing is kept.
			if _, err := s.prep.exec(ctx, tx, rollbackToSQL); err != nil {
				tx.Rollback()
				fail(errors.Join(r.err, interpret(err)))
				return
			}
			if _, err := s.prep.exec(ctx, tx, releaseSQL); err != nil {
				tx.Rollback()
				fail(interpret(err))
				return
			}
		default:
			r.err = interpret(r.err)
		}
	}
	if wrote == 0 {
		tx.Rollback()
		return
	}
	if err := tx.Commit(); err != nil {
		for _, r := range batch {
			if r.err == nil {
				r.err = interpret(err)
			}
		}
	}
}
