package retrieve

import (
	"context"
	"sync"

	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/embed"
	"github.com/agentmem/agentmem/internal/vector"
)

// Embedder turns texts into vectors (see embed.Embedder).
type Embedder = embed.Embedder

// vectorFloor is the cosine below which an embedding says nothing: vector relevance is
// max(0, (cos − floor)/(1 − floor)), so unrelated texts (cosine ~0.1–0.2 with common models)
// add nothing.
const vectorFloor = 0.2

// vectorRelevance maps a cosine to a relevance in [0,1].
func vectorRelevance(cos float64) float64 {
	return max(0, (cos-vectorFloor)/(1-vectorFloor))
}

// vectorSet holds the vectors of one index's entries, for one embedder. It is created empty and
// learns its dimension from the first vector.
type vectorSet struct {
	mu   sync.Mutex
	name string
	ix   *vector.Index
	have map[string]bool
}

// ensure embeds the texts (id → text) the set has no vector for. A failing embedder leaves the
// set as it is: the request ranks by keywords alone and the next one tries again.
func (vs *vectorSet) ensure(ctx context.Context, emb Embedder, texts map[string]string, log zerolog.Logger) {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if vs.name != emb.Name() {
		vs.ix, vs.have, vs.name = nil, map[string]bool{}, emb.Name()
	}
	var ids []string
	var batch []string
	for id, text := range texts {
		if !vs.have[id] && text != "" {
			ids = append(ids, id)
			batch = append(batch, text)
		}
	}
	if len(batch) == 0 {
		return
	}
	vecs, err := emb.Embed(ctx, batch)
	if err != nil {
		log.Warn().Err(err).Int("texts", len(batch)).Msg("embedding; ranking by keywords meanwhile")
		return
	}
	for i, v := range vecs {
		if vs.ix == nil {
			if vs.ix, err = vector.New(vector.Config{Dim: len(v)}); err != nil {
				log.Warn().Err(err).Msg("vector index")
				return
			}
		}
		if err := vs.ix.Add(ids[i], v); err == nil {
			vs.have[ids[i]] = true
		}
	}
}

// remove forgets the vectors of entries that left the index.
func (vs *vectorSet) remove(ids ...string) {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	for _, id := range ids {
		if vs.ix != nil && vs.have[id] {
			vs.ix.Remove(id)
		}
		delete(vs.have, id)
	}
}

// search returns the vector relevance of the k entries nearest to q.
func (vs *vectorSet) search(q []float32, k int) map[string]float64 {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	out := map[string]float64{}
	if vs.ix == nil || q == nil {
		return out
	}
	for _, h := range vs.ix.Search(q, k) {
		if r := vectorRelevance(float64(h.Score)); r > 0 {
			out[h.ID] = r
		}
	}
	return out
}
