package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/store"
)

// The write path's statements, prepared once when the store opens.
const (
	updateConvSQL         = `UPDATE conversations SET updated_at = max(updated_at, ?) WHERE id = ? AND tenant = ? AND owner = ?`
	insertMessageSQL      = `INSERT INTO messages (` + messageCols + `, tenant) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	activeRunSQL          = `SELECT id FROM runs WHERE conversation_id = ? AND status IN ('queued','running','awaiting_input')`
	insertRunSQL          = `INSERT INTO runs (` + runCols + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, NULL, ?, ?, ?, NULL, ?, ?, 0, ?, ?, ?, ?, ?, ?)`
	insertConversationSQL = `INSERT INTO conversations (` + conversationInsertCols + `, active_leaf) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`
	selectConversationSQL = `SELECT ` + conversationCols + ` FROM conversations WHERE id = ? AND tenant = ? AND owner = ?`
	countExecutingSQL     = `SELECT count(*) FROM runs WHERE tenant = ? AND status IN ('queued','running')`
	savepointSQL          = `SAVEPOINT start`
	releaseSQL            = `RELEASE start`
	rollbackToSQL         = `ROLLBACK TO start`
)

// hotStatements are the write pool's statements prepared when the store
// opens: a run's start, its log, its messages and its end.
var hotStatements = append([]string{updateConvSQL, insertMessageSQL, activeRunSQL, insertRunSQL, insertConversationSQL, selectConversationSQL, countExecutingSQL, savepointSQL, releaseSQL, rollbackToSQL, lastSeqSQL, insertEventSQL,
	messagePlaceSQL, appendedSQL, selectRunSQL, updateRunSQL, insertUsageSQL, threadNumberSQL, newThreadSQL, legacyLastSQL},
	groupInserts()...)

// StartRun writes a run's start (the conversation when new, the run, its
// user message, the thread's last seq) in a transaction it may share with
// other writes (group.go); it fails alone.
func (s *Store) StartRun(ctx context.Context, sc chat.Scope, in *store.RunStart) (store.RunStarted, error) {
	var out store.RunStarted
	err := s.grouped(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		out, err = s.startRunTx(ctx, tx, sc, *in) // a copy for each try: startRunTx changes it
		return err
	})
	if err != nil {
		return store.RunStarted{}, fmt.Errorf("start run: %w", err)
	}
	return out, nil
}

// startRunTx writes one start in tx.
func (s *Store) startRunTx(ctx context.Context, tx *sql.Tx, sc chat.Scope, in store.RunStart) (store.RunStarted, error) {
	var out store.RunStarted
	at := now()
	// A new conversation's first message has no parent and is its active
	// leaf, and the new conversation has no run: its start writes the
	// three rows and reads nothing but the thread's last seq (a thread may
	// outlive a conversation of the same id), where a start in an existing
	// conversation looks at its runs, its leaf and the run's messages.
	var first *chat.Message
	if c := in.NewConversation; c != nil {
		c.CreatedAt = at // whatever the caller set: the conversation begins with its run
		store.FillConversation(c, sc, at)
		leaf, updated := "", at
		if in.Message.Role != "" && in.Parent == nil {
			m := in.Message
			store.FillMessage(&m, at)
			m.CreatedAt = m.CreatedAt.UTC().Truncate(time.Millisecond)
			first, leaf, updated = &m, m.ID, later(m.CreatedAt, at)
		}
		if _, err := s.prep.exec(ctx, tx, insertConversationSQL,
			c.ID, c.Tenant, c.Owner, c.Title, c.Engine, c.AgentID, ms(at), ms(updated), leaf); err != nil {
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
	if err := s.insertRun(ctx, tx, sc, &r, at, in.NewConversation != nil); err != nil {
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
	if first != nil {
		m.ID, m.CreatedAt, m.ParentID = first.ID, first.CreatedAt, ""
		if _, err := s.prep.exec(ctx, tx, insertMessageSQL,
			m.ID, m.ConversationID, m.Role, m.Content, nullJSON(m.Parts), nullJSON(m.Metadata), m.RunID, m.ToolName, m.ToolCallID, ms(m.CreatedAt), m.ParentID, sc.Tenant); err != nil {
			return out, err
		}
	} else if err := s.insertMessage(ctx, tx, sc, &m, at); err != nil {
		return out, err
	}
	out.Message = m
	out.Conversation.UpdatedAt = later(m.CreatedAt, out.Conversation.UpdatedAt)
	out.Conversation.ActiveLeaf = m.ID
	return out, nil
}
