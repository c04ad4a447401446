package retrieve

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/embed"
	"github.com/agentmem/agentmem/internal/vector"
	"github.com/agentmem/agentmem/internal/vectors"
)

// Embedder turns texts into vectors (see embed.Embedder). The retriever embeds only queries with
// it; the vectors of stored entries are made by the embedding stage (package embedder) and read
// from the vector bucket.
type Embedder = embed.Embedder

// vectorFloor is the cosine below which an embedding says nothing: vector relevance is
// max(0, (cos − floor)/(1 − floor)), so unrelated texts (cosine ~0.1–0.2 with common models)
// add nothing.
const vectorFloor = 0.2

// vectorRelevance maps a cosine to a relevance in [0,1].
func vectorRelevance(cos float64) float64 {
	return max(0, (cos-vectorFloor)/(1-vectorFloor))
}

// storedVectors are a user's vectors of one model as the embedding stage stored them (int8, as
// stored: a quarter of float32), loaded with the user's view and kept current by the service's
// watcher of the vector bucket. Safe for concurrent use.
type storedVectors struct {
	mu     sync.Mutex
	model  string // the model they are of; another model's vectors are never added
	loaded bool
	byID   map[string]storedVector
}

// storedVector is what a view keeps of a stored vector: its components, int8 with their scale.
// The owner and model it was stored with are the view's, its id the map's key: kept with each
// vector (as vectors.Vector does) they took a third of a vector's memory.
type storedVector struct {
	scale float32
	q     []int8
}

func compact(v vectors.Vector) storedVector { return storedVector{scale: v.Scale, q: v.Q} }

// float32s returns the vector's components in buf, grown as needed.
func (v storedVector) float32s(buf []float32) []float32 {
	buf = slices.Grow(buf[:0], len(v.q))[:len(v.q)]
	for i, q := range v.q {
		buf[i] = float32(q) * v.scale
	}
	return buf
}

func newStoredVectors() *storedVectors {
	return &storedVectors{byID: map[string]storedVector{}}
}

// load reads the user's vectors of model once (again after the retriever changed models); a
// failed read leaves them unloaded (ranked by keywords) for the next request to try again. It
// returns the bytes the vectors take.
func (sv *storedVectors) load(ctx context.Context, store *vectors.Store, tenant, user, model string, log zerolog.Logger) int64 {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if sv.model != model {
		sv.model, sv.loaded, sv.byID = model, false, map[string]storedVector{}
	}
	if sv.loaded {
		return 0
	}
	var n int64
	err := store.Scan(ctx, tenant, user, model, func(v vectors.Vector) {
		if _, ok := sv.byID[v.ID]; !ok {
			sv.byID[v.ID] = compact(v)
			n += vectorBytes(v)
		}
	})
	if err != nil {
		log.Warn().Err(err).Str("tenant", tenant).Str("user", user).Msg("loading vectors; ranking by keywords meanwhile")
		return n
	}
	sv.loaded = true
	return n
}

// put adds a vector the watcher saw written; it returns the bytes it adds.
func (sv *storedVectors) put(v vectors.Vector) int64 {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if _, ok := sv.byID[v.ID]; ok || v.Model != sv.model {
		return 0
	}
	sv.byID[v.ID] = compact(v)
	return vectorBytes(v)
}

// remove forgets a vector whose key was deleted or purged.
func (sv *storedVectors) remove(id string) {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	delete(sv.byID, id)
}

// reset drops the vectors: the next load reads them again.
func (sv *storedVectors) reset() {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	sv.loaded, sv.byID = false, map[string]storedVector{}
}

// len returns the number of vectors held.
func (sv *storedVectors) len() int {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return len(sv.byID)
}

// get returns the vector of an entry.
func (sv *storedVectors) get(id string) (storedVector, bool) {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	v, ok := sv.byID[id]
	return v, ok
}

// vectorBytes is the approximate memory of a stored vector (its int8 components, id and map
// entry) and of its float32 copy in a search index.
func vectorBytes(v vectors.Vector) int64 {
	return int64(5*len(v.Q) + 2*len(v.ID) + 160)
}

// vectorSet is the search index over the vectors of one index's entries. It is created empty and
// learns its dimension from the first vector.
type vectorSet struct {
	mu    sync.Mutex
	model string
	ix    *vector.Index
	have  map[string]bool
	buf   []float32 // a vector's components on their way into ix
}

// sync adds to the set the stored vectors of the given entries it does not hold yet; entries
// without a stored vector are left out (the embedding stage has not reached them).
func (vs *vectorSet) sync(stored *storedVectors, ids []string, log zerolog.Logger) {
	stored.mu.Lock()
	model := stored.model
	stored.mu.Unlock()
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if vs.have == nil || vs.model != model {
		vs.model, vs.ix, vs.have = model, nil, map[string]bool{}
	}
	for _, id := range ids {
		if _, seen := vs.have[id]; seen {
			continue
		}
		v, ok := stored.get(id)
		if !ok {
			continue
		}
		vs.buf = v.float32s(vs.buf)
		f := vs.buf
		if vs.ix == nil {
			ix, err := vector.New(vector.Config{Dim: len(f)})
			if err != nil {
				log.Warn().Err(err).Msg("vector index")
				return
			}
			vs.ix = ix
			ix.Grow(len(ids)) // a cold view adds most of them: one allocation, not a doubling series
		}
		if err := vs.ix.Add(id, f); err == nil {
			vs.have[id] = true
		} else if errors.Is(err, vector.ErrZeroVector) {
			// The model had nothing to say about the text (the local embedder and Chinese):
			// no vector score for it (has is false), and no retry on every request.
			vs.have[id] = false
		}
	}
}

// has reports whether the set holds a vector of the entry.
func (vs *vectorSet) has(id string) bool {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	return vs.have[id]
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
