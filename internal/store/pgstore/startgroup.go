package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/store"
)

// Run starts are group-committed: at 1000 chats arriving over 2 s, each
// start waited for one of the pool's few connections (77 % of acquires
// found none idle, about 3 s each on average: docs/benchmarks.md, "Issue
// 25, ninth round: PostgreSQL + Redis"), and that queue is where the
// seconds of added first text went. A larger pool moved the convoy into
// PostgreSQL instead.
//
// A start queues itself; the caller that finds no group in progress leads:
// it acquires a connection, then takes every start queued by then (its own
// among them) and sends them all in one pipelined batch, one round trip and
// one commit. While it does, new starts queue; when it is done it hands the
// lead to the first of them, so each caller leads at most once and a start
// that finds no group in progress is sent at once, as before.
//
// A batch is one implicit transaction, so one statement that fails rolls
// back the whole group: then every start of it is tried again on its own
// (startAlone), where it fails alone (a busy conversation) or succeeds.
// Nothing of a group that failed was committed, so none is written twice.
// A start that finds no row (a conversation that is not the caller's)
// fails without an error in the database: the group's others commit.
type startGroup struct {
	mu      sync.Mutex
	queue   []*startReq
	leading bool // a group is in progress; the next leader is handed over
}

// maxStartGroup bounds one batch, so that the leader's own wait stays
// bounded under a flood.
const maxStartGroup = 64

// startReq is one start waiting for its group.
type startReq struct {
	ctx   context.Context
	sc    chat.Scope
	in    store.RunStart
	out   store.RunStarted
	err   error
	alone bool      // the group failed: the caller writes this start on its own
	done  chan bool // receives true: lead the next group; false: out or err or alone is set
}

// startGrouped writes one start in a batch it may share with other starts.
func (s *Store) startGrouped(ctx context.Context, sc chat.Scope, in store.RunStart) (store.RunStarted, error) {
	r := &startReq{ctx: ctx, sc: sc, in: in, done: make(chan bool, 1)}
	q := &s.starts
	q.mu.Lock()
	q.queue = append(q.queue, r)
	lead := !q.leading
	q.leading = true
	q.mu.Unlock()
	// Waiting ignores ctx: the leader looks at it before sending the start
	// and skips it when it is done, so the wait is bounded by one group, and
	// the caller never leaves a start that is then committed behind its back.
	if lead || <-r.done {
		s.leadStarts()
	}
	if r.alone {
		return s.startAlone(ctx, sc, in)
	}
	return r.out, r.err
}

// leadStarts sends the queued starts (the leader's own among them), then
// hands the lead to the first start queued meanwhile, if any.
//
// The group is taken once the leader holds a connection, not before: the
// starts that queue while it waits for one join its batch rather than each
// waiting for a connection of its own.
func (s *Store) leadStarts() {
	q := &s.starts
	q.mu.Lock()
	// The batch is the group's, not one caller's: a caller that goes away
	// must not cancel the others' starts (each is looked at before it is sent).
	ctx := context.WithoutCancel(q.queue[0].ctx)
	q.mu.Unlock()

	conn, err := s.pool.Acquire(ctx)
	q.mu.Lock()
	n := min(len(q.queue), maxStartGroup)
	group := q.queue[:n:n]
	q.queue = append([]*startReq(nil), q.queue[n:]...)
	q.mu.Unlock()
	if err != nil {
		for _, r := range group {
			r.err = fmt.Errorf("start run: %w", interpretError(err))
		}
	} else {
		sendStarts(ctx, conn, group)
		conn.Release()
	}

	q.mu.Lock()
	var next *startReq
	if len(q.queue) > 0 {
		next = q.queue[0]
	} else {
		q.leading = false
	}
	q.mu.Unlock()
	for _, r := range group {
		r.done <- false
	}
	if next != nil {
		next.done <- true
	}
}

// sendStarts writes group's starts in one batch on conn, setting each
// start's out, err or alone.
func sendStarts(ctx context.Context, conn batchSender, group []*startReq) {
	b := &pgx.Batch{}
	var sent []*startReq
	var plans []*startPlan
	for _, r := range group {
		if r.err = r.ctx.Err(); r.err != nil {
			continue
		}
		sent = append(sent, r)
		plans = append(plans, queueStart(b, r.sc, r.in))
	}
	if len(sent) == 0 {
		return
	}
	br := conn.SendBatch(ctx, b)
	errs := make([]error, len(sent))
	for i, p := range plans {
		_, errs[i] = p.read(br) // a busy start is the database's error: the group is retried
	}
	closeErr := br.Close()
	// An error from the database rolled the whole group back: each start is
	// tried again on its own. Any other error (the connection lost, say)
	// leaves the commit unknown, as it does for a start alone: it is the
	// answer of every start that has no answer of its own.
	var rolledBack bool
	var lost error
	for _, err := range append(errs, closeErr) {
		var pgErr *pgconn.PgError
		switch {
		case err == nil || errors.Is(err, pgx.ErrNoRows):
		case errors.As(err, &pgErr):
			rolledBack = true
		case lost == nil:
			lost = err
		}
	}
	for i, r := range sent {
		switch {
		case rolledBack && lost == nil:
			r.alone = true
		case errs[i] != nil:
			r.err = fmt.Errorf("start run: %w", interpretError(errs[i]))
		case lost != nil:
			r.err = fmt.Errorf("start run: %w", interpretError(lost))
		default:
			r.out = plans[i].out
		}
	}
}
