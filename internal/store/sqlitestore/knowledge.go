package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/store"
)

// ---- knowledge base ----

const documentCols = `id, tenant, owner, source, collection, media_type, metadata, bytes, chunks, created_at`

func scanDocument(row scanner) (store.Document, error) {
	var d store.Document
	var meta sql.NullString
	var created int64
	err := row.Scan(&d.ID, &d.Tenant, &d.Owner, &d.Source, &d.Collection, &d.MediaType, &meta, &d.Bytes, &d.Chunks, &created)
	d.Metadata, d.CreatedAt = rawJSON(meta), fromMS(created)
	return d, err
}

// documents counts each tenant's knowledge documents, never fewer than are
// committed: an upload is counted before its transaction (and uncounted if
// it fails), a deletion after its commit. A tenant counted at 0 has no
// document, so a search of its knowledge base (made before every model
// call) is answered without asking SQLite. This is correct because this
// process is the database's only writer (doc.go; serve holds the data
// directory's lock file): no document can appear that Store did not write.
type documents struct {
	mu sync.Mutex
	n  map[string]int // tenant → documents; absent is none
}

// load counts the documents already stored.
func (c *documents) load(ctx context.Context, db *sql.DB) error {
	rows, err := db.QueryContext(ctx, `SELECT tenant, count(*) FROM knowledge_documents GROUP BY tenant`)
	if err != nil {
		return err
	}
	defer rows.Close()
	c.n = map[string]int{}
	for rows.Next() {
		var tenant string
		var n int
		if err := rows.Scan(&tenant, &n); err != nil {
			return err
		}
		c.n[tenant] = n
	}
	return rows.Err()
}

// add counts delta more of tenant's documents.
func (c *documents) add(tenant string, delta int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := c.n[tenant] + delta; n > 0 {
		c.n[tenant] = n
	} else {
		delete(c.n, tenant)
	}
}

// none reports whether tenant has no document.
func (c *documents) none(tenant string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[tenant] == 0
}

// CreateDocument stores a document and its chunks in one transaction.
func (s *Store) CreateDocument(ctx context.Context, sc chat.Scope, d store.Document, chunks []store.Chunk) (store.Document, error) {
	store.FillDocument(&d, sc, len(chunks), now())
	d.CreatedAt = d.CreatedAt.UTC().Truncate(time.Millisecond)
	s.docs.add(d.Tenant, 1) // before it can be seen (documents)
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO knowledge_documents (`+documentCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			d.ID, d.Tenant, d.Owner, d.Source, d.Collection, d.MediaType, nullJSON(d.Metadata), d.Bytes, d.Chunks, ms(d.CreatedAt)); err != nil {
			return err
		}
		stmt, err := tx.PrepareContext(ctx, `INSERT INTO knowledge_chunks (id, tenant, document_id, ordinal, content, terms, embedding) VALUES (?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, c := range chunks {
			store.FillChunk(&c)
			if _, err := stmt.ExecContext(ctx, c.ID, d.Tenant, d.ID, c.Ordinal, c.Content, c.Terms, vector(c.Embedding)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		s.docs.add(d.Tenant, -1)
		return store.Document{}, fmt.Errorf("create document: %w", err)
	}
	return d, nil
}

// vector stores an embedding as a JSON array, NULL when there is none.
func vector(v []float32) any {
	if len(v) == 0 {
		return nil
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// GetDocument reads one of the tenant's documents.
func (s *Store) GetDocument(ctx context.Context, sc chat.Scope, id string) (store.Document, error) {
	d, err := scanDocument(s.read.QueryRowContext(ctx, `SELECT `+documentCols+` FROM knowledge_documents WHERE id = ? AND tenant = ?`, id, sc.Tenant))
	if err != nil {
		return store.Document{}, fmt.Errorf("get document %s: %w", id, interpret(err))
	}
	return d, nil
}

// ListDocuments pages the tenant's documents, newest first.
func (s *Store) ListDocuments(ctx context.Context, sc chat.Scope, f store.DocumentFilter, p store.Page) ([]store.Document, string, error) {
	q, args := `SELECT `+documentCols+` FROM knowledge_documents WHERE tenant = ?`, []any{sc.Tenant}
	if f.Collection != "" {
		q += ` AND collection = ?`
		args = append(args, f.Collection)
	}
	return keysetPage(q, args,
		"created_at", true, p, func(d store.Document) store.Cursor { return store.Cursor{At: d.CreatedAt, ID: d.ID} },
		func(q string, args []any) ([]store.Document, error) {
			out, err := collect(scanDocument)(s.read.QueryContext(ctx, q, args...))
			if err != nil {
				return nil, fmt.Errorf("list documents: %w", err)
			}
			return out, nil
		})
}

// DeleteDocument removes a document; its chunks and their index entries follow.
func (s *Store) DeleteDocument(ctx context.Context, sc chat.Scope, id string) error {
	res, err := s.write.ExecContext(ctx, `DELETE FROM knowledge_documents WHERE id = ? AND tenant = ?`, id, sc.Tenant)
	if err != nil {
		return fmt.Errorf("delete document %s: %w", id, interpret(err))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("delete document %s: %w", id, store.ErrNotFound)
	}
	s.docs.add(sc.Tenant, -1) // once it can no longer be seen (documents)
	return nil
}

// match is the FTS5 query for any of terms: each quoted, so no term is read
// as an operator.
func match(terms []string) string {
	q := make([]string, 0, len(terms))
	for _, t := range terms {
		q = append(q, `"`+strings.ReplaceAll(t, `"`, `""`)+`"`)
	}
	return strings.Join(q, " OR ")
}

func scanPassage(row scanner) (store.Passage, error) {
	var p store.Passage
	err := row.Scan(&p.ChunkID, &p.DocumentID, &p.Source, &p.Content, &p.Score)
	return p, err
}

// SearchKnowledge's query is searchKnowledgeHead, the condition on
// collections when there is one, and searchKnowledgeTail;
// searchKnowledgeSQL, the search of every collection, is kept prepared.
const (
	searchKnowledgeHead = `
		SELECT c.id, c.document_id, d.source, c.content, -bm25(knowledge_fts) AS score
		FROM knowledge_fts
		JOIN knowledge_chunks c ON c.rowid = knowledge_fts.rowid
		JOIN knowledge_documents d ON d.id = c.document_id
		WHERE knowledge_fts MATCH ? AND c.tenant = ?`
	searchKnowledgeTail = `
		ORDER BY score DESC, c.id LIMIT ?`
	searchKnowledgeSQL = searchKnowledgeHead + searchKnowledgeTail
)

// SearchKnowledge ranks the tenant's chunks by BM25 (FTS5's bm25() is lower
// for better matches; the score returned is its negation, higher is better).
func (s *Store) SearchKnowledge(ctx context.Context, sc chat.Scope, kq store.KnowledgeQuery) ([]store.Passage, error) {
	if len(kq.Terms) == 0 || (kq.Collections != nil && len(kq.Collections) == 0) || s.docs.none(sc.Tenant) {
		return nil, nil
	}
	in, args := inCollections(kq.Collections, match(kq.Terms), sc.Tenant)
	out, err := collect(scanPassage)(s.rprep.rows(ctx, searchKnowledgeHead+in+searchKnowledgeTail, append(args, kq.Limit)...))
	if err != nil {
		return nil, fmt.Errorf("search knowledge: %w", err)
	}
	return out, nil
}

// KnowledgeVectors lists the tenant's embedded chunks, newest documents first.
func (s *Store) KnowledgeVectors(ctx context.Context, sc chat.Scope, collections []string, limit int) ([]store.Passage, error) {
	if (collections != nil && len(collections) == 0) || s.docs.none(sc.Tenant) {
		return nil, nil
	}
	in, args := inCollections(collections, sc.Tenant)
	out, err := collect(func(row scanner) (store.Passage, error) {
		var p store.Passage
		var emb string
		err := row.Scan(&p.ChunkID, &p.DocumentID, &p.Source, &p.Content, &emb)
		if err == nil {
			err = json.Unmarshal([]byte(emb), &p.Embedding)
		}
		return p, err
	})(s.read.QueryContext(ctx, `
		SELECT c.id, c.document_id, d.source, c.content, c.embedding
		FROM knowledge_chunks c JOIN knowledge_documents d ON d.id = c.document_id
		WHERE c.tenant = ? AND c.embedding IS NOT NULL`+in+`
		ORDER BY d.created_at DESC, c.ordinal LIMIT ?`, append(args, limit)...))
	if err != nil {
		return nil, fmt.Errorf("knowledge vectors: %w", err)
	}
	return out, nil
}

// inCollections is the condition keeping the chunks of documents d in
// collections (none when collections is nil), with args before its own.
func inCollections(collections []string, args ...any) (string, []any) {
	if collections == nil {
		return "", args
	}
	marks := strings.Repeat(", ?", len(collections))[2:]
	for _, c := range collections {
		args = append(args, c)
	}
	return ` AND d.collection IN (` + marks + `)`, args
}

// ---- memory ----

// Remember indexes a message of one of sc's conversations.
func (s *Store) Remember(ctx context.Context, sc chat.Scope, e store.MemoryEntry) error {
	store.FillMemoryEntry(&e, now())
	res, err := s.write.ExecContext(ctx, `
		INSERT INTO memory_entries (message_id, tenant, owner, conversation_id, role, content, terms, created_at)
		SELECT ?, ?, ?, id, ?, ?, ?, ? FROM conversations WHERE id = ? AND tenant = ? AND owner = ?
		ON CONFLICT (message_id) DO NOTHING`,
		e.MessageID, sc.Tenant, sc.User, e.Role, e.Content, e.Terms, ms(e.CreatedAt), e.ConversationID, sc.Tenant, sc.User)
	if err != nil {
		return fmt.Errorf("remember message %s: %w", e.MessageID, interpret(err))
	}
	if n, _ := res.RowsAffected(); n == 0 {
		var one int
		if err := s.write.QueryRowContext(ctx, `SELECT 1 FROM conversations WHERE id = ? AND tenant = ? AND owner = ?`, e.ConversationID, sc.Tenant, sc.User).Scan(&one); err != nil {
			return fmt.Errorf("remember message %s: %w", e.MessageID, interpret(err))
		}
	}
	return nil
}

// SearchMemory ranks sc's own remembered messages by BM25.
func (s *Store) SearchMemory(ctx context.Context, sc chat.Scope, terms []string, exclude string, limit int) ([]store.Passage, error) {
	if len(terms) == 0 {
		return nil, nil
	}
	out, err := collect(scanPassage)(s.read.QueryContext(ctx, `
		SELECT m.message_id, m.conversation_id, 'conversation:' || m.conversation_id, m.content, -bm25(memory_fts) AS score
		FROM memory_fts JOIN memory_entries m ON m.rowid = memory_fts.rowid
		WHERE memory_fts MATCH ? AND m.tenant = ? AND m.owner = ? AND m.conversation_id <> ?
		ORDER BY score DESC, m.message_id LIMIT ?`, match(terms), sc.Tenant, sc.User, exclude, limit))
	if err != nil {
		return nil, fmt.Errorf("search memory: %w", err)
	}
	return out, nil
}

// ---- blobs ----

// PutBlob stores a payload in one of sc's conversations.
func (s *Store) PutBlob(ctx context.Context, sc chat.Scope, b chat.Blob) (chat.Blob, error) {
	store.FillBlob(&b, now())
	res, err := s.write.ExecContext(ctx, `INSERT INTO blobs (id, tenant, conversation_id, data, created_at)
		SELECT ?, ?, id, ?, ? FROM conversations WHERE id = ? AND tenant = ? AND owner = ?`,
		b.ID, sc.Tenant, string(b.Data), ms(b.CreatedAt), b.ConversationID, sc.Tenant, sc.User)
	if err == nil {
		if n, _ := res.RowsAffected(); n == 0 {
			err = store.ErrNotFound
		}
	}
	if err != nil {
		return chat.Blob{}, fmt.Errorf("put blob: %w", interpret(err))
	}
	return b, nil
}

// GetBlob reads a payload of one of sc's conversations.
func (s *Store) GetBlob(ctx context.Context, sc chat.Scope, id string) (chat.Blob, error) {
	var b chat.Blob
	var data string
	var created int64
	err := s.read.QueryRowContext(ctx, `SELECT b.id, b.conversation_id, b.data, b.created_at FROM blobs b
		JOIN conversations c ON c.id = b.conversation_id
		WHERE b.id = ? AND b.tenant = ? AND c.owner = ?`, id, sc.Tenant, sc.User).Scan(&b.ID, &b.ConversationID, &data, &created)
	if err != nil {
		return chat.Blob{}, fmt.Errorf("get blob %s: %w", id, interpret(err))
	}
	b.Data, b.CreatedAt = json.RawMessage(data), fromMS(created)
	return b, nil
}

// ---- compaction ----

const compactionCols = `id, conversation_id, summary, archived, through_id, through_at, created_at`

func scanCompaction(row scanner) (store.Compaction, error) {
	var c store.Compaction
	var through, created int64
	err := row.Scan(&c.ID, &c.ConversationID, &c.Summary, &c.Archived, &c.ThroughID, &through, &created)
	c.ThroughAt, c.CreatedAt = fromMS(through), fromMS(created)
	return c, err
}

// Compact records a compaction and archives its messages atomically.
func (s *Store) Compact(ctx context.Context, sc chat.Scope, c store.Compaction, archived []chat.Message, activeRunID string) (store.Compaction, error) {
	store.FillCompaction(&c, len(archived), now())
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var one int
		if err := tx.QueryRowContext(ctx, `SELECT 1 FROM conversations WHERE id = ? AND tenant = ? AND owner = ?`, c.ConversationID, sc.Tenant, sc.User).Scan(&one); err != nil {
			return err
		}
		var active string
		err := tx.QueryRowContext(ctx, `SELECT id FROM runs WHERE conversation_id = ? AND status IN ('queued', 'running', 'awaiting_input')`, c.ConversationID).Scan(&active)
		if err == nil && active != activeRunID {
			return &store.BusyError{ActiveRunID: active}
		}
		if err != nil && err != sql.ErrNoRows {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO compactions (`+compactionCols+`, tenant) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			c.ID, c.ConversationID, c.Summary, c.Archived, c.ThroughID, ms(c.ThroughAt), ms(c.CreatedAt), sc.Tenant); err != nil {
			return err
		}
		for _, m := range archived {
			if _, err := tx.ExecContext(ctx, `INSERT INTO message_archive (`+messageCols+`, tenant, compaction_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
				ON CONFLICT (conversation_id, id) DO NOTHING`,
				m.ID, c.ConversationID, m.Role, m.Content, nullJSON(m.Parts), nullJSON(m.Metadata), m.RunID, m.ToolName, m.ToolCallID, ms(m.CreatedAt), m.ParentID, sc.Tenant, c.ID); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return store.Compaction{}, fmt.Errorf("compact %s: %w", c.ConversationID, err)
	}
	return c, nil
}

const latestCompactionSQL = `SELECT k.id, k.conversation_id, k.summary, k.archived, k.through_id, k.through_at, k.created_at
	FROM compactions k JOIN conversations c ON c.id = k.conversation_id
	WHERE k.conversation_id = ? AND c.tenant = ? AND c.owner = ?
	ORDER BY k.created_at DESC, k.id DESC LIMIT 1`

// LatestCompaction reads the conversation's newest compaction.
func (s *Store) LatestCompaction(ctx context.Context, sc chat.Scope, conversationID string) (store.Compaction, error) {
	c, err := scanCompaction(s.rprep.row(ctx, latestCompactionSQL, conversationID, sc.Tenant, sc.User))
	if err != nil {
		return store.Compaction{}, fmt.Errorf("latest compaction of %s: %w", conversationID, interpret(err))
	}
	return c, nil
}

// ListArchive pages the conversation's archived messages, oldest first.
func (s *Store) ListArchive(ctx context.Context, sc chat.Scope, conversationID string, p store.Page) ([]chat.Message, string, error) {
	return keysetPage(`SELECT `+messageCols+` FROM message_archive WHERE conversation_id = ? AND tenant = ?`, []any{conversationID, sc.Tenant},
		"created_at", false, p, messageCursor, func(q string, args []any) ([]chat.Message, error) {
			if _, err := s.GetConversation(ctx, sc, conversationID); err != nil {
				return nil, err
			}
			out, err := collect(scanMessage)(s.read.QueryContext(ctx, q, args...))
			if err != nil {
				return nil, fmt.Errorf("list archive: %w", err)
			}
			return out, nil
		})
}
