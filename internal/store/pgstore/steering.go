package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/store"
)

// SetActiveLeaf makes a message of the conversation its active leaf.
func (s *Store) SetActiveLeaf(ctx context.Context, sc chat.Scope, conversationID, messageID string) error {
	tag, err := s.pool.Exec(ctx, `UPDATE conversations SET active_leaf = $5
		WHERE id = $1 AND tenant = $2 AND owner = $3 AND EXISTS (SELECT 1 FROM messages WHERE id = $4 AND conversation_id = $1)`,
		conversationID, sc.Tenant, sc.User, messageID, messageID)
	if err != nil {
		return fmt.Errorf("set active leaf of %s: %w", conversationID, interpretError(err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("set active leaf of %s to %s: %w", conversationID, messageID, store.ErrNotFound)
	}
	return nil
}

// ClaimIdempotencyKey records k as sc's unless sc holds it since since: one
// statement, so of racing claims exactly one inserts (or replaces an
// expired record) and the others read the winner's.
func (s *Store) ClaimIdempotencyKey(ctx context.Context, sc chat.Scope, k store.IdempotencyKey, since time.Time) (store.IdempotencyKey, bool, error) {
	if k.CreatedAt.IsZero() {
		k.CreatedAt = now()
	}
	k.CreatedAt = ms(k.CreatedAt)
	for range 3 {
		var got store.IdempotencyKey
		err := s.pool.QueryRow(ctx, `INSERT INTO idempotency_keys (tenant, owner, key, body_hash, run_id, conversation_id, created_at) VALUES ($1, $2, $3, $4, '', '', $5)
			ON CONFLICT (tenant, owner, key) DO UPDATE SET body_hash = EXCLUDED.body_hash, run_id = '', conversation_id = '', created_at = EXCLUDED.created_at
			WHERE idempotency_keys.created_at <= $6
			RETURNING key, body_hash, run_id, conversation_id, created_at`,
			sc.Tenant, sc.User, k.Key, k.BodyHash, k.CreatedAt, since).Scan(&got.Key, &got.BodyHash, &got.RunID, &got.ConversationID, &got.CreatedAt)
		if err == nil {
			got.CreatedAt = got.CreatedAt.UTC()
			return got, true, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return store.IdempotencyKey{}, false, fmt.Errorf("claim idempotency key: %w", interpretError(err))
		}
		err = s.pool.QueryRow(ctx, `SELECT key, body_hash, run_id, conversation_id, created_at FROM idempotency_keys WHERE tenant = $1 AND owner = $2 AND key = $3`,
			sc.Tenant, sc.User, k.Key).Scan(&got.Key, &got.BodyHash, &got.RunID, &got.ConversationID, &got.CreatedAt)
		if err == nil {
			got.CreatedAt = got.CreatedAt.UTC()
			return got, false, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return store.IdempotencyKey{}, false, fmt.Errorf("claim idempotency key: %w", interpretError(err))
		}
		// Released meanwhile: claim again.
	}
	return store.IdempotencyKey{}, false, fmt.Errorf("claim idempotency key: %w", store.ErrConflict)
}

// SetIdempotencyRun records the run sc's key started.
func (s *Store) SetIdempotencyRun(ctx context.Context, sc chat.Scope, key, runID, conversationID string) error {
	_, err := s.pool.Exec(ctx, `UPDATE idempotency_keys SET run_id = $4, conversation_id = $5 WHERE tenant = $1 AND owner = $2 AND key = $3`,
		sc.Tenant, sc.User, key, runID, conversationID)
	if err != nil {
		return fmt.Errorf("set idempotency run: %w", interpretError(err))
	}
	return nil
}

// ReleaseIdempotencyKey drops sc's claim of key that started no run.
func (s *Store) ReleaseIdempotencyKey(ctx context.Context, sc chat.Scope, key string) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE tenant = $1 AND owner = $2 AND key = $3 AND run_id = ''`, sc.Tenant, sc.User, key)
	if err != nil {
		return fmt.Errorf("release idempotency key: %w", interpretError(err))
	}
	return nil
}

const feedbackCols = `id, conversation_id, tenant, owner, run_id, agent_id, rating, comment, tags, created_at, updated_at`

// feedbackFrom names the feedback table's key id, as keysetPage orders by.
const feedbackFrom = `(SELECT message_id AS id, conversation_id, tenant, owner, run_id, agent_id, rating, comment, tags, created_at, updated_at FROM feedback) f`

func scanFeedback(row pgx.Row) (chat.Feedback, error) {
	var f chat.Feedback
	var tags []byte
	err := row.Scan(&f.MessageID, &f.ConversationID, &f.Tenant, &f.Owner, &f.RunID, &f.AgentID, &f.Rating, &f.Comment, &tags, &f.CreatedAt, &f.UpdatedAt)
	if len(tags) > 0 {
		_ = json.Unmarshal(tags, &f.Tags)
	}
	f.CreatedAt, f.UpdatedAt = f.CreatedAt.UTC(), f.UpdatedAt.UTC()
	return f, err
}

func collectFeedback(row pgx.CollectableRow) (chat.Feedback, error) { return scanFeedback(row) }

// PutFeedback records sc's rating of a message of one of sc's conversations.
func (s *Store) PutFeedback(ctx context.Context, sc chat.Scope, f chat.Feedback) (chat.Feedback, error) {
	var tags any
	if len(f.Tags) > 0 {
		b, _ := json.Marshal(f.Tags)
		tags = string(b)
	}
	out, err := scanFeedback(s.pool.QueryRow(ctx, `WITH m AS (
			SELECT m.id, m.conversation_id, m.run_id, COALESCE(r.agent_id, '') AS agent_id FROM messages m
			JOIN conversations c ON c.id = m.conversation_id
			LEFT JOIN runs r ON r.id = m.run_id
			WHERE m.id = $1 AND c.tenant = $2 AND c.owner = $3
		), u AS (
			INSERT INTO feedback (message_id, tenant, owner, conversation_id, run_id, agent_id, rating, comment, tags, created_at, updated_at)
			SELECT m.id, $2, $3, m.conversation_id, m.run_id, m.agent_id, $4, $5, $6::json, $7, $7 FROM m
			ON CONFLICT (message_id) DO UPDATE SET rating = EXCLUDED.rating, comment = EXCLUDED.comment, tags = EXCLUDED.tags, updated_at = EXCLUDED.updated_at
			RETURNING message_id AS id, conversation_id, tenant, owner, run_id, agent_id, rating, comment, tags, created_at, updated_at
		)
		SELECT `+feedbackCols+` FROM u`, f.MessageID, sc.Tenant, sc.User, f.Rating, f.Comment, tags, ms(now())))
	if err != nil {
		return chat.Feedback{}, fmt.Errorf("put feedback on %s: %w", f.MessageID, interpretError(err))
	}
	return out, nil
}

// DeleteFeedback withdraws sc's rating of a message.
func (s *Store) DeleteFeedback(ctx context.Context, sc chat.Scope, messageID string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM feedback WHERE message_id = $1 AND tenant = $2 AND owner = $3`, messageID, sc.Tenant, sc.User)
	if err != nil {
		return fmt.Errorf("delete feedback on %s: %w", messageID, interpretError(err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("feedback on %s: %w", messageID, store.ErrNotFound)
	}
	return nil
}

// ConversationFeedback lists sc's ratings in one of sc's conversations.
func (s *Store) ConversationFeedback(ctx context.Context, sc chat.Scope, conversationID string) ([]chat.Feedback, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+feedbackCols+` FROM `+feedbackFrom+` WHERE conversation_id = $1 AND tenant = $2 AND owner = $3`,
		conversationID, sc.Tenant, sc.User)
	if err != nil {
		return nil, fmt.Errorf("feedback of %s: %w", conversationID, interpretError(err))
	}
	out, err := pgx.CollectRows(rows, collectFeedback)
	if err != nil {
		return nil, fmt.Errorf("feedback of %s: %w", conversationID, interpretError(err))
	}
	return out, nil
}

// ListFeedback pages a tenant's ratings, newest first.
func (s *Store) ListFeedback(ctx context.Context, tenant string, f store.FeedbackFilter, p store.Page) ([]chat.Feedback, string, error) {
	q, args := `SELECT `+feedbackCols+` FROM `+feedbackFrom+` WHERE tenant = $1`, []any{tenant}
	if f.Rating != "" {
		args = append(args, f.Rating)
		q += ` AND rating = $` + strconv.Itoa(len(args))
	}
	if f.AgentID != "" {
		args = append(args, f.AgentID)
		q += ` AND agent_id = $` + strconv.Itoa(len(args))
	}
	if !f.Since.IsZero() {
		args = append(args, f.Since)
		q += ` AND updated_at >= $` + strconv.Itoa(len(args))
	}
	return keysetPage(q, args, "updated_at", true, p, func(f chat.Feedback) store.Cursor { return store.Cursor{At: f.UpdatedAt, ID: f.MessageID} },
		func(q string, args []any) ([]chat.Feedback, error) {
			rows, err := s.pool.Query(ctx, q, args...)
			if err != nil {
				return nil, fmt.Errorf("list feedback: %w", interpretError(err))
			}
			out, err := pgx.CollectRows(rows, collectFeedback)
			if err != nil {
				return nil, fmt.Errorf("list feedback: %w", interpretError(err))
			}
			return out, nil
		})
}

// ThreadState reads the conversation's shared state.
func (s *Store) ThreadState(ctx context.Context, sc chat.Scope, conversationID string) (json.RawMessage, error) {
	var state []byte
	err := s.pool.QueryRow(ctx, `SELECT state FROM conversations WHERE id = $1 AND tenant = $2 AND owner = $3`,
		conversationID, sc.Tenant, sc.User).Scan(&state)
	if err != nil {
		return nil, fmt.Errorf("read state of %s: %w", conversationID, interpretError(err))
	}
	return rawJSON(state), nil
}

// SetThreadState replaces the conversation's shared state.
func (s *Store) SetThreadState(ctx context.Context, sc chat.Scope, conversationID string, state json.RawMessage) error {
	tag, err := s.pool.Exec(ctx, `UPDATE conversations SET state = $4::json WHERE id = $1 AND tenant = $2 AND owner = $3`,
		conversationID, sc.Tenant, sc.User, nullJSON(state))
	if err != nil {
		return fmt.Errorf("set state of %s: %w", conversationID, interpretError(err))
	}
	if tag.RowsAffected() == 0 {
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
	q.CreatedAt = ms(q.CreatedAt)
	q.Tenant, q.Owner = sc.Tenant, sc.User
	tag, err := s.pool.Exec(ctx, `INSERT INTO run_queue (id, tenant, owner, conversation_id, request, created_at)
		SELECT $1, $2, $3, id, $4::json, $5 FROM conversations WHERE id = $6 AND tenant = $2 AND owner = $3`,
		q.ID, q.Tenant, q.Owner, string(q.Request), q.CreatedAt, q.ConversationID)
	if err != nil {
		return store.QueuedInput{}, fmt.Errorf("enqueue input in %s: %w", q.ConversationID, interpretError(err))
	}
	if tag.RowsAffected() == 0 {
		return store.QueuedInput{}, fmt.Errorf("enqueue input in %s: %w", q.ConversationID, store.ErrNotFound)
	}
	return q, nil
}

const queuedCols = `id, tenant, owner, conversation_id, request, created_at`

func scanQueued(row pgx.Row) (store.QueuedInput, error) {
	var q store.QueuedInput
	var req []byte
	err := row.Scan(&q.ID, &q.Tenant, &q.Owner, &q.ConversationID, &req, &q.CreatedAt)
	q.Request, q.CreatedAt = json.RawMessage(req), q.CreatedAt.UTC()
	return q, err
}

// TakeQueuedInput removes and returns the conversation's oldest queued
// input, if the conversation has no active run; SKIP LOCKED lets racing
// takers each take a different one.
func (s *Store) TakeQueuedInput(ctx context.Context, tenant, conversationID string) (store.QueuedInput, error) {
	var q store.QueuedInput
	err := s.groupedRow(ctx, `DELETE FROM run_queue WHERE id = (
		SELECT id FROM run_queue WHERE tenant = $1 AND conversation_id = $2
			AND NOT EXISTS (SELECT 1 FROM runs WHERE conversation_id = $2 AND status IN `+activeStatuses+`)
		ORDER BY created_at, id LIMIT 1 FOR UPDATE SKIP LOCKED)
		RETURNING `+queuedCols, []any{tenant, conversationID}, func(row pgx.Row) (err error) {
		q, err = scanQueued(row)
		return err
	})
	if err != nil {
		return store.QueuedInput{}, fmt.Errorf("take queued input of %s: %w", conversationID, interpretError(err))
	}
	return q, nil
}

// StalledQueues lists conversations with queued inputs and no active run.
func (s *Store) StalledQueues(ctx context.Context, limit int) ([]store.QueuedInput, error) {
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT ON (q.conversation_id) `+strings.ReplaceAll(queuedCols, "id, tenant", "q.id, q.tenant")+`
		FROM run_queue q
		WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.conversation_id = q.conversation_id AND r.status IN `+activeStatuses+`)
		ORDER BY q.conversation_id, q.created_at, q.id LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("list stalled queues: %w", interpretError(err))
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.QueuedInput, error) { return scanQueued(row) })
	if err != nil {
		return nil, fmt.Errorf("list stalled queues: %w", interpretError(err))
	}
	return out, nil
}

// QueuedInputs lists the inputs queued in one of sc's conversations, in order.
func (s *Store) QueuedInputs(ctx context.Context, sc chat.Scope, conversationID string) ([]store.QueuedInput, error) {
	if _, err := s.GetConversation(ctx, sc, conversationID); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT `+queuedCols+` FROM run_queue
		WHERE tenant = $1 AND owner = $2 AND conversation_id = $3 ORDER BY created_at, id`, sc.Tenant, sc.User, conversationID)
	if err != nil {
		return nil, fmt.Errorf("list queued inputs of %s: %w", conversationID, interpretError(err))
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.QueuedInput, error) { return scanQueued(row) })
	if err != nil {
		return nil, fmt.Errorf("list queued inputs of %s: %w", conversationID, interpretError(err))
	}
	return out, nil
}

// GetQueuedInput is one of sc's queued inputs.
func (s *Store) GetQueuedInput(ctx context.Context, sc chat.Scope, id string) (store.QueuedInput, error) {
	q, err := scanQueued(s.pool.QueryRow(ctx, `SELECT `+queuedCols+` FROM run_queue WHERE id = $1 AND tenant = $2 AND owner = $3`,
		id, sc.Tenant, sc.User))
	if err != nil {
		return store.QueuedInput{}, fmt.Errorf("get queued input %s: %w", id, interpretError(err))
	}
	return q, nil
}

// DeleteQueuedInput removes one of sc's queued inputs.
func (s *Store) DeleteQueuedInput(ctx context.Context, sc chat.Scope, id string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM run_queue WHERE id = $1 AND tenant = $2 AND owner = $3`, id, sc.Tenant, sc.User)
	if err != nil {
		return fmt.Errorf("delete queued input %s: %w", id, interpretError(err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("delete queued input %s: %w", id, store.ErrNotFound)
	}
	return nil
}
