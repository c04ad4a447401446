package search

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"sync"
)

// BM25 parameters.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// Index is an in-memory BM25 index (k1 = 1.2, b = 0.75) over documents identified by string
// ids. It is safe for concurrent use: searches share a read lock, Add and Remove take the
// write lock for a time proportional to the document's distinct terms. The zero value is an
// empty index ready to use.
type Index struct {
	mu       sync.RWMutex
	slots    map[string]int32    // document id → index in docs
	docs     []document          // by slot; a free slot is the zero document
	free     []int32             // free slots, reused by Add
	postings map[string]*posting // term → documents containing it
	totalLen int                 // sum of the documents' lengths, for the average
}

// document is what the index keeps of one document.
type document struct {
	id     string
	length int        // number of terms, repeats included
	terms  []*posting // the postings of its distinct terms, for Remove
}

// posting lists the documents containing a term; its document frequency is len(tf).
type posting struct {
	term string
	tf   map[int32]int32 // slot → occurrences of the term in the document
}

// Hit is a document found by [Index.Search] with its normalised relevance.
type Hit struct {
	ID    string
	Score float64
}

// NewIndex returns an empty index.
func NewIndex() *Index {
	ix := &Index{}
	ix.init()
	return ix
}

func (ix *Index) init() {
	if ix.slots == nil {
		ix.slots = make(map[string]int32)
		ix.postings = make(map[string]*posting)
	}
}

// Add indexes text as the document id, replacing any document with the same id. Text with
// no terms is still a document: it counts in [Index.Len] and in the statistics, and never
// matches.
func (ix *Index) Add(id, text string) {
	terms := Terms(text)
	tf := make(map[string]int32, len(terms))
	for _, t := range terms {
		tf[t]++
	}

	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.init()
	slot, ok := ix.slots[id]
	if ok {
		ix.clearSlot(slot)
	} else if n := len(ix.free); n > 0 {
		slot = ix.free[n-1]
		ix.free = ix.free[:n-1]
	} else {
		slot = int32(len(ix.docs))
		ix.docs = append(ix.docs, document{})
	}
	ix.slots[id] = slot
	d := &ix.docs[slot]
	d.id = id
	d.length = len(terms)
	d.terms = make([]*posting, 0, len(tf))
	for t, n := range tf {
		p := ix.postings[t]
		if p == nil {
			// Terms may be substrings of text: copy new ones so the index does not
			// keep the whole text alive.
			p = &posting{term: strings.Clone(t), tf: make(map[int32]int32)}
			ix.postings[p.term] = p
		}
		p.tf[slot] = n
		d.terms = append(d.terms, p)
	}
	ix.totalLen += len(terms)
}

// Remove deletes the document id from the index; removing an unknown id does nothing.
func (ix *Index) Remove(id string) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	slot, ok := ix.slots[id]
	if !ok {
		return
	}
	ix.clearSlot(slot)
	ix.docs[slot] = document{}
	delete(ix.slots, id)
	ix.free = append(ix.free, slot)
}

// clearSlot removes the terms of the document in slot from the postings and statistics.
func (ix *Index) clearSlot(slot int32) {
	d := &ix.docs[slot]
	for _, p := range d.terms {
		delete(p.tf, slot)
		if len(p.tf) == 0 {
			delete(ix.postings, p.term)
		}
	}
	ix.totalLen -= d.length
	d.terms = nil
	d.length = 0
}

// Len returns the number of documents in the index.
func (ix *Index) Len() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return len(ix.slots)
}

// Score returns every document that matches at least one term of query (see [QueryTerms])
// with its keyword relevance normalised to (0,1]: its BM25 score divided by the score of a
// perfect document, which has every query term at saturation, that is the sum over the query
// terms of idf(t)·(k1+1), with idf(t) = ln(1 + (N − df + 0.5)/(df + 0.5)).
//
// Query terms missing from the index count in the denominator with df = 0, the highest idf,
// so a query whose rare terms are missing scores low everywhere. As BM25 saturates, a score
// approaches 1 only for a document with each query term many times; a document of average
// length with each query term once scores 1/(k1+1) ≈ 0.45, a shorter one more, a longer one
// less. Matching half the query's idf weight gives at most half of that.
//
// The result is empty, never nil, when the index or the query has no terms.
func (ix *Index) Score(query string) map[string]float64 {
	q := QueryTerms(query)
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.score(q)
}

func (ix *Index) score(query []string) map[string]float64 {
	n := len(ix.slots)
	if n == 0 || len(query) == 0 {
		return map[string]float64{}
	}
	avgLen := float64(ix.totalLen) / float64(n)
	if avgLen == 0 {
		avgLen = 1
	}
	acc := make([]float64, len(ix.docs))
	matched := make([]int32, 0, 64)
	perfect := 0.0
	for _, t := range query {
		p := ix.postings[t]
		df := 0
		if p != nil {
			df = len(p.tf)
		}
		idf := math.Log(1 + (float64(n-df)+0.5)/(float64(df)+0.5))
		perfect += idf * (bm25K1 + 1)
		if p == nil {
			continue
		}
		for slot, f := range p.tf {
			if acc[slot] == 0 {
				matched = append(matched, slot)
			}
			tf := float64(f)
			norm := bm25K1 * (1 - bm25B + bm25B*float64(ix.docs[slot].length)/avgLen)
			acc[slot] += idf * tf * (bm25K1 + 1) / (tf + norm)
		}
	}
	scores := make(map[string]float64, len(matched))
	for _, slot := range matched {
		scores[ix.docs[slot].id] = min(acc[slot]/perfect, 1)
	}
	return scores
}

// Search returns the k best matches of query, best first, ties broken by id so that the
// order is deterministic; k <= 0 returns all of them. Scores are those of [Index.Score].
func (ix *Index) Search(query string, k int) []Hit {
	return rank(ix.Score(query), k)
}

// rank sorts scores into hits, best first and then by id, and keeps the first k (all if k <= 0).
func rank(scores map[string]float64, k int) []Hit {
	hits := make([]Hit, 0, len(scores))
	for id, s := range scores {
		hits = append(hits, Hit{ID: id, Score: s})
	}
	slices.SortFunc(hits, func(a, b Hit) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	if k > 0 && len(hits) > k {
		hits = hits[:k]
	}
	return hits
}

// ScoreDocs scores a small ad-hoc set of candidate documents, id → text, against query as
// [Index.Score] would if they were the whole index; it builds a temporary index and keeps
// nothing.
func ScoreDocs(query string, docs map[string]string) map[string]float64 {
	var ix Index
	for id, text := range docs {
		ix.Add(id, text)
	}
	return ix.Score(query)
}
