package main

import (
	"fmt"
	"log/slog"
	"net/http"

	"github.com/agentchat/agentchat/internal/compaction"
	"github.com/agentchat/agentchat/internal/config"
	"github.com/agentchat/agentchat/internal/engine/local"
	"github.com/agentchat/agentchat/internal/file"
	"github.com/agentchat/agentchat/internal/llm"
	"github.com/agentchat/agentchat/internal/llm/openai"
	"github.com/agentchat/agentchat/internal/prompt"
	"github.com/agentchat/agentchat/internal/retrieval"
	"github.com/agentchat/agentchat/internal/store"
)

// contextParts are the seed 002 context-management services the
// configuration asks for.
type contextParts struct {
	retrieval *retrieval.Service
	compactor *compaction.Compactor
	prompt    local.PromptSource
	blobs     local.BlobStore
	inline    int
	files     *file.Service
}

func newContextParts(cfg config.Config, st store.Store, model llm.Model, log *slog.Logger) (contextParts, error) {
	var emb llm.Embedder
	if cfg.EmbeddingsModel != "" {
		e, err := openai.NewEmbedder(openai.EmbedderConfig{BaseURL: cfg.EmbeddingsBaseURL, APIKey: cfg.EmbeddingsAPIKey,
			Model: cfg.EmbeddingsModel, HTTPClient: http.DefaultClient})
		if err != nil {
			return contextParts{}, fmt.Errorf("embeddings: %w", err)
		}
		emb = e
		log.Info("hybrid retrieval", "embedder", e.Name())
	}
	p := contextParts{
		retrieval: retrieval.New(retrieval.Config{Store: st, Embedder: emb, Knowledge: cfg.Retrieval == "on", Memory: cfg.Memory == "on",
			TopK: cfg.RetrievalTopK, MaxDocBytes: cfg.KnowledgeMaxBytes, Logger: log}),
		compactor: compaction.New(compaction.Config{Store: st, Model: model, MinMessages: cfg.CompactMinMessages,
			Keep: cfg.CompactKeepMessages, ContextTokens: cfg.AutoCompactTokens, Logger: log}),
		blobs:  st,
		inline: max(cfg.InlinePayloadBytes, 0),
	}
	if cfg.PromptDir != "" {
		p.prompt = prompt.New(cfg.PromptDir, log)
	}
	return p, nil
}

// apply gives the local agent loop its context parts.
func (p contextParts) apply(c *local.Config) {
	if p.retrieval != nil && p.retrieval.Enabled() {
		c.Retriever = p.retrieval
	}
	c.Prompt, c.Blobs, c.InlineBytes = p.prompt, p.blobs, p.inline
	if p.files != nil {
		c.Files = p.files
	}
}
