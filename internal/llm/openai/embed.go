package openai

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/agentchat/agentchat/internal/llm"
)

// EmbedderConfig configures an OpenAI-compatible embeddings endpoint.
type EmbedderConfig struct {
	// BaseURL is the API root; POST <BaseURL>/embeddings is called. Default DefaultBaseURL.
	BaseURL string
	APIKey  string
	// Model names the embedding model. Required.
	Model string
	// Timeout bounds one call. Default 30s.
	Timeout    time.Duration
	HTTPClient *http.Client
}

// Embedder calls an OpenAI-compatible /v1/embeddings endpoint through the official SDK.
type Embedder struct {
	cfg     EmbedderConfig
	service sdk.EmbeddingService
	host    string
}

var _ llm.Embedder = (*Embedder)(nil)

// NewEmbedder returns an embeddings client.
func NewEmbedder(cfg EmbedderConfig) (*Embedder, error) {
	cfg.BaseURL = strings.TrimRight(cmp.Or(cfg.BaseURL, DefaultBaseURL), "/")
	cfg.Timeout = cmp.Or(cfg.Timeout, 30*time.Second)
	cfg.HTTPClient = cmp.Or(cfg.HTTPClient, http.DefaultClient)
	if cfg.Model == "" {
		return nil, errors.New("openai: EmbedderConfig.Model is required")
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("openai: embeddings base URL is not an http(s) URL")
	}
	// As for chat: no environment variables are read by the SDK.
	opts := []option.RequestOption{
		option.WithBaseURL(cfg.BaseURL + "/"),
		option.WithHTTPClient(cfg.HTTPClient),
		option.WithMaxRetries(1),
		option.WithRequestTimeout(cfg.Timeout),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	return &Embedder{cfg: cfg, service: sdk.NewEmbeddingService(opts...), host: u.Host}, nil
}

// Name is the model and the endpoint's host.
func (e *Embedder) Name() string { return fmt.Sprintf("%s (embeddings, %s)", e.cfg.Model, e.host) }

// Embed returns one vector per text, in the order of texts.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	resp, err := e.service.New(ctx, sdk.EmbeddingNewParams{
		Model:          sdk.EmbeddingModel(e.cfg.Model),
		Input:          sdk.EmbeddingNewParamsInputUnion{OfArrayOfStrings: texts},
		EncodingFormat: sdk.EmbeddingNewParamsEncodingFormatFloat,
	})
	if err != nil {
		// The SDK's error text may quote the request; say only what failed.
		var apiErr *sdk.Error
		if errors.As(err, &apiErr) {
			return nil, fmt.Errorf("embeddings endpoint %s answered %d", e.host, apiErr.StatusCode)
		}
		return nil, fmt.Errorf("embeddings endpoint %s: unreachable or failed", e.host)
	}
	out := make([][]float32, len(texts))
	for _, d := range resp.Data {
		if d.Index < 0 || int(d.Index) >= len(texts) {
			return nil, fmt.Errorf("embeddings endpoint %s: index %d out of range", e.host, d.Index)
		}
		v := make([]float32, len(d.Embedding))
		for i, x := range d.Embedding {
			v[i] = float32(x)
		}
		out[d.Index] = v
	}
	for i, v := range out {
		if v == nil {
			return nil, fmt.Errorf("embeddings endpoint %s: no vector for input %d", e.host, i)
		}
	}
	return out, nil
}
