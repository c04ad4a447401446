package rank

import (
	"cmp"
	"math"
	"slices"
	"sync"
	"unsafe"
)

// Hit is a document found by [Index.Search].
type Hit struct {
	ID string
	// Keyword is the keyword relevance in [0,1]: the document's BM25 score blended with its
	// session's, each divided by the score of a perfect match (see the package comment).
	Keyword float64
	// Vector and HasVector are for a vector similarity fused into Relevance; this method uses
	// none (no offline representation helped, see the package comment), so HasVector is false.
	Vector    float64
	HasVector bool
	// Relevance in [0,1] orders the hits: Keyword times the session-diversity factor.
	Relevance float64
}

// scratch holds the working arrays of one search, reused through a pool.
type scratch struct {
	acc     []float64 // by slot: the document's BM25 score
	gacc    []float64 // by group: the group's BM25 score
	gtf     []float64 // by group: the current term's frequency in the group
	gcount  []int32   // by group: documents ranked so far, for the diversity factor
	gseen   []int32   // groups containing the current term
	matched []int32   // slots with acc > 0
	key     []byte    // a field term being looked up
	gated   []gatedTerm
	ranked  []ranked
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// fit returns s with length n, zeroed.
func fit[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// Search returns the k best documents for query (all of them when k <= 0), best first by
// Relevance, ties broken by id. Only documents with a Relevance above zero are returned: those
// containing at least one of the query's scored terms (all of them, or the MaxQueryTerms most
// telling), or, with Config.Related, a word related to one. A query without terms (empty,
// punctuation or stop words only) finds nothing.
func (ix *Index) Search(query string, k int) []Hit {
	qt := ix.cfg.queryTerms(query)
	if len(qt) == 0 {
		return nil
	}
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.live == 0 {
		return nil
	}
	return ix.search(s, qt, k)
}

// The fields of a document besides its text, each in the postings under its terms' prefix.
const (
	fieldContext = iota
	fieldSpeaker
	fieldMention
	fieldRelated
	numFields
)

var fieldPrefixes = [numFields]string{contextPrefix, speakerPrefix, mentionPrefix, relatedPrefix}

// addText adds a term's BM25 scores, of weight wk = w·idf·(k1+1), to the documents of its
// posting entries ents (with length normalisation c0 + c1·length), and its frequencies to their
// sessions' when session.
func (s *scratch) addText(ents []entry, wk, c0, c1 float64, lens, grpOf []int32, session bool) {
	for _, e := range ents {
		slot, tf := e.slot(), float64(e.tf())
		if s.acc[slot] == 0 {
			s.matched = append(s.matched, slot)
		}
		s.acc[slot] += wk * tf / (tf + c0 + c1*float64(lens[slot]))
		if g := grpOf[slot]; session && g >= 0 {
			// The session as one document: the term's frequency over its turns.
			if s.gtf[g] == 0 {
				s.gseen = append(s.gseen, g)
			}
			s.gtf[g] += tf
		}
	}
}

// gatedTerm is a query term's context posting, scored once the text has been, with its weight.
type gatedTerm struct {
	ents []entry
	wk   float64
}

// fields reports which fields the index holds terms of and ranks with.
func (ix *Index) fields() [numFields]bool {
	return [numFields]bool{
		fieldContext: ix.cfg.Context > 0 && ix.hasField[fieldContext],
		fieldSpeaker: ix.cfg.Speaker > 0 && ix.hasField[fieldSpeaker],
		fieldMention: ix.cfg.Mention < 1 && ix.hasField[fieldMention],
		fieldRelated: ix.cfg.Related > 0 && ix.hasField[fieldRelated],
	}
}

// findField returns the id of term in the field of prefix.
func (ix *Index) findField(s *scratch, prefix, term string) (int32, bool) {
	s.key = append(append(s.key[:0], prefix...), term...)
	return ix.terms.find(&ix.words, unsafe.String(unsafe.SliceData(s.key), len(s.key)))
}

func bm25IDF(n, df int) float64 {
	return math.Log(1 + (float64(n-df)+0.5)/(float64(df)+0.5))
}

func (ix *Index) search(s *scratch, qt []qterm, k int) []Hit {
	cfg := &ix.cfg
	k1, b := cfg.K1, cfg.B
	n, ng := ix.live, ix.numGroups()
	s.acc = fit(s.acc, len(ix.docs))
	s.matched = s.matched[:0]
	session := cfg.Session > 0 && ng > 0
	if session {
		s.gacc = fit(s.gacc, len(ix.grps))
		s.gtf = fit(s.gtf, len(ix.grps))
	}
	// BM25's length normalisation k1·(1 − b + b·len/avgLen) is c0 + c1·len.
	c0 := k1 * (1 - b)
	c1 := k1 * b / max(float64(ix.totalLen)/float64(n), 1e-9)
	g1 := 0.0
	if ng > 0 {
		g1 = k1 * b / max(float64(ix.groupLen)/float64(ng), 1e-9)
	}
	lens, grpOf := ix.lens, ix.grpOf
	var perfect, gPerfect float64
	if m := cfg.MaxQueryTerms; m > 0 && len(qt) > m {
		qt = ix.selectTerms(qt, m, &perfect, &gPerfect, session)
	}
	fields := ix.fields()
	for _, q := range qt {
		// The term's entries in the text and in the other fields (none: not there; a term in
		// the index has at least one).
		var own []entry
		if tid, ok := ix.terms.find(&ix.words, q.term); ok {
			own = ix.entsOf(&ix.postings[tid])
		}
		var fp [numFields][]entry
		df := len(own)
		for f := range numFields {
			if fields[f] {
				if ftid, ok := ix.findField(s, fieldPrefixes[f], q.term); ok {
					fp[f] = ix.entsOf(&ix.postings[ftid])
				}
			}
		}
		df += len(fp[fieldMention])
		if p := fp[fieldRelated]; len(p) > 0 {
			// Related words: BM25 without length normalisation, at the idf of the word over
			// the texts and this field together (a word that many words are a kind of tells
			// little), not in the session's score.
			wr := cfg.Related * q.w * bm25IDF(n, min(n, df+len(p))) * (k1 + 1)
			for _, e := range p {
				slot, tf := e.slot(), float64(e.tf())
				if s.acc[slot] == 0 {
					s.matched = append(s.matched, slot)
				}
				s.acc[slot] += wr * tf / (tf + k1)
			}
		}
		if df == 0 {
			for f, p := range fp {
				if f != fieldRelated {
					df = max(df, len(p))
				}
			}
		}
		if df == 0 {
			// A missing term counts in the perfect score with the highest idf, so a query
			// whose rare terms are missing scores low everywhere.
			perfect += q.w * bm25IDF(n, 0) * (k1 + 1)
			if session {
				gPerfect += q.w * bm25IDF(ng, 0) * (k1 + 1)
			}
			continue
		}
		w := q.w * bm25IDF(n, df)
		perfect += w * (k1 + 1)
		wk := w * (k1 + 1)
		s.gseen = s.gseen[:0]
		// The text's occurrences (own, and the addressee's name at Mention).
		if len(own) > 0 {
			s.addText(own, wk, c0, c1, lens, grpOf, session)
		}
		if p := fp[fieldMention]; len(p) > 0 {
			s.addText(p, cfg.Mention*wk, c0, c1, lens, grpOf, session)
		}
		// The context and speaker fields: BM25 without length normalisation, not in the
		// session's score (the context is another turn of the session). With ContextGate a
		// turn's context counts once the turn matches by its own words or speaker: it is
		// added after every term's text.
		for f, fw := range [...]float64{fieldContext: cfg.Context, fieldSpeaker: cfg.Speaker} {
			p := fp[f]
			if len(p) == 0 {
				continue
			}
			if f == fieldContext && cfg.ContextGate {
				s.gated = append(s.gated, gatedTerm{p, fw * wk})
				continue
			}
			for _, e := range p {
				slot, tf := e.slot(), float64(e.tf())
				if s.acc[slot] == 0 {
					s.matched = append(s.matched, slot)
				}
				s.acc[slot] += fw * wk * tf / (tf + k1)
			}
		}
		if !session {
			continue
		}
		gw := q.w * bm25IDF(ng, len(s.gseen)) // idf over sessions
		gPerfect += gw * (k1 + 1)
		gwk := gw * (k1 + 1)
		for _, g := range s.gseen {
			tf := s.gtf[g]
			s.gacc[g] += gwk * tf / (tf + c0 + g1*float64(ix.grps[g].length))
			s.gtf[g] = 0
		}
	}
	for _, gt := range s.gated {
		for _, e := range gt.ents {
			if slot, tf := e.slot(), float64(e.tf()); s.acc[slot] > 0 {
				s.acc[slot] += gt.wk * tf / (tf + k1)
			}
		}
	}
	s.gated = s.gated[:0]
	if len(s.matched) == 0 {
		return nil
	}

	rs := s.ranked[:0]
	lambda := cfg.Session
	for _, slot := range s.matched {
		r := ranked{slot: slot, kw: min(float64(ix.docs[slot].weight)*s.acc[slot]/perfect, 1)}
		if g := grpOf[slot]; session && g >= 0 {
			ses := lambda * min(s.gacc[g]/gPerfect, 1) / (1 + lambda)
			r.kw = r.kw/(1+lambda) + ses
			r.ses = float32(ses)
		}
		r.rel = r.kw
		rs = append(rs, r)
	}
	s.ranked = rs
	rs = ix.top(s, rs, k)
	hits := make([]Hit, len(rs))
	for i, r := range rs {
		hits[i] = Hit{ID: ix.docs[r.slot].id, Keyword: r.kw, Relevance: r.rel}
	}
	return hits
}

// selectTerms returns the m terms of qt with the highest weight times idf, in query order,
// adding the perfect scores of the others to perfect and gPerfect: a long query (a whole
// dialogue) is scored by its most telling terms, at a cost bounded by m postings lists.
func (ix *Index) selectTerms(qt []qterm, m int, perfect, gPerfect *float64, session bool) []qterm {
	k1 := ix.cfg.K1
	type cand struct {
		i  int
		wi float64
	}
	cands := make([]cand, 0, len(qt))
	keep := make([]bool, len(qt))
	for i, q := range qt {
		if tid, ok := ix.terms.find(&ix.words, q.term); ok {
			cands = append(cands, cand{i, q.w * bm25IDF(ix.live, int(ix.postings[tid].n))})
		} else {
			keep[i] = true // scored below as missing: it only adds to the perfect score
		}
	}
	if len(cands) <= m {
		return qt
	}
	slices.SortStableFunc(cands, func(a, b cand) int { return cmp.Compare(b.wi, a.wi) })
	for _, c := range cands[:m] {
		keep[c.i] = true
	}
	for _, c := range cands[m:] {
		*perfect += c.wi * (k1 + 1)
		if session {
			*gPerfect += c.wi * (k1 + 1) // an approximation: the idf over documents
		}
	}
	out := make([]qterm, 0, len(qt))
	for i, q := range qt {
		if keep[i] {
			out = append(out, q)
		}
	}
	return out
}

// ranked is a matched document with its keyword score, the part of it that is its session's,
// and its relevance.
type ranked struct {
	slot    int32
	ses     float32 // for SessionRepeat; small, as top moves ranked values about
	kw, rel float64
}

// top returns the k best of rs (all if k <= 0) by relevance, best first, ties broken by id.
// A document's relevance is its keyword score times γ^n, n the documents of its group with a
// better keyword score (ties by id); as relevance never exceeds the keyword score, the
// documents are visited in keyword order only until no later one can enter the top k.
func (ix *Index) top(s *scratch, rs []ranked, k int) []ranked {
	gamma := ix.cfg.Diversity
	if ix.numGroups() == 0 {
		gamma = 1
	}
	byKW := func(a, b ranked) bool {
		if a.kw != b.kw {
			return a.kw > b.kw
		}
		return ix.docs[a.slot].id < ix.docs[b.slot].id
	}
	byRel := func(a, b ranked) bool {
		if a.rel != b.rel {
			return a.rel > b.rel
		}
		return ix.docs[a.slot].id < ix.docs[b.slot].id
	}
	sortBy := func(rs []ranked, better func(a, b ranked) bool) {
		slices.SortFunc(rs, func(a, b ranked) int {
			switch {
			case better(a, b):
				return -1
			case better(b, a):
				return 1
			}
			return 0
		})
	}
	if gamma < 1 {
		s.gcount = fit(s.gcount, len(ix.grps))
	}
	repeat := ix.cfg.SessionRepeat
	penalise := func(r *ranked) {
		if g := ix.grpOf[r.slot]; gamma < 1 && g >= 0 {
			n := float64(s.gcount[g])
			r.rel = r.kw * math.Pow(gamma, n)
			if repeat < 1 {
				ses := float64(r.ses)
				r.rel = (r.kw-ses)*math.Pow(gamma, n) + ses*math.Pow(gamma*repeat, n)
			}
			s.gcount[g]++
		}
	}
	if k <= 0 || k >= len(rs) {
		sortBy(rs, byKW)
		for i := range rs {
			penalise(&rs[i])
		}
		if gamma < 1 {
			sortBy(rs, byRel)
		}
		return rs
	}
	// Visit in keyword order through a max-heap; keep the k best by relevance in a min-heap.
	byKWHeap := heap[ranked]{items: rs, before: byKW}
	byKWHeap.init()
	best := heap[ranked]{items: make([]ranked, 0, k), before: func(a, b ranked) bool { return byRel(b, a) }}
	for len(byKWHeap.items) > 0 {
		next := byKWHeap.items[0]
		if len(best.items) == k {
			worst := best.items[0]
			// Relevance never exceeds the keyword score: no later document can beat worst.
			if !byRel(ranked{slot: next.slot, rel: next.kw}, worst) {
				break
			}
		}
		r := byKWHeap.pop()
		penalise(&r)
		if len(best.items) < k {
			best.push(r)
		} else if byRel(r, best.items[0]) {
			best.items[0] = r
			best.down(0)
		}
	}
	out := best.items
	sortBy(out, byRel)
	return out
}

// heap is a binary heap whose root is the item that comes before all others.
type heap[T any] struct {
	items  []T
	before func(a, b T) bool
}

func (h *heap[T]) init() {
	for i := len(h.items)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *heap[T]) push(x T) {
	h.items = append(h.items, x)
	for i := len(h.items) - 1; i > 0; {
		parent := (i - 1) / 2
		if !h.before(h.items[i], h.items[parent]) {
			break
		}
		h.items[i], h.items[parent] = h.items[parent], h.items[i]
		i = parent
	}
}

func (h *heap[T]) pop() T {
	x := h.items[0]
	last := len(h.items) - 1
	h.items[0] = h.items[last]
	h.items = h.items[:last]
	if last > 0 {
		h.down(0)
	}
	return x
}

func (h *heap[T]) down(i int) {
	n := len(h.items)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		c := l
		if r := l + 1; r < n && h.before(h.items[r], h.items[l]) {
			c = r
		}
		if !h.before(h.items[c], h.items[i]) {
			return
		}
		h.items[i], h.items[c] = h.items[c], h.items[i]
		i = c
	}
}
