package embed

import "context"

// Embedder turns texts into vectors: one vector per text, in order. Name names the embedder and
// its model (e.g. "openai:text-embedding-3-small"): vectors made under different names are never
// compared, and stored vectors are keyed by it.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	Name() string
}

// Local is implemented by an embedder that runs in the process (no network round trip), so
// callers need not wait to gather texts into larger batches.
type Local interface {
	Local() bool
}

var _ Embedder = (*OpenAI)(nil)
