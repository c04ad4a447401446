package search

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"
	"testing"
)

func newTestIndex(t *testing.T, docs map[string]string) *Index {
	t.Helper()
	ix := NewIndex()
	for _, id := range slices.Sorted(maps.Keys(docs)) {
		ix.Add(id, docs[id])
	}
	return ix
}

func TestIndexRanking(t *testing.T) {
	docs := map[string]string{
		"cat-mat":   "the cat sat on the mat",
		"dog-log":   "the dog sat on the log",
		"cat-dog":   "a cat and a dog",
		"zebra":     "a zebra sat near the mat",
		"cat-cat":   "cat food for the cat",
		"unrelated": "nothing to see here",
	}
	tests := []struct {
		query string
		first string
		ids   []string // every id matched, in any order
	}{
		{"zebra cat", "zebra", []string{"zebra", "cat-mat", "cat-dog", "cat-cat"}},
		{"dog", "cat-dog", []string{"dog-log", "cat-dog"}},
		{"cats", "cat-cat", []string{"cat-mat", "cat-dog", "cat-cat"}},
		{"CAT MAT", "cat-mat", []string{"cat-mat", "cat-dog", "cat-cat", "zebra"}},
	}
	ix := newTestIndex(t, docs)
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			hits := ix.Search(tt.query, 0)
			if len(hits) == 0 || hits[0].ID != tt.first {
				t.Fatalf("Search(%q) = %v, want %s first", tt.query, hits, tt.first)
			}
			var got []string
			for _, h := range hits {
				got = append(got, h.ID)
			}
			slices.Sort(got)
			want := slices.Sorted(slices.Values(tt.ids))
			if !slices.Equal(got, want) {
				t.Errorf("Search(%q) matched %q, want %q", tt.query, got, want)
			}
		})
	}
}

func TestIndexNoMatch(t *testing.T) {
	ix := newTestIndex(t, map[string]string{"a": "apples and pears"})
	for _, q := range []string{"", "the of and", "？！", "bananas", "香蕉"} {
		if got := ix.Score(q); got == nil || len(got) != 0 {
			t.Errorf("Score(%q) = %v, want an empty map", q, got)
		}
	}
	var empty Index
	if got := empty.Score("apples"); got == nil || len(got) != 0 {
		t.Errorf("Score on an empty index = %v, want an empty map", got)
	}
	if got := empty.Search("apples", 3); len(got) != 0 {
		t.Errorf("Search on an empty index = %v, want none", got)
	}
}

// TestIndexIDF checks that adding and removing documents updates document frequencies:
// a term gets less discriminating as more documents contain it.
func TestIndexIDF(t *testing.T) {
	ix := newTestIndex(t, map[string]string{
		"a": "apple pie recipe",
		"b": "banana bread recipe",
		"c": "cherry tart",
	})
	const q = "apple"
	before := ix.Score(q)["a"]

	ix.Add("d", "apple juice")
	ix.Add("e", "apple cider")
	during := ix.Score(q)["a"]
	if !(during < before) {
		t.Errorf("score of a after more apple documents = %v, want below %v", during, before)
	}

	ix.Remove("d")
	ix.Remove("e")
	if after := ix.Score(q)["a"]; after != before {
		t.Errorf("score of a after removing them again = %v, want %v", after, before)
	}
	if got := ix.Len(); got != 3 {
		t.Errorf("Len() = %d, want 3", got)
	}
}

func TestIndexAddReplaces(t *testing.T) {
	ix := newTestIndex(t, map[string]string{"a": "apple pie", "b": "banana bread"})
	ix.Add("a", "cherry tart")
	if got := ix.Len(); got != 2 {
		t.Errorf("Len() = %d, want 2", got)
	}
	if got := ix.Score("apple"); len(got) != 0 {
		t.Errorf(`Score("apple") after replacing a = %v, want none`, got)
	}
	if got := ix.Score("cherry"); len(got) != 1 || got["a"] == 0 {
		t.Errorf(`Score("cherry") = %v, want only a`, got)
	}
	// The replaced document's statistics are gone: the index equals one built afresh.
	fresh := newTestIndex(t, map[string]string{"a": "cherry tart", "b": "banana bread"})
	for _, q := range []string{"cherry", "banana tart", "bread apple"} {
		if got, want := ix.Score(q), fresh.Score(q); !maps.Equal(got, want) {
			t.Errorf("Score(%q) = %v, want %v as for a fresh index", q, got, want)
		}
	}
}

func TestIndexRemove(t *testing.T) {
	ix := newTestIndex(t, map[string]string{"a": "apple pie", "b": "apple bread"})
	before := ix.Score("apple bread")

	ix.Remove("unknown")
	if got := ix.Len(); got != 2 {
		t.Errorf("Len() after removing an unknown id = %d, want 2", got)
	}
	if got := ix.Score("apple bread"); !maps.Equal(got, before) {
		t.Errorf("Score after removing an unknown id = %v, want %v", got, before)
	}

	ix.Remove("b")
	ix.Remove("b")
	if got := ix.Len(); got != 1 {
		t.Errorf("Len() = %d, want 1", got)
	}
	if got := ix.Score("bread"); len(got) != 0 {
		t.Errorf(`Score("bread") = %v, want none`, got)
	}
	ix.Add("c", "bread")
	if got := ix.Score("bread"); len(got) != 1 || got["c"] == 0 {
		t.Errorf(`Score("bread") after reusing the slot = %v, want only c`, got)
	}
}

// TestIndexScoreRange checks that every score is in (0,1], over many queries.
func TestIndexScoreRange(t *testing.T) {
	ix := newTestIndex(t, relevanceCorpus)
	ix.Add("empty", "")
	ix.Add("punct", "？！…")
	ix.Add("long", "go go go go go go go go go go go go go go go go go go go go language language")
	queries := slices.Collect(maps.Values(relevanceCorpus))
	queries = append(queries, "go", "language", "蛋糕", "Go 语言", "pizza pizza pizza")
	for _, q := range queries {
		for id, s := range ix.Score(q) {
			if !(s > 0 && s <= 1) || math.IsNaN(s) {
				t.Errorf("Score(%q)[%s] = %v, want in (0,1]", q, id, s)
			}
		}
	}
}

// TestIndexSaturation checks the normalisation: a document with every query term many times
// approaches 1, one with each once scores about 1/(k1+1), one with half the query's weight
// about half of that, and a query whose rare term is missing from the index scores low.
func TestIndexSaturation(t *testing.T) {
	ix := NewIndex()
	// Every document is 100 terms long, so that length normalisation is neutral.
	filler := func(i, n int) string {
		var s string
		for j := range n {
			s += fmt.Sprintf("filler%d ", (i*7+j)%50)
		}
		return s
	}
	for i := range 20 {
		ix.Add(fmt.Sprintf("filler-%02d", i), filler(i, 100))
	}
	var many string
	for range 50 {
		many += "alpha beta "
	}
	ix.Add("many", many)
	ix.Add("once", "alpha beta "+filler(1, 98))
	ix.Add("half", "alpha "+filler(2, 99))

	s := ix.Score("alpha beta")
	if got := s["many"]; got < 0.9 || got > 1 {
		t.Errorf("score of a saturated document = %v, want in [0.9,1]", got)
	}
	if got, want := s["once"], 1/(bm25K1+1); math.Abs(got-want) > 0.05 {
		t.Errorf("score of a document with each term once = %v, want about 1/(k1+1)", got)
	}
	if once, half := s["once"], s["half"]; half > once*0.6 {
		t.Errorf("score with one of two equally weighted terms = %v, want about half of %v", half, once)
	}

	withMissing := ix.Score("alpha beta unseenword")
	if got, full := withMissing["once"], s["once"]; got > full*0.6 {
		t.Errorf("score with a missing rare query term = %v, want well below %v", got, full)
	}
}

func TestSearchOrder(t *testing.T) {
	ix := NewIndex()
	for _, id := range []string{"c", "a", "e", "b", "d"} {
		ix.Add(id, "same text here")
	}
	ix.Add("best", "text text text")

	want := []string{"best", "a", "b", "c", "d", "e"}
	for range 10 {
		var got []string
		for _, h := range ix.Search("text", 0) {
			got = append(got, h.ID)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("Search order = %q, want %q", got, want)
		}
	}
	tests := []struct {
		k    int
		want int
	}{{-1, 6}, {0, 6}, {1, 1}, {3, 3}, {6, 6}, {100, 6}}
	for _, tt := range tests {
		if got := ix.Search("text", tt.k); len(got) != tt.want {
			t.Errorf("Search(k=%d) gave %d hits, want %d", tt.k, len(got), tt.want)
		}
	}
}

func TestScoreDocs(t *testing.T) {
	docs := map[string]string{
		"go":    "I love writing Go, it's my favourite language",
		"pizza": "My sister's favourite food is pizza",
		"rust":  "Bob likes Rust",
	}
	got := ScoreDocs("What is my favourite programming language?", docs)
	want := newTestIndex(t, docs).Score("What is my favourite programming language?")
	if !maps.Equal(got, want) {
		t.Errorf("ScoreDocs = %v, want %v as from an index", got, want)
	}
	if !(got["go"] > got["pizza"]) || got["rust"] != 0 {
		t.Errorf("ScoreDocs = %v, want go > pizza and no rust", got)
	}
	if got := ScoreDocs("anything", nil); len(got) != 0 {
		t.Errorf("ScoreDocs with no documents = %v, want none", got)
	}
}

// TestIndexConcurrent runs writers and readers together; run it with -race.
func TestIndexConcurrent(t *testing.T) {
	ix := newTestIndex(t, relevanceCorpus)
	errs := make(chan error, 64)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 200 {
				id := fmt.Sprintf("w%d-%d", w, i%10)
				if i%3 == 2 {
					ix.Remove(id)
					continue
				}
				ix.Add(id, fmt.Sprintf("document %d about go and 编程语言 number %d", i, w))
			}
		})
	}
	for range 4 {
		wg.Go(func() {
			for range 200 {
				for id, s := range ix.Score("我最喜欢的编程语言 go") {
					if !(s > 0 && s <= 1) {
						errs <- fmt.Errorf("score of %s = %v, want in (0,1]", id, s)
						return
					}
				}
				_ = ix.Search("favourite language", 3)
				_ = ix.Len()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := ix.Len(); got < len(relevanceCorpus) {
		t.Errorf("Len() = %d, want at least %d", got, len(relevanceCorpus))
	}
}
