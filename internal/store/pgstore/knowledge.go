package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/store"
)

// ---- knowledge base ----

const documentCols = `id, tenant, owner, source, collection, media_type, metadata, bytes, chunks, created_at`

func scanDocument(row pgx.CollectableRow) (store.Document, error) {
	var d store.Document
	var meta []byte
	err := row.Scan(&d.ID, &d.Tenant, &d.Owner, &d.Source, &d.Collection, &d.MediaType, &meta, &d.Bytes, &d.Chunks, &d.CreatedAt)
	d.Metadata, d.CreatedAt = rawJSON(meta), d.CreatedAt.UTC()
	return d, err
}

// CreateDocument stores a document and its chunks in one transaction.
func (s *Store) CreateDocument(ctx context.Context, sc chat.Scope, d store.Document, chunks []store.Chunk) (store.Document, error) {
	store.FillDocument(&d, sc, len(chunks), now())
	d.CreatedAt = ms(d.CreatedAt)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		b.Queue(`INSERT INTO knowledge_documents (`+documentCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
			d.ID, d.Tenant, d.Owner, d.Source, d.Collection, d.MediaType, nullJSON(d.Metadata), d.Bytes, d.Chunks, d.CreatedAt)
		for _, c := range chunks {
			store.FillChunk(&c)
			var emb any
			if len(c.Embedding) > 0 {
				emb = c.Embedding
			}
			b.Queue(`INSERT INTO knowledge_chunks (id, tenant, document_id, ordinal, content, terms, embedding) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
				c.ID, d.Tenant, d.ID, c.Ordinal, c.Content, c.Terms, emb)
		}
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return store.Document{}, fmt.Errorf("create document: %w", interpretError(err))
	}
	return d, nil
}

// GetDocument reads one of the tenant's documents.
func (s *Store) GetDocument(ctx context.Context, sc chat.Scope, id string) (store.Document, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+documentCols+` FROM knowledge_documents WHERE id = $1 AND tenant = $2`, id, sc.Tenant)
	d, err := pgx.CollectExactlyOneRow(rows, scanDocument)
	if err != nil {
		return store.Document{}, fmt.Errorf("get document %s: %w", id, interpretError(err))
	}
	return d, nil
}

// ListDocuments pages the tenant's documents, newest first.
func (s *Store) ListDocuments(ctx context.Context, sc chat.Scope, f store.DocumentFilter, p store.Page) ([]store.Document, string, error) {
	q, args := `SELECT `+documentCols+` FROM knowledge_documents WHERE tenant = $1`, []any{sc.Tenant}
	if f.Collection != "" {
		q += ` AND collection = $2`
		args = append(args, f.Collection)
	}
	return keysetPage(q, args,
		"created_at", true, p, func(d store.Document) store.Cursor { return store.Cursor{At: d.CreatedAt, ID: d.ID} },
		func(q string, args []any) ([]store.Document, error) {
			rows, _ := s.pool.Query(ctx, q, args...)
			out, err := pgx.CollectRows(rows, scanDocument)
			if err != nil {
				return nil, fmt.Errorf("list documents: %w", interpretError(err))
			}
			return out, nil
		})
}

// DeleteDocument removes a document; its chunks follow.
func (s *Store) DeleteDocument(ctx context.Context, sc chat.Scope, id string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM knowledge_documents WHERE id = $1 AND tenant = $2`, id, sc.Tenant)
	if err == nil && tag.RowsAffected() == 0 {
		err = store.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("delete document %s: %w", id, interpretError(err))
	}
	return nil
}

// tsquery is the query for any of terms, each a quoted lexeme, parsed by the
// same 'simple' configuration that made the index.
func tsquery(terms []string) string {
	q := make([]string, 0, len(terms))
	for _, t := range terms {
		q = append(q, "'"+strings.ReplaceAll(t, "'", "''")+"'")
	}
	return strings.Join(q, " | ")
}

func scanPassage(row pgx.CollectableRow) (store.Passage, error) {
	var p store.Passage
	var score float32
	err := row.Scan(&p.ChunkID, &p.DocumentID, &p.Source, &p.Content, &score)
	p.Score = float64(score)
	return p, err
}

// SearchKnowledge ranks the tenant's chunks by ts_rank_cd (cover density).
func (s *Store) SearchKnowledge(ctx context.Context, sc chat.Scope, kq store.KnowledgeQuery) ([]store.Passage, error) {
	if len(kq.Terms) == 0 || (kq.Collections != nil && len(kq.Collections) == 0) {
		return nil, nil
	}
	// A nil collections parameter keeps every collection. Every chat
	// searches, so the search goes with the group's writes (group.go) rather
	// than waiting for a connection of its own.
	var out []store.Passage
	err := s.grouped(ctx, &rowsRead{sql: `
		SELECT c.id, c.document_id, d.source, c.content, ts_rank_cd(c.tsv, q) AS score
		FROM knowledge_chunks c JOIN knowledge_documents d ON d.id = c.document_id,
		     to_tsquery('simple', $1) q
		WHERE c.tenant = $2 AND c.tsv @@ q AND ($4::text[] IS NULL OR d.collection = ANY ($4::text[]))
		ORDER BY score DESC, c.id LIMIT $3`, args: []any{tsquery(kq.Terms), sc.Tenant, kq.Limit, kq.Collections},
		collect: func(rows pgx.Rows) (err error) {
			out, err = pgx.CollectRows(rows, scanPassage)
			return err
		}})
	if err != nil {
		return nil, fmt.Errorf("search knowledge: %w", interpretError(err))
	}
	return out, nil
}

// KnowledgeVectors lists the tenant's embedded chunks, newest documents first.
func (s *Store) KnowledgeVectors(ctx context.Context, sc chat.Scope, collections []string, limit int) ([]store.Passage, error) {
	if collections != nil && len(collections) == 0 {
		return nil, nil
	}
	rows, _ := s.pool.Query(ctx, `
		SELECT c.id, c.document_id, d.source, c.content, c.embedding
		FROM knowledge_chunks c JOIN knowledge_documents d ON d.id = c.document_id
		WHERE c.tenant = $1 AND c.embedding IS NOT NULL AND ($3::text[] IS NULL OR d.collection = ANY ($3::text[]))
		ORDER BY d.created_at DESC, c.ordinal LIMIT $2`, sc.Tenant, limit, collections)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Passage, error) {
		var p store.Passage
		err := row.Scan(&p.ChunkID, &p.DocumentID, &p.Source, &p.Content, &p.Embedding)
		return p, err
	})
	if err != nil {
		return nil, fmt.Errorf("knowledge vectors: %w", interpretError(err))
	}
	return out, nil
}

// ---- memory ----

// Remember indexes a message of one of sc's conversations.
func (s *Store) Remember(ctx context.Context, sc chat.Scope, e store.MemoryEntry) error {
	store.FillMemoryEntry(&e, now())
	var owned bool
	err := s.pool.QueryRow(ctx, `WITH c AS (
			SELECT id FROM conversations WHERE id = $1 AND tenant = $2 AND owner = $3
		), ins AS (
			INSERT INTO memory_entries (message_id, tenant, owner, conversation_id, role, content, terms, created_at)
			SELECT $4, $2, $3, id, $5, $6, $7, $8 FROM c
			ON CONFLICT (message_id) DO NOTHING
		)
		SELECT EXISTS (SELECT 1 FROM c)`,
		e.ConversationID, sc.Tenant, sc.User, e.MessageID, e.Role, e.Content, e.Terms, ms(e.CreatedAt)).Scan(&owned)
	if err == nil && !owned {
		err = store.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("remember message %s: %w", e.MessageID, interpretError(err))
	}
	return nil
}

// SearchMemory ranks sc's own remembered messages by ts_rank_cd.
func (s *Store) SearchMemory(ctx context.Context, sc chat.Scope, terms []string, exclude string, limit int) ([]store.Passage, error) {
	if len(terms) == 0 {
		return nil, nil
	}
	rows, _ := s.pool.Query(ctx, `
		SELECT m.message_id, m.conversation_id, 'conversation:' || m.conversation_id, m.content, ts_rank_cd(m.tsv, q) AS score
		FROM memory_entries m, to_tsquery('simple', $1) q
		WHERE m.tenant = $2 AND m.owner = $3 AND m.conversation_id <> $4 AND m.tsv @@ q
		ORDER BY score DESC, m.message_id LIMIT $5`, tsquery(terms), sc.Tenant, sc.User, exclude, limit)
	out, err := pgx.CollectRows(rows, scanPassage)
	if err != nil {
		return nil, fmt.Errorf("search memory: %w", interpretError(err))
	}
	return out, nil
}

// ---- blobs ----

// PutBlob stores a payload in one of sc's conversations.
func (s *Store) PutBlob(ctx context.Context, sc chat.Scope, b chat.Blob) (chat.Blob, error) {
	store.FillBlob(&b, now())
	tag, err := s.pool.Exec(ctx, `INSERT INTO blobs (id, tenant, conversation_id, data, created_at)
		SELECT $1, $2, id, $4, $5 FROM conversations WHERE id = $3 AND tenant = $2 AND owner = $6`,
		b.ID, sc.Tenant, b.ConversationID, []byte(b.Data), b.CreatedAt, sc.User)
	if err == nil && tag.RowsAffected() == 0 {
		err = store.ErrNotFound
	}
	if err != nil {
		return chat.Blob{}, fmt.Errorf("put blob: %w", interpretError(err))
	}
	return b, nil
}

// GetBlob reads a payload of one of sc's conversations.
func (s *Store) GetBlob(ctx context.Context, sc chat.Scope, id string) (chat.Blob, error) {
	var b chat.Blob
	var data []byte
	err := s.pool.QueryRow(ctx, `SELECT b.id, b.conversation_id, b.data, b.created_at FROM blobs b
		JOIN conversations c ON c.id = b.conversation_id
		WHERE b.id = $1 AND b.tenant = $2 AND c.owner = $3`, id, sc.Tenant, sc.User).Scan(&b.ID, &b.ConversationID, &data, &b.CreatedAt)
	if err != nil {
		return chat.Blob{}, fmt.Errorf("get blob %s: %w", id, interpretError(err))
	}
	b.Data, b.CreatedAt = rawJSON(data), b.CreatedAt.UTC()
	return b, nil
}

// ---- compaction ----

const compactionCols = `id, conversation_id, summary, archived, through_id, through_at, created_at`

func scanCompaction(row pgx.CollectableRow) (store.Compaction, error) {
	var c store.Compaction
	err := row.Scan(&c.ID, &c.ConversationID, &c.Summary, &c.Archived, &c.ThroughID, &c.ThroughAt, &c.CreatedAt)
	c.ThroughAt, c.CreatedAt = c.ThroughAt.UTC(), c.CreatedAt.UTC()
	return c, err
}

// Compact records a compaction and archives its messages atomically. The
// conversation row is locked, so the check for an active run and the writes
// see one state.
func (s *Store) Compact(ctx context.Context, sc chat.Scope, c store.Compaction, archived []chat.Message, activeRunID string) (store.Compaction, error) {
	store.FillCompaction(&c, len(archived), now())
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var one int
		if err := tx.QueryRow(ctx, `SELECT 1 FROM conversations WHERE id = $1 AND tenant = $2 AND owner = $3 FOR UPDATE`, c.ConversationID, sc.Tenant, sc.User).Scan(&one); err != nil {
			return err
		}
		var active string
		err := tx.QueryRow(ctx, `SELECT id FROM runs WHERE conversation_id = $1 AND status IN `+activeStatuses, c.ConversationID).Scan(&active)
		if err == nil && active != activeRunID {
			return &store.BusyError{ActiveRunID: active}
		}
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		b := &pgx.Batch{}
		b.Queue(`INSERT INTO compactions (`+compactionCols+`, tenant) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			c.ID, c.ConversationID, c.Summary, c.Archived, c.ThroughID, ms(c.ThroughAt), c.CreatedAt, sc.Tenant)
		for _, m := range archived {
			b.Queue(`INSERT INTO message_archive (`+messageCols+`, tenant, compaction_id) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
				ON CONFLICT (conversation_id, id) DO NOTHING`,
				m.ID, c.ConversationID, m.Role, m.Content, nullJSON(m.Parts), nullJSON(m.Metadata), m.RunID, m.ToolName, m.ToolCallID, m.CreatedAt, m.ParentID, sc.Tenant, c.ID)
		}
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return store.Compaction{}, fmt.Errorf("compact %s: %w", c.ConversationID, interpretError(err))
	}
	return c, nil
}

// LatestCompaction reads the conversation's newest compaction.
func (s *Store) LatestCompaction(ctx context.Context, sc chat.Scope, conversationID string) (store.Compaction, error) {
	rows, _ := s.pool.Query(ctx, `SELECT k.id, k.conversation_id, k.summary, k.archived, k.through_id, k.through_at, k.created_at
		FROM compactions k JOIN conversations c ON c.id = k.conversation_id
		WHERE k.conversation_id = $1 AND c.tenant = $2 AND c.owner = $3
		ORDER BY k.created_at DESC, k.id DESC LIMIT 1`, conversationID, sc.Tenant, sc.User)
	c, err := pgx.CollectExactlyOneRow(rows, scanCompaction)
	if err != nil {
		return store.Compaction{}, fmt.Errorf("latest compaction of %s: %w", conversationID, interpretError(err))
	}
	return c, nil
}

// ListArchive pages the conversation's archived messages, oldest first.
func (s *Store) ListArchive(ctx context.Context, sc chat.Scope, conversationID string, p store.Page) ([]chat.Message, string, error) {
	return keysetPage(`SELECT `+messageCols+` FROM message_archive WHERE conversation_id = $1 AND tenant = $2`, []any{conversationID, sc.Tenant},
		"created_at", false, p, messageCursor, func(q string, args []any) ([]chat.Message, error) {
			var out []chat.Message
			err := s.scoped(ctx, sc, conversationID, q, args, func(rows pgx.Rows) error {
				var err error
				out, err = pgx.CollectRows(rows, scanMessage)
				return err
			})
			if err != nil {
				return nil, fmt.Errorf("list archive of %s: %w", conversationID, err)
			}
			return out, nil
		})
}
