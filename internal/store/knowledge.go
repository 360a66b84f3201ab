package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/agentchat/agentchat/internal/chat"
)

// Document is an uploaded knowledge-base document. It belongs to a tenant and
// is visible to every user of that tenant (Owner records who uploaded it).
type Document struct {
	ID     string
	Tenant string
	Owner  string
	Source string // the name the uploader gave (a file name, a URL)
	// Collection is the knowledge collection the document belongs to, which
	// agents name to search it; DefaultCollection when empty.
	Collection string
	MediaType  string // text/plain or text/markdown
	Metadata   json.RawMessage
	Bytes      int // size of the uploaded text
	Chunks     int // how many chunks it was split into
	CreatedAt  time.Time
}

// Chunk is one indexed piece of a document.
type Chunk struct {
	ID      string
	Ordinal int
	Content string
	// Terms is Content pre-tokenised by the retrieval package (words and CJK
	// bigrams separated by spaces): what the full-text index holds. The same
	// tokeniser makes queries, on every backend.
	Terms string
	// Embedding is the chunk's vector when an embeddings endpoint is configured.
	Embedding []float32
}

// Passage is a search hit: a knowledge chunk, or a remembered message (then
// DocumentID is its conversation and ChunkID the message).
type Passage struct {
	ChunkID    string
	DocumentID string
	Source     string
	Content    string
	// Score is the backend's text rank, higher is better (0 for vector candidates).
	Score     float64
	Embedding []float32
}

// MemoryEntry is a message of a user's conversation indexed for memory search.
type MemoryEntry struct {
	MessageID      string
	ConversationID string
	Role           string
	Content        string
	Terms          string
	CreatedAt      time.Time
}

// Compaction is a conversation's compacted context: the summary that stands
// for its messages up to and including ThroughID (ordered by CreatedAt, id).
type Compaction struct {
	ID             string
	ConversationID string
	Summary        string
	Archived       int // messages archived by this compaction
	ThroughID      string
	ThroughAt      time.Time
	CreatedAt      time.Time
}

// DefaultCollection is the collection of a document stored without one.
const DefaultCollection = chat.DefaultCollection

// KnowledgeQuery asks SearchKnowledge for passages.
type KnowledgeQuery struct {
	// Terms are tokens made by the same tokeniser as Chunk.Terms.
	Terms []string
	// Collections, when not nil, keeps the chunks of documents in these
	// collections; an empty, non-nil list keeps none.
	Collections []string
	Limit       int
}

// DocumentFilter narrows ListDocuments.
type DocumentFilter struct {
	// Collection keeps the documents of that collection.
	Collection string
}

// Knowledge is the part of Store that serves retrieval, memory, out-of-line
// payloads and compaction. Documents are tenant-wide; memory, blobs and
// compactions are the principal's own (another user's is ErrNotFound).
type Knowledge interface {
	// CreateDocument stores a document with its chunks, setting ID and CreatedAt when empty.
	CreateDocument(ctx context.Context, s chat.Scope, d Document, chunks []Chunk) (Document, error)
	GetDocument(ctx context.Context, s chat.Scope, id string) (Document, error)
	// ListDocuments returns the tenant's documents newest first and the next cursor.
	ListDocuments(ctx context.Context, s chat.Scope, f DocumentFilter, p Page) ([]Document, string, error)
	// DeleteDocument removes a document and its chunks.
	DeleteDocument(ctx context.Context, s chat.Scope, id string) error
	// SearchKnowledge ranks the tenant's chunks (of q.Collections' documents,
	// when set) by full-text relevance to any of q.Terms, best first, at most
	// q.Limit.
	SearchKnowledge(ctx context.Context, s chat.Scope, q KnowledgeQuery) ([]Passage, error)
	// KnowledgeVectors returns up to limit of the tenant's chunks that have an
	// embedding (of collections' documents, when not nil), newest document
	// first, for vector ranking.
	KnowledgeVectors(ctx context.Context, s chat.Scope, collections []string, limit int) ([]Passage, error)

	// Remember indexes a message of one of s's conversations for memory search
	// (repeating it is a no-op).
	Remember(ctx context.Context, s chat.Scope, e MemoryEntry) error
	// SearchMemory ranks s's own remembered messages outside the conversation
	// exclude by full-text relevance, best first.
	SearchMemory(ctx context.Context, s chat.Scope, terms []string, exclude string, limit int) ([]Passage, error)

	// PutBlob stores a payload in one of s's conversations, setting ID when empty.
	PutBlob(ctx context.Context, s chat.Scope, b chat.Blob) (chat.Blob, error)
	GetBlob(ctx context.Context, s chat.Scope, id string) (chat.Blob, error)

	// Compact records c and copies archived (the messages it stands for,
	// unchanged) into the conversation's archive, atomically. It fails with
	// *BusyError when the conversation has an active run other than
	// activeRunID.
	Compact(ctx context.Context, s chat.Scope, c Compaction, archived []chat.Message, activeRunID string) (Compaction, error)
	// LatestCompaction returns the conversation's newest compaction, or ErrNotFound.
	LatestCompaction(ctx context.Context, s chat.Scope, conversationID string) (Compaction, error)
	// ListArchive pages the conversation's archived messages, oldest first.
	ListArchive(ctx context.Context, s chat.Scope, conversationID string, p Page) ([]chat.Message, string, error)
}
