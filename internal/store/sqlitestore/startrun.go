package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/store"
)

// The write path's statements, prepared once when the store opens.
const (
	updateConvSQL         = `UPDATE conversations SET updated_at = max(updated_at, ?) WHERE id = ? AND tenant = ? AND owner = ?`
	insertMessageSQL      = `INSERT INTO messages (` + messageCols + `, tenant) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	activeRunSQL          = `SELECT id FROM runs WHERE conversation_id = ? AND status IN ('queued','running','awaiting_input')`
	insertRunSQL          = `INSERT INTO runs (` + runCols + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, NULL, ?, ?, ?, NULL, ?, ?, 0, ?, ?, ?, ?, ?, ?)`
	insertConversationSQL = `INSERT INTO conversations (` + conversationInsertCols + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`
	selectConversationSQL = `SELECT ` + conversationCols + ` FROM conversations WHERE id = ? AND tenant = ? AND owner = ?`
	countExecutingSQL     = `SELECT count(*) FROM runs WHERE tenant = ? AND status IN ('queued','running')`
	savepointSQL          = `SAVEPOINT start`
	releaseSQL            = `RELEASE start`
	rollbackToSQL         = `ROLLBACK TO start`
)

// hotStatements are the write pool's statements prepared when the store
// opens: a run's start, its log, its messages and its end.
var hotStatements = []string{updateConvSQL, insertMessageSQL, activeRunSQL, insertRunSQL, insertConversationSQL, selectConversationSQL, countExecutingSQL, savepointSQL, releaseSQL, rollbackToSQL, lastSeqSQL, insertEventSQL,
	activeLeafSQL, runParentSQL, setActiveLeafSQL, selectRunSQL, updateRunSQL, insertUsageSQL}

// Run starts are group-committed, as the event log is: SQLite has one
// writer, and a commit (its WAL frames, the lock) costs about as much for
// one start as for a hundred. StartRun queues its start; the caller that
// finds no batch in progress leads: it takes every queued start, writes each
// inside its own savepoint (a start that fails, a busy conversation say,
// is rolled back alone and its caller gets its error) and commits them all
// at once. While it commits, new starts queue; when it is done it hands the
// lead to the first of them, so each caller leads at most once and nobody
// lingers: a start that finds the writer idle is committed at once.
type starts struct {
	mu      sync.Mutex
	queue   []*startReq
	leading bool // a batch is in progress; the next leader is handed over
}

// maxStartBatch bounds one commit's starts, so that the leader's own wait
// stays bounded under a flood.
const maxStartBatch = 256

// startReq is one StartRun call waiting for its batch.
type startReq struct {
	ctx  context.Context
	sc   chat.Scope
	in   store.RunStart
	out  store.RunStarted
	err  error
	done chan bool // receives true: lead the next batch; false: out and err are set
}

// StartRun writes a run's start (the conversation when new, the run, its
// user message, the thread's last seq) in a transaction it may share with
// other starts; it fails alone.
func (s *Store) StartRun(ctx context.Context, sc chat.Scope, in store.RunStart) (store.RunStarted, error) {
	r := &startReq{ctx: ctx, sc: sc, in: in, done: make(chan bool, 1)}
	q := &s.starts
	q.mu.Lock()
	q.queue = append(q.queue, r)
	lead := !q.leading
	q.leading = true
	q.mu.Unlock()
	// Waiting ignores ctx: the leader looks at it before writing the start
	// and skips it when it is done, so the wait is bounded by one batch, and
	// the caller never leaves a start that is then committed behind its back.
	if lead || <-r.done {
		s.leadStarts()
	}
	if r.err != nil {
		return store.RunStarted{}, fmt.Errorf("start run: %w", r.err)
	}
	return r.out, nil
}

// leadStarts commits the queued starts (the leader's own among them), then
// hands the lead to the first start queued meanwhile, if any.
func (s *Store) leadStarts() {
	q := &s.starts
	q.mu.Lock()
	n := min(len(q.queue), maxStartBatch)
	batch := q.queue[:n:n]
	q.queue = append([]*startReq(nil), q.queue[n:]...)
	q.mu.Unlock()

	s.commitStarts(batch)

	q.mu.Lock()
	var next *startReq
	if len(q.queue) > 0 {
		next = q.queue[0]
	} else {
		q.leading = false
	}
	q.mu.Unlock()
	for _, r := range batch {
		r.done <- false
	}
	if next != nil {
		next.done <- true
	}
}

// commitStarts writes batch in one transaction, setting each start's out or err.
func (s *Store) commitStarts(batch []*startReq) {
	// The transaction is the batch's, not one caller's: a caller that goes
	// away must not roll back the others (each is looked at before its turn).
	ctx := context.WithoutCancel(batch[0].ctx)
	fail := func(err error) {
		for _, r := range batch {
			if r.err == nil {
				r.err = err
			}
		}
	}
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		fail(interpret(err))
		return
	}
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
		r.out, r.err = s.startRunTx(ctx, tx, r.sc, r.in)
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
				r.err, r.out = interpret(err), store.RunStarted{}
			}
		}
	}
}

// startRunTx writes one start in tx.
func (s *Store) startRunTx(ctx context.Context, tx *sql.Tx, sc chat.Scope, in store.RunStart) (store.RunStarted, error) {
	var out store.RunStarted
	at := now()
	if c := in.NewConversation; c != nil {
		c.CreatedAt = at // whatever the caller set: the conversation begins with its run
		store.FillConversation(c, sc, at)
		if _, err := s.prep.exec(ctx, tx, insertConversationSQL,
			c.ID, c.Tenant, c.Owner, c.Title, c.Engine, c.AgentID, ms(at), ms(at)); err != nil {
			return out, err
		}
		out.Conversation = *c
	} else {
		var err error
		if out.Conversation, err = scanConversation(s.prep.queryRow(ctx, tx, selectConversationSQL,
			in.Run.ConversationID, sc.Tenant, sc.User)); err != nil {
			return out, err
		}
	}
	if in.MaxExecuting > 0 {
		var n int
		if err := s.prep.queryRow(ctx, tx, countExecutingSQL, sc.Tenant).Scan(&n); err != nil {
			return out, err
		}
		if n >= in.MaxExecuting {
			return out, fmt.Errorf("%w: tenant has %d", store.ErrTooManyRuns, n)
		}
	}
	// The limits see the starts committed and those of this batch before
	// this one (the same transaction): SQLite's one writer orders them.
	if err := checkLimits(ctx, tx, sc.Tenant, in.Limits); err != nil {
		return out, err
	}
	r := in.Run
	r.ConversationID = out.Conversation.ID
	var last sql.NullInt64
	if err := s.prep.queryRow(ctx, tx, lastSeqSQL, r.ConversationID, sc.Tenant).Scan(&last); err != nil {
		return out, err
	}
	out.LastSeq = last.Int64
	if in.ReserveSeqs > 0 {
		r.SeqReserved = out.LastSeq + in.ReserveSeqs
	}
	r.ParentID = out.Conversation.ActiveLeaf
	if in.Parent != nil {
		r.ParentID = *in.Parent
	}
	if err := s.insertRun(ctx, tx, sc, &r, at); err != nil {
		return out, err
	}
	if in.Parent != nil {
		// The run's branch is the active one from now on.
		if _, err := tx.ExecContext(ctx, `UPDATE conversations SET active_leaf = ? WHERE id = ?`, r.ParentID, r.ConversationID); err != nil {
			return out, err
		}
		out.Conversation.ActiveLeaf = r.ParentID
	}
	out.Run = r
	if in.Message.Role == "" {
		return out, nil
	}
	m := in.Message
	m.ConversationID, m.RunID = r.ConversationID, r.ID
	if err := s.insertMessage(ctx, tx, sc, &m, at); err != nil {
		return out, err
	}
	out.Message = m
	out.Conversation.UpdatedAt = later(m.CreatedAt, out.Conversation.UpdatedAt)
	out.Conversation.ActiveLeaf = m.ID
	return out, nil
}
