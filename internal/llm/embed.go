package llm

import "context"

// Embedder turns texts into vectors (an OpenAI-compatible /v1/embeddings
// endpoint, for example). Retrieval uses one when configured to rank by
// meaning as well as by words.
type Embedder interface {
	// Name identifies the endpoint and model, for logs.
	Name() string
	// Embed returns one vector per text, in order.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}
