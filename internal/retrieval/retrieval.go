// Package retrieval is agentchat's retrieval-augmented context: a per-tenant
// knowledge base (documents split into chunks and indexed by full-text search
// on every backend), optional memory of a user's own earlier conversations,
// and optional hybrid ranking with an embeddings endpoint.
//
// Ranking: without an embedder, the backend's text rank (SQLite FTS5 BM25,
// PostgreSQL ts_rank_cd) alone. With one, the text ranking and a cosine
// ranking of the tenant's chunk vectors (the newest MaxVectors chunks) are
// fused by reciprocal rank fusion, score = Σ 1/(60 + rank), which needs no
// calibration between the two scales. An embedder that fails degrades to
// text rank, logged, never failing a turn or an upload.
//
// Tokenisation is Terms, for indexing and querying alike, so Chinese text
// without spaces is searchable on both backends.
package retrieval

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agentchat/agentchat/internal/chat"
	"github.com/agentchat/agentchat/internal/event"
	"github.com/agentchat/agentchat/internal/llm"
	"github.com/agentchat/agentchat/internal/store"
)

// Defaults of Config.
const (
	DefaultChunkChars  = 800
	DefaultTopK        = 4
	DefaultMaxDocBytes = 512 << 10
	DefaultMaxVectors  = 5000
	rrfK               = 60
)

// ErrTooLarge: the document is over Config.MaxDocBytes.
var ErrTooLarge = errors.New("document too large")

// ErrEmpty: the document has no text to index.
var ErrEmpty = errors.New("document is empty")

// Config configures the service.
type Config struct {
	Store store.Store
	// Embedder, when set, makes ranking hybrid.
	Embedder llm.Embedder
	// Knowledge turns knowledge-base retrieval in turns on. Uploads work either way.
	Knowledge bool
	// Memory turns on searching the user's own earlier conversations.
	Memory bool
	// TopK is how many hits a turn gets at most (per source: knowledge, memory). Default 4.
	TopK int
	// ChunkChars is the largest chunk in characters. Default 800.
	ChunkChars int
	// MaxDocBytes bounds one document's text. Default 512 KiB.
	MaxDocBytes int
	// MaxVectors bounds the chunk vectors compared per query. Default 5000.
	MaxVectors int
	Logger     *slog.Logger
}

// Service indexes documents and finds context for turns. Safe for concurrent use.
type Service struct {
	cfg Config
	log *slog.Logger
}

// New returns the service.
func New(cfg Config) *Service {
	cfg.TopK = cmp.Or(cfg.TopK, DefaultTopK)
	cfg.ChunkChars = cmp.Or(cfg.ChunkChars, DefaultChunkChars)
	cfg.MaxDocBytes = cmp.Or(cfg.MaxDocBytes, DefaultMaxDocBytes)
	cfg.MaxVectors = cmp.Or(cfg.MaxVectors, DefaultMaxVectors)
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{cfg: cfg, log: log}
}

// MaxDocBytes is the largest document accepted.
func (s *Service) MaxDocBytes() int { return s.cfg.MaxDocBytes }

// DocumentInput is an upload.
type DocumentInput struct {
	Source string
	// Collection is the knowledge collection the document joins;
	// store.DefaultCollection when empty.
	Collection string
	MediaType  string // text/plain or text/markdown
	Text       string
	Metadata   json.RawMessage
}

// AddDocument splits, indexes (and embeds, with an embedder) a document.
func (s *Service) AddDocument(ctx context.Context, sc chat.Scope, in DocumentInput) (store.Document, error) {
	if len(in.Text) > s.cfg.MaxDocBytes {
		return store.Document{}, ErrTooLarge
	}
	parts := Split(in.Text, s.cfg.ChunkChars)
	if len(parts) == 0 {
		return store.Document{}, ErrEmpty
	}
	chunks := make([]store.Chunk, len(parts))
	for i, p := range parts {
		// The source name is indexed with each chunk, so a question naming the document finds it.
		chunks[i] = store.Chunk{Ordinal: i, Content: p, Terms: IndexText(in.Source + "\n" + p)}
	}
	if s.cfg.Embedder != nil {
		vecs, err := s.cfg.Embedder.Embed(ctx, parts)
		if err != nil {
			s.log.WarnContext(ctx, "embedding a document failed; it is indexed for text search only", "source", in.Source, "err", err)
		} else {
			for i := range chunks {
				chunks[i].Embedding = vecs[i]
			}
		}
	}
	return s.cfg.Store.CreateDocument(ctx, sc, store.Document{Source: in.Source, Collection: in.Collection, MediaType: in.MediaType,
		Metadata: in.Metadata, Bytes: len(in.Text)}, chunks)
}

// Documents lists the tenant's knowledge-base documents (of one
// collection, when set), one page at a time.
func (s *Service) Documents(ctx context.Context, sc chat.Scope, collection string, p store.Page) ([]store.Document, string, error) {
	return s.cfg.Store.ListDocuments(ctx, sc, store.DocumentFilter{Collection: collection}, p)
}

// Document returns one of the tenant's documents.
func (s *Service) Document(ctx context.Context, sc chat.Scope, id string) (store.Document, error) {
	return s.cfg.Store.GetDocument(ctx, sc, id)
}

// DeleteDocument deletes a document and its indexed chunks.
func (s *Service) DeleteDocument(ctx context.Context, sc chat.Scope, id string) error {
	return s.cfg.Store.DeleteDocument(ctx, sc, id)
}

// Enabled reports whether turns search anything.
func (s *Service) Enabled() bool { return s.cfg.Knowledge || s.cfg.Memory }

// Retrieve finds the context for a turn's query. The knowledge base is
// searched in collections (every collection when nil, none when empty: an
// agent's knowledge); memory, when on, is the user's own either way. No
// hits is an empty result, never an error; a failing search is logged and
// gives no hits.
func (s *Service) Retrieve(ctx context.Context, sc chat.Scope, conversationID, query string, collections []string) event.RetrievalData {
	out := event.RetrievalData{Query: query}
	terms := QueryTerms(query)
	if len(terms) == 0 {
		return out
	}
	if s.cfg.Knowledge {
		hits, err := s.knowledge(ctx, sc, query, terms, collections)
		if err != nil {
			s.log.WarnContext(ctx, "knowledge search failed", "conversation_id", conversationID, "err", err)
		}
		out.Hits = append(out.Hits, hits...)
	}
	if s.cfg.Memory {
		ps, err := s.cfg.Store.SearchMemory(ctx, sc, terms, conversationID, s.cfg.TopK)
		if err != nil {
			s.log.WarnContext(ctx, "memory search failed", "conversation_id", conversationID, "err", err)
		}
		for _, p := range ps {
			out.Hits = append(out.Hits, hit(p, p.Score))
		}
	}
	return out
}

func hit(p store.Passage, score float64) event.RetrievalHit {
	return event.RetrievalHit{Content: p.Content, Source: p.Source, Score: score, DocumentID: p.DocumentID, ChunkID: p.ChunkID}
}

func (s *Service) knowledge(ctx context.Context, sc chat.Scope, query string, terms, collections []string) ([]event.RetrievalHit, error) {
	if collections != nil && len(collections) == 0 {
		return nil, nil // the agent searches no knowledge
	}
	k := s.cfg.TopK
	text, err := s.cfg.Store.SearchKnowledge(ctx, sc, store.KnowledgeQuery{Terms: terms, Collections: collections, Limit: k * 3})
	if err != nil {
		return nil, err
	}
	var vec []store.Passage
	if s.cfg.Embedder != nil {
		vec, err = s.vectorRank(ctx, sc, query, collections, k*3)
		if err != nil {
			s.log.WarnContext(ctx, "vector ranking failed; text rank only", "err", err)
			vec = nil
		}
	}
	if vec == nil {
		var out []event.RetrievalHit
		for _, p := range text[:min(k, len(text))] {
			out = append(out, hit(p, p.Score))
		}
		return out, nil
	}
	return fuse(k, text, vec), nil
}

// vectorRank ranks the tenant's chunk vectors by cosine similarity to the query.
func (s *Service) vectorRank(ctx context.Context, sc chat.Scope, query string, collections []string, n int) ([]store.Passage, error) {
	qv, err := s.cfg.Embedder.Embed(ctx, []string{query})
	if err != nil {
		return nil, err
	}
	cands, err := s.cfg.Store.KnowledgeVectors(ctx, sc, collections, s.cfg.MaxVectors)
	if err != nil {
		return nil, err
	}
	for i := range cands {
		cands[i].Score = cosine(qv[0], cands[i].Embedding)
	}
	slices.SortStableFunc(cands, func(a, b store.Passage) int { return cmp.Compare(b.Score, a.Score) })
	// A vector is always "similar" to something; only positive similarity counts as a hit.
	cands = slices.DeleteFunc(cands, func(p store.Passage) bool { return p.Score <= 0 })
	return cands[:min(n, len(cands))], nil
}

func cosine(a, b []float32) float64 {
	if len(a) != len(b) || len(a) == 0 {
		return 0
	}
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}

// fuse merges two rankings by reciprocal rank fusion and keeps the best k.
func fuse(k int, rankings ...[]store.Passage) []event.RetrievalHit {
	score := map[string]float64{}
	byID := map[string]store.Passage{}
	var order []string
	for _, r := range rankings {
		for i, p := range r {
			if _, ok := byID[p.ChunkID]; !ok {
				byID[p.ChunkID] = p
				order = append(order, p.ChunkID)
			}
			score[p.ChunkID] += 1.0 / float64(rrfK+i+1)
		}
	}
	slices.SortStableFunc(order, func(a, b string) int { return cmp.Compare(score[b], score[a]) })
	var out []event.RetrievalHit
	for _, id := range order[:min(k, len(order))] {
		out = append(out, hit(byID[id], score[id]))
	}
	return out
}

// Remember indexes a message for memory search when memory is on.
func (s *Service) Remember(ctx context.Context, sc chat.Scope, m chat.Message) {
	if !s.cfg.Memory || strings.TrimSpace(m.Content) == "" {
		return
	}
	err := s.cfg.Store.Remember(ctx, sc, store.MemoryEntry{MessageID: m.ID, ConversationID: m.ConversationID, Role: m.Role,
		Content: m.Content, Terms: IndexText(m.Content), CreatedAt: m.CreatedAt})
	if err != nil {
		s.log.WarnContext(ctx, "remember message failed", "conversation_id", m.ConversationID, "err", err)
	}
}

// ContextMessage is the text that shows a turn's hits to the model, with
// their sources, numbered for citation. It starts with ContextHeader, which
// the offline model recognises.
func ContextMessage(d event.RetrievalData) string {
	var b strings.Builder
	b.WriteString(ContextHeader)
	for i, h := range d.Hits {
		content := h.Content
		if utf8.RuneCountInString(content) > 2000 {
			content = string([]rune(content)[:2000]) + "…"
		}
		fmt.Fprintf(&b, "\n\n[%d] source: %s\n%s", i+1, h.Source, content)
	}
	return b.String()
}

// ContextHeader starts every retrieval context message.
const ContextHeader = "Retrieved context for the user's next message (cite a source as [n] when you use it; ignore what is irrelevant):"

// ContextMessage is ContextMessage, as a method for the agent loop's Retriever seam.
func (s *Service) ContextMessage(d event.RetrievalData) string { return ContextMessage(d) }
