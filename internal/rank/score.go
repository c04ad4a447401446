package rank

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/agentmem/agentmem/internal/search"
)

// Hit is a document found by [Index.Search].
type Hit struct {
	ID        string
	Keyword   float64 // keyword relevance in [0,1]
	Vector    float64 // vector similarity in [0,1], when HasVector
	HasVector bool
	Relevance float64 // the fused relevance in [0,1] that orders the hits
}

// qterm is a distinct query term with its weight.
type qterm struct {
	term string
	w    float64
}

// queryTerms returns the distinct terms of query with their weights.
func (c *Config) queryTerms(query string) []qterm {
	terms := search.Terms(query)
	idx := make(map[string]int, len(terms))
	var out []qterm
	for _, t := range terms {
		if i, ok := idx[t]; ok {
			out[i].w++
			continue
		}
		idx[t] = len(out)
		out = append(out, qterm{term: t, w: 1})
	}
	for i := range out {
		if c.QueryK3 < 0 {
			out[i].w = 1
		} else {
			f := out[i].w
			out[i].w = (c.QueryK3 + 1) * f / (c.QueryK3 + f)
		}
	}
	return out
}

// scratch holds per-search working arrays, reused through a pool.
type scratch struct {
	acc     []float64 // by slot: turn score
	ctf     []float64 // by slot: the current term's frequency in the turn's context field
	touched []int32
	gacc    []float64 // by group: group score
	gtf     []float64
	gtouch  []int32
	matched []int32 // slots with acc > 0
	gmark   []bool
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// Search returns the k best documents for query (all when k <= 0), best first, ties broken
// by id; only documents with a relevance above zero are returned. An empty query, or one with
// no terms, returns none.
func (ix *Index) Search(query string, k int) []Hit {
	qt := ix.cfg.queryTerms(query)
	if len(qt) == 0 {
		return nil
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.live == 0 {
		return nil
	}
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)
	hits := ix.search(s, qt)
	if k > 0 && len(hits) > k {
		hits = hits[:k]
	}
	return hits
}

func (ix *Index) search(s *scratch, qt []qterm) []Hit {
	cfg := &ix.cfg
	qt = ix.filterTerms(qt)
	turnPerfect, groupPerfect := ix.score(s, qt)
	if turnPerfect == 0 {
		return nil
	}
	rel := ix.fuse(s, turnPerfect, groupPerfect)
	if cfg.PRFDocs > 0 && len(s.matched) > 0 {
		qt = ix.expand(s, qt, rel)
		turnPerfect, groupPerfect = ix.score(s, qt)
		rel = ix.fuse(s, turnPerfect, groupPerfect)
	}
	hits := make([]Hit, len(s.matched))
	for i, slot := range s.matched {
		hits[i] = Hit{ID: ix.docs[slot].id, Keyword: rel[i], Relevance: rel[i]}
	}
	order := func(a, b Hit) int {
		if c := cmp.Compare(b.Relevance, a.Relevance); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	}
	slices.SortFunc(hits, order)
	if d := cfg.Diversity; d > 0 && d < 1 {
		seen := make(map[int32]int)
		for i := range hits {
			g := ix.docs[ix.slots[hits[i].ID]].group
			hits[i].Relevance *= math.Pow(d, float64(seen[g]))
			seen[g]++
		}
		slices.SortStableFunc(hits, order)
	}
	return hits
}

// filterTerms drops query terms found in more than MaxDF of the documents.
func (ix *Index) filterTerms(qt []qterm) []qterm {
	if ix.cfg.MaxDF < 0 {
		return qt
	}
	out := qt[:0:0]
	for _, q := range qt {
		if tid, ok := ix.terms[q.term]; ok && float64(len(ix.postings[tid].slots)) > ix.cfg.MaxDF*float64(ix.live) {
			continue
		}
		out = append(out, q)
	}
	return out
}

func idf(n, df int) float64 {
	return math.Log(1 + (float64(n-df)+0.5)/(float64(df)+0.5))
}

// score fills s.acc (turn scores, by slot), s.gacc (group scores) and s.matched, and returns
// the scores of a perfect turn and a perfect group, for normalisation.
func (ix *Index) score(s *scratch, qt []qterm) (turnPerfect, groupPerfect float64) {
	cfg := &ix.cfg
	k1, b := cfg.K1, cfg.B
	n := ix.live
	s.acc = grow(s.acc, len(ix.docs))
	s.ctf = grow(s.ctf, len(ix.docs))
	s.gacc = grow(s.gacc, len(ix.grps))
	s.gtf = grow(s.gtf, len(ix.grps))
	s.gmark = grow(s.gmark, len(ix.grps))
	s.matched = s.matched[:0]
	w := max(cfg.Neighbour, 0)
	avgLen := float64(ix.totalLen) / float64(n)
	avgCLen := avgLen
	if w > 0 {
		if cfg.NeighbourPair {
			avgCLen = avgLen * (1 + w)
		} else {
			avgCLen = (float64(ix.totalLen) + w*float64(ix.nbLen)) / float64(n)
		}
	}
	if avgCLen == 0 {
		avgCLen = 1
	}
	avgGLen := float64(ix.totalLen) / float64(ix.nGroups)
	if avgGLen == 0 {
		avgGLen = 1
	}
	sessionBM25 := cfg.Session > 0 && !cfg.SessionMax
	for _, q := range qt {
		tid, ok := ix.terms[q.term]
		df := 0
		if ok {
			df = len(ix.postings[tid].slots)
		}
		tIDF := idf(n, df)
		turnPerfect += q.w * tIDF * (k1 + 1)
		if !ok {
			if sessionBM25 {
				groupPerfect += q.w * idf(ix.nGroups, 0) * (k1 + 1)
			}
			continue
		}
		p := &ix.postings[tid]
		s.touched = s.touched[:0]
		add := func(slot int32, f float64) {
			if s.ctf[slot] == 0 {
				s.touched = append(s.touched, slot)
			}
			s.ctf[slot] += f
		}
		for i, slot := range p.slots {
			tf := float64(p.tfs[i])
			add(slot, tf)
			if w > 0 {
				for _, nb := range ix.neighbours(slot) {
					add(nb, w*tf)
				}
			}
		}
		for _, slot := range s.touched {
			d := &ix.docs[slot]
			clen := float64(d.length)
			if w > 0 {
				for _, nb := range ix.neighbours(slot) {
					clen += w * float64(ix.docs[nb].length)
				}
			}
			f := s.ctf[slot]
			norm := k1 * (1 - b + b*clen/avgCLen)
			if s.acc[slot] == 0 {
				s.matched = append(s.matched, slot)
			}
			s.acc[slot] += q.w * tIDF * f * (k1 + 1) / (f + norm)
			s.ctf[slot] = 0
		}
		if !sessionBM25 {
			continue
		}
		s.gtouch = s.gtouch[:0]
		for i, slot := range p.slots {
			g := ix.docs[slot].group
			if !s.gmark[g] {
				s.gmark[g] = true
				s.gtouch = append(s.gtouch, g)
			}
			s.gtf[g] += float64(p.tfs[i])
		}
		gIDF := idf(ix.nGroups, len(s.gtouch))
		groupPerfect += q.w * gIDF * (k1 + 1)
		for _, g := range s.gtouch {
			f := s.gtf[g]
			norm := k1 * (1 - b + b*float64(ix.grps[g].length)/avgGLen)
			s.gacc[g] += q.w * gIDF * f * (k1 + 1) / (f + norm)
			s.gtf[g] = 0
			s.gmark[g] = false
		}
	}
	return turnPerfect, groupPerfect
}

// neighbours returns the slots whose terms enter slot's context field.
func (ix *Index) neighbours(slot int32) []int32 {
	d := &ix.docs[slot]
	var out [2]int32
	n := 0
	if ix.cfg.NeighbourPair {
		if d.user {
			if d.next >= 0 && !ix.docs[d.next].user {
				out[n] = d.next
				n++
			}
		} else if d.prev >= 0 && ix.docs[d.prev].user {
			out[n] = d.prev
			n++
		}
		return out[:n]
	}
	if d.prev >= 0 {
		out[n] = d.prev
		n++
	}
	if d.next >= 0 {
		out[n] = d.next
		n++
	}
	return out[:n]
}

// fuse returns the relevance of each matched slot, in s.matched order: the normalised turn
// score blended with its group's.
func (ix *Index) fuse(s *scratch, turnPerfect, groupPerfect float64) []float64 {
	cfg := &ix.cfg
	rel := make([]float64, len(s.matched))
	lambda := max(cfg.Session, 0)
	if lambda > 0 && cfg.SessionMax {
		for _, slot := range s.matched {
			g := ix.docs[slot].group
			s.gacc[g] = max(s.gacc[g], s.acc[slot]/turnPerfect)
		}
		groupPerfect = 1
	}
	if cfg.Assistant != 1 {
		for _, slot := range s.matched {
			if ix.docs[slot].assistant {
				s.acc[slot] *= cfg.Assistant
			}
		}
	}
	for i, slot := range s.matched {
		r := s.acc[slot] / turnPerfect
		if lambda > 0 && groupPerfect > 0 {
			r = (r + lambda*s.gacc[ix.docs[slot].group]/groupPerfect) / (1 + lambda)
		}
		rel[i] = min(r, 1)
	}
	// Reset the accumulators for the next scoring pass.
	for _, slot := range s.matched {
		s.acc[slot] = 0
	}
	clear(s.gacc)
	return rel
}

// expand returns qt mixed with expansion terms from the best documents (RM3).
func (ix *Index) expand(s *scratch, qt []qterm, rel []float64) []qterm {
	cfg := &ix.cfg
	idx := make([]int, len(s.matched))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		if c := cmp.Compare(rel[b], rel[a]); c != 0 {
			return c
		}
		return strings.Compare(ix.docs[s.matched[a]].id, ix.docs[s.matched[b]].id)
	})
	if len(idx) > cfg.PRFDocs {
		idx = idx[:cfg.PRFDocs]
	}
	weights := map[int32]float64{}
	total := 0.0
	for _, i := range idx {
		d := &ix.docs[s.matched[i]]
		if d.length == 0 {
			continue
		}
		for _, tf := range d.terms {
			v := rel[i] * float64(tf.tf) / float64(d.length)
			weights[tf.term] += v
			total += v
		}
	}
	type cand struct {
		term int32
		w    float64
	}
	cands := make([]cand, 0, len(weights))
	for t, w := range weights {
		cands = append(cands, cand{t, w / total})
	}
	slices.SortFunc(cands, func(a, b cand) int {
		if c := cmp.Compare(b.w, a.w); c != 0 {
			return c
		}
		return strings.Compare(ix.postings[a.term].term, ix.postings[b.term].term)
	})
	if len(cands) > cfg.PRFTerms {
		cands = cands[:cfg.PRFTerms]
	}
	sumQ, sumE := 0.0, 0.0
	for _, q := range qt {
		sumQ += q.w
	}
	for _, c := range cands {
		sumE += c.w
	}
	out := make([]qterm, 0, len(qt)+len(cands))
	pos := map[string]int{}
	a := cfg.PRFWeight
	for _, q := range qt {
		pos[q.term] = len(out)
		out = append(out, qterm{q.term, (1 - a) * q.w / sumQ})
	}
	for _, c := range cands {
		t := ix.postings[c.term].term
		if i, ok := pos[t]; ok {
			out[i].w += a * c.w / sumE
			continue
		}
		out = append(out, qterm{t, a * c.w / sumE})
	}
	return out
}
