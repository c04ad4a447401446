package retrieve

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/agentmem/agentmem/internal/rank"
	"github.com/agentmem/agentmem/pkg/memory"
)

// Ranking modes of Fusion.Rank.
const (
	RankFused   = "fused"
	RankKeyword = "keyword"
	RankVector  = "vector"
)

// DefaultVectorWeight is β of the fusion (see fuse), tuned on the development sets
// (docs/embeddings.md).
const DefaultVectorWeight = 0.4

// Fusion says how an entry's keyword relevance and vector relevance combine into the relevance it
// is ranked by (score = relevance × decay × weight). The zero value is the tuned default.
type Fusion struct {
	// Rank is what ranks: "fused" (default), "keyword" (vector relevance reported, not used) or
	// "vector" (vector relevance alone, for measurements).
	Rank string
	// VectorWeight is β, the largest share of the vector part (default DefaultVectorWeight).
	VectorWeight float64
}

func (f Fusion) withDefaults() Fusion {
	if f.Rank == "" {
		f.Rank = RankFused
	}
	if f.VectorWeight == 0 {
		f.VectorWeight = DefaultVectorWeight
	}
	return f
}

// Validate names a bad field.
func (f Fusion) Validate() error {
	f = f.withDefaults()
	switch {
	case f.Rank != RankFused && f.Rank != RankKeyword && f.Rank != RankVector:
		return fmt.Errorf("retrieve: fusion rank %q: want fused, keyword or vector", f.Rank)
	case f.VectorWeight < 0:
		return fmt.Errorf("retrieve: fusion vector weight %g must not be negative", f.VectorWeight)
	}
	return nil
}

// fused is the relevance a candidate is ranked by (set by fuse).
func (c candidate) fused() float64 { return c.score }

// fuse sets the relevance every candidate of one request is ranked by. Without any vector
// relevance (no embedder; a query without a vector, e.g. Chinese text for the local embedder;
// no entry near it) that is the keyword relevance, unchanged. With vectors, in fused mode:
//
//	f(d)         = (kw(d) + b·K·v(d)/V) / (1 + b),   b = β·(1 − K)²
//	relevance(d) = f(d) · γ^n(d)
//
// where kw is the keyword relevance before the session-diversity factor, v the vector relevance
// (0 for an entry without a vector), K the highest keyword relevance and V the highest vector
// relevance among the request's candidates (K = 1 when no entry matches a keyword), and n(d), for
// an archived turn, the number of turns of its session with a higher f (γ = 0.75, as in package
// rank, which discounts archived turns alone: other entries have n = 0).
//
// So the vector part is on the scale of this query's keyword scores, whatever the embedder's
// cosines look like, and its weight shrinks as the keywords match better: a short question
// whose words are found (K near 1) ranks by them; a long chatty query that matches a word
// here and there (K near 0.05) lets meaning reorder and add entries. The session diversity is
// applied after the fusion, as the keyword ranking applies it, so that vectors do not crowd the
// top with one session's turns (which cost LongMemEval's session recall when it was applied
// before). docs/embeddings.md has what each part measured.
func fuse(f Fusion, cands []candidate) {
	f = f.withDefaults()
	var maxRel, maxVec float64
	for _, c := range cands {
		maxRel = max(maxRel, c.relevance)
		if c.vector != nil {
			maxVec = max(maxVec, *c.vector)
		}
	}
	for i := range cands {
		c := &cands[i]
		switch {
		case f.Rank == RankVector:
			c.score = 0
			if c.vector != nil {
				c.score = *c.vector
			}
		case f.Rank == RankKeyword || maxVec == 0:
			c.score = c.relevance
		}
	}
	if f.Rank != RankFused || maxVec == 0 {
		return
	}
	k := maxRel
	if k == 0 {
		k = 1
	}
	b := f.VectorWeight * (1 - maxRel) * (1 - maxRel)
	for i := range cands {
		c := &cands[i]
		v := 0.0
		if c.vector != nil {
			v = *c.vector
		}
		c.score = (c.keyword + b*k*v/maxVec) / (1 + b)
	}
	order := make([]int, len(cands))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(x, y int) int { return cmp.Compare(cands[y].score, cands[x].score) })
	above := map[[2]string]int{}
	for _, i := range order {
		c := &cands[i]
		if c.source != memory.SourceArchive || c.session == "" {
			continue
		}
		key := [2]string{c.source, c.session}
		for range above[key] {
			c.score *= rank.DefaultDiversity
		}
		above[key]++
	}
}
