package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/store"
)

// StartRun writes a run's start as one pipelined batch: one round trip, and
// one implicit transaction (the batch ends in a single Sync), so a start that
// fails at any step (a busy conversation, the database going away) leaves
// nothing behind: no conversation without its run, no run without its user
// message, no run left "running" that no replica executes.
//
// Starts that count the tenant's runs or check its limits take a transaction
// of their own; the others are group-committed (group.go) with the other
// writes queued while one is acquiring its connection.
func (s *Store) StartRun(ctx context.Context, sc chat.Scope, p *store.RunStart) (store.RunStarted, error) {
	in := *p // the caller's is read only
	if in.MaxExecuting > 0 || len(in.Limits) > 0 {
		return s.startAlone(ctx, sc, in)
	}
	w := &startWrite{sc: sc, in: in}
	err := s.grouped(ctx, w)
	if isConstraint(err, "runs_one_active") {
		// Busy: tell whose run holds the conversation, or try again if it
		// has just ended.
		return s.startAlone(ctx, sc, in)
	}
	if err != nil {
		return store.RunStarted{}, fmt.Errorf("start run: %w", interpretError(err))
	}
	return w.plan.out, nil
}

// startWrite is a start as a grouped write.
type startWrite struct {
	sc   chat.Scope
	in   store.RunStart
	plan *startPlan
}

func (w *startWrite) queue(b *pgx.Batch) { w.plan = queueStart(b, w.sc, w.in) }

func (w *startWrite) read(br pgx.BatchResults) error {
	_, err := w.plan.read(br)
	return err
}

// startAlone writes one start in a batch of its own.
func (s *Store) startAlone(ctx context.Context, sc chat.Scope, in store.RunStart) (store.RunStarted, error) {
	// A busy conversation whose active run ends between our attempt and our
	// reading its id is simply tried again.
	for range 3 {
		out, busy, err := s.startRun(ctx, sc, in)
		if err != nil || !busy {
			return out, err
		}
		var active string
		err = s.pool.QueryRow(ctx, `SELECT id FROM runs WHERE conversation_id = $1 AND status IN `+activeStatuses, out.Run.ConversationID).Scan(&active)
		if err == nil {
			return store.RunStarted{}, fmt.Errorf("start run: %w", &store.BusyError{ActiveRunID: active})
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return store.RunStarted{}, fmt.Errorf("start run: %w", interpretError(err))
		}
	}
	return store.RunStarted{}, fmt.Errorf("start run: %w: conversation %s keeps starting runs", store.ErrConflict, in.Run.ConversationID)
}

// batchSender is a pool or a transaction.
type batchSender interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// startRun makes one attempt; busy reports a conversation with an active run
// (out.Run.ConversationID names it).
func (s *Store) startRun(ctx context.Context, sc chat.Scope, in store.RunStart) (out store.RunStarted, busy bool, err error) {
	b := &pgx.Batch{}
	plan := queueStart(b, sc, in)

	var q batchSender = s.pool
	if in.MaxExecuting > 0 || len(in.Limits) > 0 {
		// Counting and inserting race across replicas: a transaction
		// holding the tenant's advisory lock orders the starts that count.
		tx, berr := s.pool.Begin(ctx)
		if berr != nil {
			return store.RunStarted{}, false, fmt.Errorf("start run: %w", interpretError(berr))
		}
		defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after Commit it is a no-op
		// Two statements: under READ COMMITTED a statement's snapshot is
		// taken when it starts, so a count in the statement that waited for
		// the lock would miss the runs the lock's previous holders committed.
		if _, qerr := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('runs of ' || $1, 0))`, sc.Tenant); qerr != nil {
			return store.RunStarted{}, false, fmt.Errorf("start run: %w", interpretError(qerr))
		}
		if in.MaxExecuting > 0 {
			var n int
			if qerr := tx.QueryRow(ctx, `SELECT count(*) FROM runs WHERE tenant = $1 AND status IN ('queued', 'running')`, sc.Tenant).Scan(&n); qerr != nil {
				return store.RunStarted{}, false, fmt.Errorf("start run: %w", interpretError(qerr))
			}
			if n >= in.MaxExecuting {
				return store.RunStarted{}, false, fmt.Errorf("start run: %w: tenant has %d", store.ErrTooManyRuns, n)
			}
		}
		if qerr := checkLimits(ctx, tx, sc.Tenant, in.Limits); qerr != nil {
			return store.RunStarted{}, false, fmt.Errorf("start run: %w", qerr)
		}
		q = tx
		defer func() {
			if err == nil && !busy {
				if cerr := tx.Commit(ctx); cerr != nil {
					out, err = store.RunStarted{}, fmt.Errorf("start run: %w", interpretError(cerr))
				}
			}
		}()
	}
	br := q.SendBatch(ctx, b)
	busy, err = plan.read(br)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if busy {
		return plan.out, true, nil
	}
	if err != nil {
		return store.RunStarted{}, false, fmt.Errorf("start run: %w", interpretError(err))
	}
	return plan.out, false, nil
}

// startPlan is one start queued in a batch: what its statements will
// return is read into out.
type startPlan struct {
	out                      store.RunStarted
	m                        chat.Message
	newConv, forked, withMsg bool
	reserve                  int64
}

// queueStart queues one start's statements in b: the conversation (created,
// or read to check it is the caller's), the run, the thread's last seq, the
// active branch when the run forks, and the user message.
func queueStart(b *pgx.Batch, sc chat.Scope, in store.RunStart) *startPlan {
	at := now()
	p := &startPlan{reserve: in.ReserveSeqs}
	out := &p.out
	conv := in.NewConversation
	if conv != nil {
		p.newConv = true
		c := *conv
		c.CreatedAt = at // whatever the caller set: the conversation begins with its run
		store.FillConversation(&c, sc, at)
		b.Queue(`INSERT INTO conversations (`+conversationInsertCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			c.ID, c.Tenant, c.Owner, c.Title, c.Engine, c.AgentID, c.CreatedAt, c.UpdatedAt)
		out.Conversation = c
	} else {
		out.Conversation.ID = in.Run.ConversationID
		b.Queue(`SELECT `+conversationCols+` FROM conversations WHERE id = $1 AND tenant = $2 AND owner = $3`,
			out.Conversation.ID, sc.Tenant, sc.User)
	}

	r := in.Run
	r.ConversationID = out.Conversation.ID
	store.FillRun(&r, sc, at)
	r.CreatedAt, r.StartedAt = ms(r.CreatedAt), ms(r.StartedAt)
	r.Error, r.Usage, r.EndedAt, r.CancelRequested = nil, event.Usage{}, nil, false
	out.Run = r
	// The run begins at the fork point asked for, else at the active leaf.
	p.forked = in.Parent != nil
	fork := ""
	if p.forked {
		fork = *in.Parent
	}
	b.Queue(`INSERT INTO runs (id, tenant, owner, conversation_id, turn_id, status, input, engine, model, state, created_at, started_at, lease_owner, lease_epoch, seq_reserved, trace_id, span_id, agent_id, agent_version, parent_id)
		SELECT $1::text, $2::text, $3::text, $4::text, $5::text, $6::text, $7::text, $8::text, $9::text, $10::json, $11::timestamptz, $12::timestamptz, $13::text, $14::bigint,
			CASE WHEN $15::bigint > 0 THEN COALESCE((SELECT COALESCE(seq_end, seq) FROM events WHERE thread_id = $4 AND tenant = $2 ORDER BY seq DESC LIMIT 1), 0) + $15 ELSE 0 END,
			$16::text, $17::text, $18::text, $19::integer,
			CASE WHEN $20::boolean THEN $21::text ELSE (SELECT active_leaf FROM conversations WHERE id = $4 AND tenant = $2) END
		WHERE EXISTS (SELECT 1 FROM conversations WHERE id = $4 AND tenant = $2 AND owner = $3)
		RETURNING parent_id`,
		r.ID, r.Tenant, r.Owner, r.ConversationID, r.TurnID, r.Status, r.Input, r.Engine, r.Model, nullJSON(r.State),
		r.CreatedAt, r.StartedAt, r.LeaseOwner, r.LeaseEpoch, in.ReserveSeqs, r.TraceID, r.SpanID, r.AgentID, r.AgentVersion, p.forked, fork)
	b.Queue(lastSeqSQL, r.ConversationID, sc.Tenant)
	if p.forked {
		// The run's branch is the active one from now on.
		b.Queue(`UPDATE conversations SET active_leaf = $2 WHERE id = $1 AND tenant = $3 AND owner = $4`, r.ConversationID, fork, sc.Tenant, sc.User)
	}

	p.m = in.Message
	p.withMsg = p.m.Role != ""
	if p.withMsg {
		m := &p.m
		m.ConversationID, m.RunID = r.ConversationID, r.ID
		store.FillMessage(m, at)
		m.CreatedAt = ms(m.CreatedAt)
		b.Queue(appendMessageSQL, appendMessageArgs(sc, *m)...)
	}
	return p
}

// read reads the start's results from br, every one of them whatever
// fails (the starts of a group share br, each reading its own), and
// returns the first error; busy reports that it was the run's insert
// meeting the conversation's active run.
func (p *startPlan) read(br pgx.BatchResults) (busy bool, err error) {
	keep := func(e error) {
		if err == nil {
			err = e
		}
	}
	out := &p.out
	if p.newConv {
		_, e := br.Exec()
		keep(e)
	} else {
		c, e := scanConversation(br.QueryRow())
		if e == nil {
			out.Conversation = c
		}
		keep(e)
	}
	if e := br.QueryRow().Scan(&out.Run.ParentID); e != nil {
		busy = err == nil && isConstraint(e, "runs_one_active")
		keep(e)
	}
	var last int64
	if e := br.QueryRow().Scan(&last); e != nil {
		keep(e)
	}
	if p.forked {
		_, e := br.Exec()
		keep(e)
	}
	var updated time.Time
	if p.withMsg {
		keep(br.QueryRow().Scan(&p.m.ParentID, &updated))
	}
	if err != nil {
		return busy, err
	}
	out.LastSeq = last
	if p.reserve > 0 {
		out.Run.SeqReserved = last + p.reserve
	}
	out.Conversation.ActiveLeaf = out.Run.ParentID
	if p.withMsg {
		out.Conversation.UpdatedAt = updated
		out.Message, out.Conversation.ActiveLeaf = p.m, p.m.ID
	}
	out.Conversation.UpdatedAt = out.Conversation.UpdatedAt.UTC()
	return false, nil
}
