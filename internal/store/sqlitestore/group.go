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
// leads: it takes every queued write, runs them (a write that fails, a busy
// conversation say, is rolled back alone and its caller gets its error:
// commitGroup) and commits them all at once. While it commits, new
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
// looked at before fn runs: a caller gone by then is skipped. fn may run
// more than once (commitGroup tries a batch again when one of its writes
// fails), each time in a transaction that does not keep what the runs
// before wrote: it must write and set the same from its arguments each
// time, not from what a run before set.
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
//
// The writes run without savepoints first: a savepoint and its release are
// two statements more per write (a chat's three grouped writes made nine
// statements fifteen), and inside a savepoint SQLite copies each page a write
// changes, already changed by the batch's writes before it, to its
// statement journal, so that the page can be rolled back alone; the
// batch's writes share their tables' last pages, so that was almost every
// page they wrote (docs/benchmarks.md, "eleventh round"). A write that
// fails among them may have left some of its rows, which only a savepoint
// could take back alone: the transaction is rolled back and the batch
// tried again in a new one, from that write on each inside its own
// savepoint, as before. Writes fail rarely (a start in a busy
// conversation, a conversation that is not the caller's), so a batch is
// tried once almost always, twice at most but for a write that fails the
// second time where it succeeded the first.
func (s *Store) commitGroup(ctx context.Context, tx *sql.Tx, batch []*groupReq) {
	from, guarded := 0, len(batch)
	for {
		var again bool
		if from, guarded, again = s.tryGroup(ctx, tx, batch, from, guarded); !again {
			return
		}
		var err error
		if tx, err = s.write.BeginTx(ctx, nil); err != nil {
			for _, r := range batch[from:] {
				r.err = interpret(err)
			}
			return
		}
	}
}

// tryGroup runs batch[from:] in tx, those from guarded on each inside a
// savepoint, setting each write's err, and ends tx. A write before guarded
// that fails rolls tx back; then again says to try the batch anew from
// from, guarded from guarded on (the failed write's own index when writes
// before it were kept). The writes before from have their errors already.
func (s *Store) tryGroup(ctx context.Context, tx *sql.Tx, batch []*groupReq, from, guarded int) (nextFrom, nextGuarded int, again bool) {
	defer s.held(partRuns, time.Now(), len(batch)-from)
	fail := func(err error) {
		for _, r := range batch[from:] {
			if r.err == nil {
				r.err = err
			}
		}
	}
	kept := 0
	for i := from; i < len(batch); i++ {
		r := batch[i]
		if r.err = r.ctx.Err(); r.err != nil {
			continue
		}
		if i < guarded {
			if r.err = r.fn(context.WithoutCancel(r.ctx), tx); r.err == nil {
				kept++
				continue
			}
			r.err = interpret(r.err)
			tx.Rollback()
			if kept > 0 {
				// What it wrote cannot be told from what the writes before
				// it kept: all again, it in a savepoint.
				return from, i, true
			}
			// Nothing before it was kept and the rollback took back what it
			// wrote: it failed on the state the batch began with, as it
			// would have alone. Its error stands; the rest go again.
			return i + 1, guarded, i+1 < len(batch)
		}
		if _, err := s.prep.exec(ctx, tx, savepointSQL); err != nil {
			tx.Rollback()
			fail(interpret(err))
			return from, guarded, false
		}
		r.err = r.fn(context.WithoutCancel(r.ctx), tx)
		if r.err == nil {
			kept++
			if _, err := s.prep.exec(ctx, tx, releaseSQL); err != nil {
				tx.Rollback()
				fail(interpret(err))
				return from, guarded, false
			}
			continue
		}
		r.err = interpret(r.err)
		// A failed statement that ended the transaction (a full disk,
		// an I/O error) makes this fail too: then nothing is kept.
		if _, err := s.prep.exec(ctx, tx, rollbackToSQL); err != nil {
			tx.Rollback()
			fail(errors.Join(r.err, interpret(err)))
			return from, guarded, false
		}
		if _, err := s.prep.exec(ctx, tx, releaseSQL); err != nil {
			tx.Rollback()
			fail(interpret(err))
			return from, guarded, false
		}
	}
	if kept == 0 {
		tx.Rollback()
		return from, guarded, false
	}
	if err := tx.Commit(); err != nil {
		fail(interpret(err))
	}
	return from, guarded, false
}
