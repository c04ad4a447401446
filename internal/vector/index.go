// Package vector finds the stored embedding vectors most similar to a query by cosine
// similarity. Vectors are normalised on the way in, so a similarity is a plain dot product.
// Below a configurable size the index is searched exactly, by brute force over one contiguous
// array; above it, approximately, through a Hierarchical Navigable Small World (HNSW) graph.
package vector

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
)

// Errors wrapped by Add.
var (
	ErrDimension  = errors.New("vector: wrong dimension")
	ErrZeroVector = errors.New("vector: zero vector")
	ErrNotFinite  = errors.New("vector: NaN or infinite component")
)

// mapEntryBytes is the approximate memory of one entry of the id map (a string header, an
// int32, a control byte and the spare room of a Swiss table), not counting the id's bytes.
const mapEntryBytes = 40

// Index holds L2-normalised float32 vectors by id and answers cosine top-k queries.
//
// While it holds fewer than Config.ExactBelow vectors, Search is exact. When it grows to
// ExactBelow, the Add that gets it there builds an HNSW graph over every vector (searches go
// on, exact, meanwhile), and from then on each Add inserts into the graph and Search walks it.
// If the index shrinks below ExactBelow/2 the graph is dropped and searches are exact again.
//
// Search, SearchExact, Len and Bytes may be called concurrently with each other and with Add
// and Remove. Add and Remove are serialised by a writer lock; a writer holds the lock that
// searches wait on only while it publishes its changes, not while it searches the graph for
// where a vector belongs, nor while it rebuilds the graph.
//
// Memory is 4*Dim bytes a vector plus about 240 for its graph links, id and map entry (1,773
// bytes in all at 384 dimensions with M=16), plus the vectors of tombstones until compaction.
type Index struct {
	cfg Config

	wmu sync.Mutex   // serialises Add and Remove, including the rebuilds they start
	mu  sync.RWMutex // shared by searches; exclusive while a writer changes the fields below

	// Changed only with wmu and mu both held; a writer holding wmu alone may read them.
	vecs    []float32        // normalised vectors, slot s at [s*Dim, (s+1)*Dim)
	ids     []string         // the id of each slot, "" for a tombstone
	slots   map[string]int32 // id -> slot of its live vector
	dead    []bool           // tombstones, by slot; nil while there is no graph
	ndead   int              // tombstones in dead, not counting a slot being inserted
	idBytes int              // total length of the live ids
	g       *graph           // nil while searches are exact

	// Used by writers only.
	rng *rand.Rand
	pl  planner

	scratch sync.Pool // *scratch, per search
}

// Hit is one search result.
type Hit struct {
	ID    string
	Score float32 // cosine similarity to the query, in [-1, 1]
}

// New returns an empty index. It fails, with an error wrapping ErrInvalidConfig, if cfg does
// not validate.
func New(cfg Config) (*Index, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	seed := uint64(cfg.Seed)
	return &Index{
		cfg:     cfg,
		slots:   make(map[string]int32),
		rng:     rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		scratch: sync.Pool{New: func() any { return new(scratch) }},
	}, nil
}

// Add stores a normalised copy of v under id, replacing any vector already stored under it.
// It fails, storing nothing, if v does not have Config.Dim components (ErrDimension), is all
// zeros (ErrZeroVector) or has a NaN or infinite component (ErrNotFinite). The Add that brings
// the index to Config.ExactBelow vectors builds the graph, and takes as long as that does.
func (ix *Index) Add(id string, v []float32) error {
	if len(v) != ix.cfg.Dim {
		return fmt.Errorf("adding %q: %w: got %d components, want %d", id, ErrDimension, len(v), ix.cfg.Dim)
	}
	nv, err := checkedNormalized(v)
	if err != nil {
		return fmt.Errorf("adding %q: %w", id, err)
	}

	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	old, replacing := ix.slots[id]

	if ix.g == nil {
		ix.mu.Lock()
		if replacing {
			copy(ix.vec(old), nv)
		} else {
			ix.slots[id] = ix.appendSlot(id, nv)
		}
		ix.mu.Unlock()
		if len(ix.slots) >= ix.cfg.ExactBelow {
			ix.rebuild(true)
		}
		return nil
	}

	// Graph: append the vector as an unlinked node, hidden as if deleted; find its links
	// while searches go on; then link it, reveal it and retire the vector it replaces in one
	// step, so that a search sees exactly one vector for id at any time.
	level := ix.g.randomLevel()
	ix.mu.Lock()
	x := ix.appendSlot(id, nv)
	ix.g.addNode(level)
	ix.mu.Unlock()

	ix.g.plan(ix.space(), x, level, &ix.pl)

	ix.mu.Lock()
	ix.g.apply(ix.space(), x, level, &ix.pl)
	ix.dead[x] = false
	if replacing {
		ix.retire(old)
	}
	ix.slots[id] = x
	ix.mu.Unlock()
	if replacing {
		ix.maybeRebuild()
	}
	return nil
}

// Grow makes room for n more vectors while searches are exact, so that adding them does not
// reallocate the storage as it fills (a series of doublings that leaves twice the final storage
// behind as garbage). It changes nothing once the index has a graph.
func (ix *Index) Grow(n int) {
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	if ix.g != nil || n <= 0 {
		return
	}
	n = min(n, ix.cfg.ExactBelow-len(ix.ids))
	if n <= 0 {
		return
	}
	ix.mu.Lock()
	ix.vecs = slices.Grow(ix.vecs, n*ix.cfg.Dim)
	ix.ids = slices.Grow(ix.ids, n)
	ix.mu.Unlock()
}

// Remove deletes the vector stored under id, if any.
//
// While searches are exact the vector's slot is refilled with the last one at once. With a
// graph, the vector becomes a tombstone: it stays in the graph, which searches still walk
// through, but is never returned. Tombstones are compacted away by rebuilding the graph
// without them once they exceed half the live vectors (a Remove or replacing Add that crosses
// that line takes as long as the rebuild; searches go on against the old graph meanwhile), or
// by dropping the graph when the index shrinks below Config.ExactBelow/2.
func (ix *Index) Remove(id string) {
	ix.wmu.Lock()
	defer ix.wmu.Unlock()
	slot, ok := ix.slots[id]
	if !ok {
		return
	}
	ix.mu.Lock()
	delete(ix.slots, id)
	if ix.g == nil {
		last := int32(len(ix.ids) - 1)
		if slot != last {
			copy(ix.vec(slot), ix.vec(last))
			ix.ids[slot] = ix.ids[last]
			ix.slots[ix.ids[slot]] = slot
		}
		ix.ids[last] = ""
		ix.ids = ix.ids[:last]
		ix.vecs = ix.vecs[:int(last)*ix.cfg.Dim]
		ix.idBytes -= len(id)
		ix.mu.Unlock()
		return
	}
	ix.retire(slot)
	ix.mu.Unlock()
	ix.maybeRebuild()
}

// Len returns the number of vectors stored.
func (ix *Index) Len() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return len(ix.slots)
}

// Search returns the k stored vectors most similar to q, best first, ties by id: exactly while
// the index has no graph (see Index), else approximately through the graph, looking at
// max(Config.EfSearch, k) candidates. It returns fewer when fewer are stored, and nil when
// k < 1 or q has the wrong dimension, is zero or is not finite.
func (ix *Index) Search(q []float32, k int) []Hit {
	qn, ok := ix.query(q, k)
	if !ok {
		return nil
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.g == nil {
		return ix.exact(qn, k)
	}
	var dead []bool
	if ix.ndead > 0 {
		dead = ix.dead
	}
	s := ix.scratch.Get().(*scratch)
	found := ix.g.search(ix.space(), qn, max(ix.cfg.EfSearch, k), dead, s)
	hits := ix.hits(found[:min(k, len(found))])
	ix.scratch.Put(s)
	return hits
}

// SearchExact is Search by brute force whatever the size of the index: the reference that the
// graph's answers are measured against. It returns nil in the same cases as Search.
func (ix *Index) SearchExact(q []float32, k int) []Hit {
	qn, ok := ix.query(q, k)
	if !ok {
		return nil
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.exact(qn, k)
}

// Bytes returns the approximate memory held by the index: vectors, ids, the id map, the graph
// and tombstones not yet compacted away.
func (ix *Index) Bytes() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	b := 4*cap(ix.vecs) + 16*cap(ix.ids) + ix.idBytes + mapEntryBytes*len(ix.slots) + cap(ix.dead)
	if ix.g != nil {
		b += ix.g.bytes()
	}
	return b
}

// query checks and normalises a search's arguments.
func (ix *Index) query(q []float32, k int) ([]float32, bool) {
	if k < 1 || len(q) != ix.cfg.Dim {
		return nil, false
	}
	return normalized(q)
}

// exact scans every live slot, keeping the k most similar in a min-heap. The caller holds mu.
func (ix *Index) exact(q []float32, k int) []Hit {
	dim, n := ix.cfg.Dim, len(ix.ids)
	h := make([]scored, 0, min(k, n))
	vecs, dead := ix.vecs, ix.dead
	for s, o := 0, 0; s < n; s, o = s+1, o+dim {
		if dead != nil && dead[s] {
			continue
		}
		sim := dot(q, vecs[o:o+dim:o+dim])
		switch {
		case len(h) < k:
			h = minPush(h, scored{sim, int32(s)})
		case sim > h[0].sim:
			h[0] = scored{sim, int32(s)}
			minDown(h, 0)
		}
	}
	return ix.hits(drainBestFirst(h, nil))
}

// hits turns nodes into results, best first, ties broken by id so that results are
// repeatable. The caller holds mu.
func (ix *Index) hits(found []scored) []Hit {
	hits := make([]Hit, len(found))
	for i, f := range found {
		hits[i] = Hit{ID: ix.ids[f.node], Score: f.sim}
	}
	slices.SortStableFunc(hits, func(a, b Hit) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return hits
}

func (ix *Index) space() space { return space{ix.vecs, ix.cfg.Dim} }

func (ix *Index) vec(slot int32) []float32 {
	o := int(slot) * ix.cfg.Dim
	return ix.vecs[o : o+ix.cfg.Dim]
}

// appendSlot stores v in a new slot, which with a graph starts hidden as a tombstone, and
// returns the slot. The caller holds wmu and mu and sets ix.slots.
func (ix *Index) appendSlot(id string, v []float32) int32 {
	slot := int32(len(ix.ids))
	ix.vecs = append(ix.vecs, v...)
	ix.ids = append(ix.ids, id)
	ix.idBytes += len(id)
	if ix.g != nil {
		ix.dead = append(ix.dead, true)
	}
	return slot
}

// retire tombstones a graph slot. The caller holds wmu and mu.
func (ix *Index) retire(slot int32) {
	ix.dead[slot] = true
	ix.ndead++
	ix.idBytes -= len(ix.ids[slot])
	ix.ids[slot] = ""
}

// maybeRebuild compacts tombstones away once they exceed half the live vectors, and drops the
// graph once the index has shrunk below ExactBelow/2. The caller holds wmu.
func (ix *Index) maybeRebuild() {
	live := len(ix.slots)
	switch {
	case live < ix.cfg.ExactBelow/2:
		ix.rebuild(false)
	case ix.ndead > live/2:
		ix.rebuild(true)
	}
}

// rebuild replaces the storage with a compact copy of the live vectors and, when withGraph, a
// graph over them built from scratch. It needs wmu only: searches go on against the old
// storage until the new one is published, and only Add and Remove wait.
func (ix *Index) rebuild(withGraph bool) {
	dim, live := ix.cfg.Dim, len(ix.slots)
	vecs := make([]float32, 0, live*dim)
	ids := make([]string, 0, live)
	slots := make(map[string]int32, live)
	for s, id := range ix.ids {
		if ix.dead != nil && ix.dead[s] {
			continue
		}
		slots[id] = int32(len(ids))
		ids = append(ids, id)
		vecs = append(vecs, ix.vec(int32(s))...)
	}
	var (
		g    *graph
		dead []bool
	)
	if withGraph {
		g = build(ix.cfg, ix.rng, space{vecs, dim}, len(ids), &ix.pl)
		dead = make([]bool, len(ids))
	}

	ix.mu.Lock()
	ix.vecs, ix.ids, ix.slots, ix.dead, ix.ndead, ix.g = vecs, ids, slots, dead, 0, g
	ix.mu.Unlock()
}

// checkedNormalized is normalized with the reason when v cannot be normalised.
func checkedNormalized(v []float32) ([]float32, error) {
	out, ok := normalized(v)
	if ok {
		return out, nil
	}
	for _, x := range v {
		if f := float64(x); math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, ErrNotFinite
		}
	}
	return nil, ErrZeroVector
}
