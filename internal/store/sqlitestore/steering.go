package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/store"
)

// SetActiveLeaf makes a message of the conversation its active leaf.
func (s *Store) SetActiveLeaf(ctx context.Context, sc chat.Scope, conversationID, messageID string) error {
	res, err := s.write.ExecContext(ctx, `UPDATE conversations SET active_leaf = ?
		WHERE id = ? AND tenant = ? AND owner = ? AND EXISTS (SELECT 1 FROM messages WHERE id = ? AND conversation_id = ?)`,
		messageID, conversationID, sc.Tenant, sc.User, messageID, conversationID)
	if err != nil {
		return fmt.Errorf("set active leaf of %s: %w", conversationID, interpret(err))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("set active leaf of %s to %s: %w", conversationID, messageID, store.ErrNotFound)
	}
	return nil
}

// ClaimIdempotencyKey records k as sc's unless sc holds it since since.
func (s *Store) ClaimIdempotencyKey(ctx context.Context, sc chat.Scope, k store.IdempotencyKey, since time.Time) (store.IdempotencyKey, bool, error) {
	if k.CreatedAt.IsZero() {
		k.CreatedAt = now()
	}
	k.CreatedAt = k.CreatedAt.UTC().Truncate(time.Millisecond)
	var got store.IdempotencyKey
	claimed := false
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var created int64
		err := tx.QueryRowContext(ctx, `SELECT key, body_hash, run_id, conversation_id, created_at FROM idempotency_keys WHERE tenant = ? AND owner = ? AND key = ?`,
			sc.Tenant, sc.User, k.Key).Scan(&got.Key, &got.BodyHash, &got.RunID, &got.ConversationID, &created)
		switch {
		case err == nil && fromMS(created).After(since):
			got.CreatedAt = fromMS(created)
			return nil
		case err != nil && !errors.Is(err, sql.ErrNoRows):
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO idempotency_keys (tenant, owner, key, body_hash, run_id, conversation_id, created_at) VALUES (?, ?, ?, ?, '', '', ?)
			ON CONFLICT (tenant, owner, key) DO UPDATE SET body_hash = excluded.body_hash, run_id = '', conversation_id = '', created_at = excluded.created_at`,
			sc.Tenant, sc.User, k.Key, k.BodyHash, ms(k.CreatedAt))
		got, claimed = store.IdempotencyKey{Key: k.Key, BodyHash: k.BodyHash, CreatedAt: k.CreatedAt}, err == nil
		return err
	})
	if err != nil {
		return store.IdempotencyKey{}, false, fmt.Errorf("claim idempotency key: %w", interpret(err))
	}
	return got, claimed, nil
}

// SetIdempotencyRun records the run sc's key started.
func (s *Store) SetIdempotencyRun(ctx context.Context, sc chat.Scope, key, runID, conversationID string) error {
	_, err := s.write.ExecContext(ctx, `UPDATE idempotency_keys SET run_id = ?, conversation_id = ? WHERE tenant = ? AND owner = ? AND key = ?`,
		runID, conversationID, sc.Tenant, sc.User, key)
	if err != nil {
		return fmt.Errorf("set idempotency run: %w", interpret(err))
	}
	return nil
}

// ReleaseIdempotencyKey drops sc's claim of key that started no run.
func (s *Store) ReleaseIdempotencyKey(ctx context.Context, sc chat.Scope, key string) error {
	_, err := s.write.ExecContext(ctx, `DELETE FROM idempotency_keys WHERE tenant = ? AND owner = ? AND key = ? AND run_id = ''`, sc.Tenant, sc.User, key)
	if err != nil {
		return fmt.Errorf("release idempotency key: %w", interpret(err))
	}
	return nil
}

const feedbackCols = `id, conversation_id, tenant, owner, run_id, agent_id, rating, comment, tags, created_at, updated_at`

// feedbackFrom names the feedback table's key id, as keysetPage orders by.
const feedbackFrom = `(SELECT message_id AS id, conversation_id, tenant, owner, run_id, agent_id, rating, comment, tags, created_at, updated_at FROM feedback) f`

func scanFeedback(row scanner) (chat.Feedback, error) {
	var f chat.Feedback
	var tags sql.NullString
	var created, updated int64
	err := row.Scan(&f.MessageID, &f.ConversationID, &f.Tenant, &f.Owner, &f.RunID, &f.AgentID, &f.Rating, &f.Comment, &tags, &created, &updated)
	if tags.Valid {
		_ = json.Unmarshal([]byte(tags.String), &f.Tags)
	}
	f.CreatedAt, f.UpdatedAt = fromMS(created), fromMS(updated)
	return f, err
}

// PutFeedback records sc's rating of a message of one of sc's conversations.
func (s *Store) PutFeedback(ctx context.Context, sc chat.Scope, f chat.Feedback) (chat.Feedback, error) {
	at := now().UTC().Truncate(time.Millisecond)
	var out chat.Feedback
	err := s.tx(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `SELECT m.conversation_id, m.run_id, COALESCE(r.agent_id, '') FROM messages m
			JOIN conversations c ON c.id = m.conversation_id
			LEFT JOIN runs r ON r.id = m.run_id
			WHERE m.id = ? AND c.tenant = ? AND c.owner = ?`, f.MessageID, sc.Tenant, sc.User).Scan(&f.ConversationID, &f.RunID, &f.AgentID)
		if err != nil {
			return err
		}
		var tags any
		if len(f.Tags) > 0 {
			b, _ := json.Marshal(f.Tags)
			tags = string(b)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO feedback (message_id, tenant, owner, conversation_id, run_id, agent_id, rating, comment, tags, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (message_id) DO UPDATE SET rating = excluded.rating, comment = excluded.comment, tags = excluded.tags, updated_at = excluded.updated_at`,
			f.MessageID, sc.Tenant, sc.User, f.ConversationID, f.RunID, f.AgentID, f.Rating, f.Comment, tags, ms(at), ms(at)); err != nil {
			return err
		}
		out, err = scanFeedback(tx.QueryRowContext(ctx, `SELECT `+feedbackCols+` FROM `+feedbackFrom+` WHERE id = ?`, f.MessageID))
		return err
	})
	if err != nil {
		return chat.Feedback{}, fmt.Errorf("put feedback on %s: %w", f.MessageID, interpret(err))
	}
	return out, nil
}

// DeleteFeedback withdraws sc's rating of a message.
func (s *Store) DeleteFeedback(ctx context.Context, sc chat.Scope, messageID string) error {
	res, err := s.write.ExecContext(ctx, `DELETE FROM feedback WHERE message_id = ? AND tenant = ? AND owner = ?`, messageID, sc.Tenant, sc.User)
	if err != nil {
		return fmt.Errorf("delete feedback on %s: %w", messageID, interpret(err))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("feedback on %s: %w", messageID, store.ErrNotFound)
	}
	return nil
}

// ConversationFeedback lists sc's ratings in one of sc's conversations.
func (s *Store) ConversationFeedback(ctx context.Context, sc chat.Scope, conversationID string) ([]chat.Feedback, error) {
	out, err := collect(scanFeedback)(s.read.QueryContext(ctx, `SELECT `+feedbackCols+` FROM `+feedbackFrom+`
		WHERE conversation_id = ? AND tenant = ? AND owner = ?`, conversationID, sc.Tenant, sc.User))
	if err != nil {
		return nil, fmt.Errorf("feedback of %s: %w", conversationID, interpret(err))
	}
	return out, nil
}

// ListFeedback pages a tenant's ratings, newest first.
func (s *Store) ListFeedback(ctx context.Context, tenant string, f store.FeedbackFilter, p store.Page) ([]chat.Feedback, string, error) {
	q, args := `SELECT `+feedbackCols+` FROM `+feedbackFrom+` WHERE tenant = ?`, []any{tenant}
	if f.Rating != "" {
		q += ` AND rating = ?`
		args = append(args, f.Rating)
	}
	if f.AgentID != "" {
		q += ` AND agent_id = ?`
		args = append(args, f.AgentID)
	}
	if !f.Since.IsZero() {
		q += ` AND updated_at >= ?`
		args = append(args, ms(f.Since))
	}
	return keysetPage(q, args, "updated_at", true, p, func(f chat.Feedback) store.Cursor { return store.Cursor{At: f.UpdatedAt, ID: f.MessageID} },
		func(q string, args []any) ([]chat.Feedback, error) {
			out, err := collect(scanFeedback)(s.read.QueryContext(ctx, q, args...))
			if err != nil {
				return nil, fmt.Errorf("list feedback: %w", interpret(err))
			}
			return out, nil
		})
}

// ThreadState reads the conversation's shared state.
func (s *Store) ThreadState(ctx context.Context, sc chat.Scope, conversationID string) (json.RawMessage, error) {
	var state sql.NullString
	err := s.read.QueryRowContext(ctx, `SELECT state FROM conversations WHERE id = ? AND tenant = ? AND owner = ?`,
		conversationID, sc.Tenant, sc.User).Scan(&state)
	if err != nil {
		return nil, fmt.Errorf("read state of %s: %w", conversationID, interpret(err))
	}
	return rawJSON(state), nil
}

// SetThreadState replaces the conversation's shared state.
func (s *Store) SetThreadState(ctx context.Context, sc chat.Scope, conversationID string, state json.RawMessage) error {
	res, err := s.write.ExecContext(ctx, `UPDATE conversations SET state = ? WHERE id = ? AND tenant = ? AND owner = ?`,
		nullJSON(state), conversationID, sc.Tenant, sc.User)
	if err != nil {
		return fmt.Errorf("set state of %s: %w", conversationID, interpret(err))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("set state of %s: %w", conversationID, store.ErrNotFound)
	}
	return nil
}

// EnqueueInput stores an input waiting behind the conversation's active run.
func (s *Store) EnqueueInput(ctx context.Context, sc chat.Scope, q store.QueuedInput) (store.QueuedInput, error) {
	if q.ID == "" {
		q.ID = chat.NewID()
	}
	if q.CreatedAt.IsZero() {
		q.CreatedAt = now()
	}
	q.CreatedAt = q.CreatedAt.UTC().Truncate(time.Millisecond)
	q.Tenant, q.Owner = sc.Tenant, sc.User
	res, err := s.write.ExecContext(ctx, `INSERT INTO run_queue (id, tenant, owner, conversation_id, request, created_at)
		SELECT ?, ?, ?, id, ?, ? FROM conversations WHERE id = ? AND tenant = ? AND owner = ?`,
		q.ID, q.Tenant, q.Owner, string(q.Request), q.CreatedAt.UnixMilli(), q.ConversationID, sc.Tenant, sc.User)
	if err != nil {
		return store.QueuedInput{}, fmt.Errorf("enqueue input in %s: %w", q.ConversationID, interpret(err))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return store.QueuedInput{}, fmt.Errorf("enqueue input in %s: %w", q.ConversationID, store.ErrNotFound)
	}
	return q, nil
}

const queuedCols = `id, tenant, owner, conversation_id, request, created_at`

func scanQueued(row scanner) (store.QueuedInput, error) {
	var q store.QueuedInput
	var req string
	var created int64
	if err := row.Scan(&q.ID, &q.Tenant, &q.Owner, &q.ConversationID, &req, &created); err != nil {
		return q, err
	}
	q.Request, q.CreatedAt = json.RawMessage(req), fromMS(created)
	return q, nil
}

// queuedTakeableSQL is TakeQueuedInput's look before it takes: an input
// waits and no run is active.
const queuedTakeableSQL = `SELECT EXISTS (SELECT 1 FROM run_queue WHERE tenant = ? AND conversation_id = ?)
	AND NOT EXISTS (SELECT 1 FROM runs WHERE conversation_id = ? AND status IN ('queued','running','awaiting_input'))`

// TakeQueuedInput removes and returns the conversation's oldest queued
// input, if the conversation has no active run.
func (s *Store) TakeQueuedInput(ctx context.Context, tenant, conversationID string) (store.QueuedInput, error) {
	// Every run's end asks, and almost every conversation has nothing
	// queued: a read (concurrent, in WAL mode) answers that without a turn
	// on the one writer connection. An input queued after this read kicks
	// the queue itself. The delete looks at the runs again, as the read's
	// snapshot may be older than a run started since.
	var takeable bool
	if err := s.rprep.row(ctx, queuedTakeableSQL, tenant, conversationID, conversationID).Scan(&takeable); err != nil {
		return store.QueuedInput{}, fmt.Errorf("take queued input of %s: %w", conversationID, interpret(err))
	}
	if !takeable {
		return store.QueuedInput{}, fmt.Errorf("take queued input of %s: %w", conversationID, store.ErrNotFound)
	}
	q, err := scanQueued(s.write.QueryRowContext(ctx, `DELETE FROM run_queue WHERE id = (
		SELECT id FROM run_queue WHERE tenant = ? AND conversation_id = ?
			AND NOT EXISTS (SELECT 1 FROM runs WHERE conversation_id = ? AND status IN ('queued','running','awaiting_input'))
		ORDER BY created_at, id LIMIT 1)
		RETURNING `+queuedCols, tenant, conversationID, conversationID))
	if err != nil {
		return store.QueuedInput{}, fmt.Errorf("take queued input of %s: %w", conversationID, interpret(err))
	}
	return q, nil
}

// StalledQueues lists conversations with queued inputs and no active run.
func (s *Store) StalledQueues(ctx context.Context, limit int) ([]store.QueuedInput, error) {
	out, err := collect(scanQueued)(s.read.QueryContext(ctx, `SELECT `+queuedCols+` FROM run_queue q
		WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.conversation_id = q.conversation_id AND r.status IN ('queued', 'running', 'awaiting_input'))
		AND NOT EXISTS (SELECT 1 FROM run_queue o WHERE o.conversation_id = q.conversation_id
			AND (o.created_at < q.created_at OR (o.created_at = q.created_at AND o.id < q.id)))
		ORDER BY q.created_at, q.id LIMIT ?`, limit))
	if err != nil {
		return nil, fmt.Errorf("list stalled queues: %w", err)
	}
	return out, nil
}

// QueuedInputs lists the inputs queued in one of sc's conversations, in order.
func (s *Store) QueuedInputs(ctx context.Context, sc chat.Scope, conversationID string) ([]store.QueuedInput, error) {
	if _, err := s.GetConversation(ctx, sc, conversationID); err != nil {
		return nil, err
	}
	out, err := collect(scanQueued)(s.read.QueryContext(ctx, `SELECT `+queuedCols+` FROM run_queue
		WHERE tenant = ? AND owner = ? AND conversation_id = ? ORDER BY created_at, id`, sc.Tenant, sc.User, conversationID))
	if err != nil {
		return nil, fmt.Errorf("list queued inputs of %s: %w", conversationID, err)
	}
	return out, nil
}

// GetQueuedInput is one of sc's queued inputs.
func (s *Store) GetQueuedInput(ctx context.Context, sc chat.Scope, id string) (store.QueuedInput, error) {
	q, err := scanQueued(s.read.QueryRowContext(ctx, `SELECT `+queuedCols+` FROM run_queue WHERE id = ? AND tenant = ? AND owner = ?`,
		id, sc.Tenant, sc.User))
	if err != nil {
		return store.QueuedInput{}, fmt.Errorf("get queued input %s: %w", id, interpret(err))
	}
	return q, nil
}

// DeleteQueuedInput removes one of sc's queued inputs.
func (s *Store) DeleteQueuedInput(ctx context.Context, sc chat.Scope, id string) error {
	res, err := s.write.ExecContext(ctx, `DELETE FROM run_queue WHERE id = ? AND tenant = ? AND owner = ?`, id, sc.Tenant, sc.User)
	if err != nil {
		return fmt.Errorf("delete queued input %s: %w", id, interpret(err))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("delete queued input %s: %w", id, store.ErrNotFound)
	}
	return nil
}
