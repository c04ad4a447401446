package vector

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name  string
		cfg   Config
		field string // in the error; "" for valid
	}{
		{"minimal", Config{Dim: 3}, ""},
		{"all set", Config{Dim: 3, ExactBelow: 1, M: 2, EfConstruction: 1, EfSearch: 1, Seed: -7}, ""},
		{"no dim", Config{}, "Dim"},
		{"negative dim", Config{Dim: -1}, "Dim"},
		{"negative exact", Config{Dim: 3, ExactBelow: -1}, "ExactBelow"},
		{"M of one", Config{Dim: 3, M: 1}, "M"},
		{"huge M", Config{Dim: 3, M: 1 << 20}, "M"},
		{"negative efc", Config{Dim: 3, EfConstruction: -5}, "EfConstruction"},
		{"negative ef", Config{Dim: 3, EfSearch: -5}, "EfSearch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			_, newErr := New(tt.cfg)
			if tt.field == "" {
				if err != nil || newErr != nil {
					t.Fatalf("Validate = %v, New = %v, want nil", err, newErr)
				}
				return
			}
			if !errors.Is(err, ErrInvalidConfig) || !errors.Is(newErr, ErrInvalidConfig) {
				t.Fatalf("Validate = %v, New = %v, want ErrInvalidConfig", err, newErr)
			}
			if want := tt.field + " must"; !contains(err.Error(), want) {
				t.Fatalf("Validate = %q, want it to name %q", err, tt.field)
			}
		})
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func TestConfigDefaults(t *testing.T) {
	got := Config{Dim: 8}.withDefaults()
	want := Config{Dim: 8, ExactBelow: 20_000, M: 16, EfConstruction: 200, EfSearch: 64}
	if got != want {
		t.Fatalf("defaults = %+v, want %+v", got, want)
	}
}

func TestAddRejectsBadVectors(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(-1))
	tests := []struct {
		name string
		v    []float32
		want error
	}{
		{"short", []float32{1, 2}, ErrDimension},
		{"long", []float32{1, 2, 3, 4}, ErrDimension},
		{"nil", nil, ErrDimension},
		{"zero", []float32{0, 0, 0}, ErrZeroVector},
		{"NaN", []float32{1, nan, 0}, ErrNotFinite},
		{"Inf", []float32{1, inf, 0}, ErrNotFinite},
	}
	for _, mode := range []struct {
		name       string
		exactBelow int
	}{{"exact", 1000}, {"graph", 1}} {
		for _, tt := range tests {
			t.Run(mode.name+"/"+tt.name, func(t *testing.T) {
				ix := mustNew(t, Config{Dim: 3, ExactBelow: mode.exactBelow})
				mustAdd(t, ix, "keep", []float32{1, 0, 0})
				err := ix.Add("bad", tt.v)
				if !errors.Is(err, tt.want) {
					t.Fatalf("Add = %v, want %v", err, tt.want)
				}
				if !contains(err.Error(), `"bad"`) {
					t.Fatalf("Add = %q, want it to name the id", err)
				}
				// Nothing stored, and a bad replacement leaves the old vector alone.
				if err := ix.Add("keep", tt.v); !errors.Is(err, tt.want) {
					t.Fatalf("replacing Add = %v, want %v", err, tt.want)
				}
				if ix.Len() != 1 {
					t.Fatalf("Len = %d after rejected adds, want 1", ix.Len())
				}
				if hits := ix.Search([]float32{1, 0, 0}, 5); len(hits) != 1 || hits[0].ID != "keep" || hits[0].Score < 0.999 {
					t.Fatalf("Search = %v, want only keep at 1", hits)
				}
			})
		}
	}
}

func TestSearchArguments(t *testing.T) {
	ix := mustNew(t, Config{Dim: 3})
	mustAdd(t, ix, "a", []float32{1, 0, 0})
	tests := []struct {
		name string
		q    []float32
		k    int
		want int
	}{
		{"ok", []float32{1, 1, 0}, 1, 1},
		{"k above size", []float32{1, 1, 0}, 10, 1},
		{"k zero", []float32{1, 1, 0}, 0, 0},
		{"k negative", []float32{1, 1, 0}, -1, 0},
		{"wrong dim", []float32{1, 1}, 1, 0},
		{"zero query", []float32{0, 0, 0}, 1, 0},
		{"NaN query", []float32{float32(math.NaN()), 0, 0}, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ix.Search(tt.q, tt.k); len(got) != tt.want {
				t.Fatalf("Search = %v, want %d hits", got, tt.want)
			}
			if got := ix.SearchExact(tt.q, tt.k); len(got) != tt.want {
				t.Fatalf("SearchExact = %v, want %d hits", got, tt.want)
			}
		})
	}
	empty := mustNew(t, Config{Dim: 3, ExactBelow: 1})
	if got := empty.Search([]float32{1, 0, 0}, 3); len(got) != 0 {
		t.Fatalf("Search on empty = %v", got)
	}
}

// TestSearchExactIsTrueTopK compares the brute-force search with the naive one, through adds,
// replacements and removes, and checks that Search is the same while the index is small.
func TestSearchExactIsTrueTopK(t *testing.T) {
	const dim = 37 // not a multiple of the unrolling
	r := newRand(3)
	ix := mustNew(t, Config{Dim: dim})
	stored := map[string][]float32{}
	queries := randomVecs(r, 20, dim)
	check := func(stage string) {
		t.Helper()
		if ix.Len() != len(stored) {
			t.Fatalf("%s: Len = %d, want %d", stage, ix.Len(), len(stored))
		}
		for _, k := range []int{1, 10, 100, 5000} {
			for _, q := range queries {
				want := naiveTopK(stored, q, k)
				got := ix.SearchExact(q, k)
				sameTopK(t, fmt.Sprintf("%s k=%d", stage, k), got, want)
				sameTopK(t, fmt.Sprintf("%s Search k=%d", stage, k), ix.Search(q, k), want)
			}
		}
	}
	for i, v := range randomVecs(r, 2000, dim) {
		mustAdd(t, ix, id(i), v)
		stored[id(i)] = v
	}
	check("added")
	for i, v := range randomVecs(r, 300, dim) {
		mustAdd(t, ix, id(i*5), v)
		stored[id(i*5)] = v
	}
	check("replaced")
	for i := range 700 {
		ix.Remove(id(i * 3))
		delete(stored, id(i*3))
	}
	ix.Remove("never added")
	check("removed")
}

// sameTopK fails unless got and want have the same length and, position by position, the same
// score to float32 rounding; ids may differ only where scores tie to that precision.
func sameTopK(t *testing.T, what string, got, want []Hit) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d hits, want %d", what, len(got), len(want))
	}
	for i := range got {
		if d := math.Abs(float64(got[i].Score - want[i].Score)); d > 1e-5 {
			t.Fatalf("%s: hit %d = %+v, want %+v", what, i, got[i], want[i])
		}
	}
	if r := recallAt(got, want); r < 1 {
		// Tolerate swaps across a tie at the boundary only.
		last := want[len(want)-1].Score
		for _, h := range got {
			if !containsID(want, h.ID) && math.Abs(float64(h.Score-last)) > 1e-5 {
				t.Fatalf("%s: got %+v, not in the true top-k %v", what, h, want)
			}
		}
	}
}

func containsID(hits []Hit, id string) bool {
	for _, h := range hits {
		if h.ID == id {
			return true
		}
	}
	return false
}

// modes runs f with an index that searches exactly and with one that always uses the graph.
func modes(t *testing.T, dim int, f func(t *testing.T, ix *Index)) {
	for _, m := range []struct {
		name string
		cfg  Config
	}{
		{"exact", Config{Dim: dim, ExactBelow: 1 << 30}},
		{"graph", Config{Dim: dim, ExactBelow: 1, M: 8, EfConstruction: 64}},
	} {
		t.Run(m.name, func(t *testing.T) { f(t, mustNew(t, m.cfg)) })
	}
}

func TestRemove(t *testing.T) {
	const dim, n = 16, 1500
	vecs := randomVecs(newRand(4), n, dim)
	modes(t, dim, func(t *testing.T, ix *Index) {
		fill(t, ix, vecs)
		removed := map[string]bool{}
		for i := 0; i < n; i += 3 {
			ix.Remove(id(i))
			removed[id(i)] = true
			ix.Remove(id(i)) // twice is harmless
		}
		if want := n - len(removed); ix.Len() != want {
			t.Fatalf("Len = %d, want %d", ix.Len(), want)
		}
		// Query with the removed vectors themselves: the most tempting answers.
		for i := 0; i < n; i++ {
			for _, search := range []func([]float32, int) []Hit{ix.Search, ix.SearchExact} {
				hits := search(vecs[i], 10)
				if len(hits) != 10 {
					t.Fatalf("query %d: %d hits, want 10", i, len(hits))
				}
				for _, h := range hits {
					if removed[h.ID] {
						t.Fatalf("query %d: removed %s returned", i, h.ID)
					}
				}
				if !removed[id(i)] && hits[0].ID != id(i) {
					t.Fatalf("query %d: top hit %v, want itself", i, hits[0])
				}
			}
		}
		// Removing everything empties it; adding again works.
		for i := range n {
			ix.Remove(id(i))
		}
		if ix.Len() != 0 || len(ix.Search(vecs[0], 3)) != 0 || len(ix.SearchExact(vecs[0], 3)) != 0 {
			t.Fatalf("after removing all: Len %d, Search %v", ix.Len(), ix.Search(vecs[0], 3))
		}
		mustAdd(t, ix, "again", vecs[1])
		if hits := ix.Search(vecs[1], 3); len(hits) != 1 || hits[0].ID != "again" {
			t.Fatalf("after re-adding: %v", hits)
		}
	})
}

func TestReplace(t *testing.T) {
	const dim, n = 16, 1000
	r := newRand(5)
	vecs := randomVecs(r, n, dim)
	repl := randomVecs(r, n, dim)
	modes(t, dim, func(t *testing.T, ix *Index) {
		fill(t, ix, vecs)
		for i := 0; i < n; i += 2 {
			mustAdd(t, ix, id(i), repl[i])
		}
		if ix.Len() != n {
			t.Fatalf("Len = %d after replacing, want %d", ix.Len(), n)
		}
		for i := 0; i < n; i += 2 {
			for _, search := range []func([]float32, int) []Hit{ix.Search, ix.SearchExact} {
				// The new vector finds its id at score 1...
				hits := search(repl[i], 5)
				if hits[0].ID != id(i) || hits[0].Score < 0.9999 {
					t.Fatalf("query new %d: top %v, want %s at 1", i, hits[0], id(i))
				}
				seen := map[string]bool{}
				for _, h := range hits {
					if seen[h.ID] {
						t.Fatalf("query new %d: %s twice in %v", i, h.ID, hits)
					}
					seen[h.ID] = true
				}
				// ...and the old one no longer does.
				for _, h := range search(vecs[i], 5) {
					if h.ID == id(i) && h.Score > 0.9999 {
						t.Fatalf("query old %d: old vector still returned: %v", i, h)
					}
				}
			}
		}
	})
}

// TestTransitions follows an index across the threshold both ways and through a compaction,
// checking the internal state and that answers stay right.
func TestTransitions(t *testing.T) {
	const dim = 8
	r := newRand(6)
	vecs := randomVecs(r, 400, dim)
	ix := mustNew(t, Config{Dim: dim, ExactBelow: 200, M: 8, EfConstruction: 64})
	probe := func(stage string, wantGraph bool, live map[string]bool) {
		t.Helper()
		if (ix.g != nil) != wantGraph {
			t.Fatalf("%s: graph %v, want %v", stage, ix.g != nil, wantGraph)
		}
		if ix.Len() != len(live) {
			t.Fatalf("%s: Len %d, want %d", stage, ix.Len(), len(live))
		}
		for i, v := range vecs {
			hits := ix.Search(v, 1)
			if live[id(i)] && (len(hits) == 0 || hits[0].ID != id(i)) {
				t.Fatalf("%s: query %d found %v", stage, i, hits)
			}
			if len(hits) > 0 && !live[hits[0].ID] {
				t.Fatalf("%s: removed %s returned", stage, hits[0].ID)
			}
		}
	}
	live := map[string]bool{}
	for i := range 199 {
		mustAdd(t, ix, id(i), vecs[i])
		live[id(i)] = true
	}
	probe("below threshold", false, live)
	mustAdd(t, ix, id(199), vecs[199])
	live[id(199)] = true
	probe("at threshold", true, live)

	for i := 200; i < 400; i++ {
		mustAdd(t, ix, id(i), vecs[i])
		live[id(i)] = true
	}
	// Remove 130 of 400: 130 tombstones > 270/2 triggers a compaction at the 134th or so.
	before := ix.g
	for i := range 130 {
		ix.Remove(id(i))
		delete(live, id(i))
	}
	if ix.ndead != 130 || ix.g != before {
		t.Fatalf("after 130 removes: %d tombstones, graph rebuilt %v; want 130, no rebuild", ix.ndead, ix.g != before)
	}
	probe("with tombstones", true, live)
	for i := 130; i < 140; i++ {
		ix.Remove(id(i))
		delete(live, id(i))
	}
	if ix.ndead >= 10 || ix.g == before || len(ix.ids) != len(live)+ix.ndead {
		t.Fatalf("after compaction: %d tombstones in %d slots, %d live", ix.ndead, len(ix.ids), len(live))
	}
	probe("compacted", true, live)

	// Shrink below ExactBelow/2 = 100: the graph goes and nothing is lost.
	for i := 140; i < 301; i++ {
		ix.Remove(id(i))
		delete(live, id(i))
	}
	probe("shrunk", false, live)
	if len(ix.ids) != len(live) || ix.dead != nil {
		t.Fatalf("shrunk: %d slots for %d live", len(ix.ids), len(live))
	}
}

// TestConcurrent races writers against searchers; run it under -race.
func TestConcurrent(t *testing.T) {
	const dim = 24
	n := 3*parallelBuildMin + 200
	r := newRand(7)
	vecs := randomVecs(r, n, dim)
	queries := randomVecs(r, 50, dim)
	// Each round crosses ExactBelow, building the graph on several goroutines while searches
	// run, then removes enough for a compaction and to drop back below ExactBelow/2.
	ix := mustNew(t, Config{Dim: dim, ExactBelow: 3 * parallelBuildMin, M: 6, EfConstruction: 32})

	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 2 {
		wg.Go(func() {
			for round := range 3 {
				for i := w; i < n; i += 2 {
					if err := ix.Add(id(i), vecs[(i+round)%n]); err != nil {
						errs <- err
						return
					}
				}
				for i := w; i < n; i += 2 {
					if i%4 != 0 || round == 2 {
						ix.Remove(id(i))
					}
				}
			}
		})
	}
	for s := range 4 {
		wg.Go(func() {
			for i := range 2000 {
				q := queries[(i+s)%len(queries)]
				hits := ix.Search(q, 5)
				if i%3 == 0 {
					hits = ix.SearchExact(q, 5)
				}
				seen := map[string]bool{}
				for j, h := range hits {
					if seen[h.ID] || h.ID == "" || (j > 0 && h.Score > hits[j-1].Score) {
						errs <- fmt.Errorf("bad result %v", hits)
						return
					}
					seen[h.ID] = true
				}
				_ = ix.Len()
				_ = ix.Bytes()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if ix.Len() != 0 {
		t.Fatalf("Len = %d after removing everything, want 0", ix.Len())
	}
}

func TestBytes(t *testing.T) {
	const dim, n = 384, 2000
	vecs := randomVecs(newRand(8), n, dim)
	modes(t, dim, func(t *testing.T, ix *Index) {
		empty := ix.Bytes()
		fill(t, ix, vecs)
		per := float64(ix.Bytes()-empty) / n
		// The vector itself is 1536 bytes; ids, map and links may add a few hundred.
		if per < 4*dim || per > 4*dim*2.2 {
			t.Fatalf("%.0f bytes per vector", per)
		}
		t.Logf("%.0f bytes per %d-dim vector", per, dim)
	})
}

// Grow makes room once: adding the vectors it made room for reallocates nothing, and the index
// answers as one that grew as it filled. Beyond ExactBelow, and with a graph, it adds no room.
func TestGrow(t *testing.T) {
	vecs := randomVecs(newRand(7), 300, 16)
	grown, plain := mustNew(t, Config{Dim: 16}), mustNew(t, Config{Dim: 16})
	grown.Grow(len(vecs))
	vcap, icap := cap(grown.vecs), cap(grown.ids)
	if vcap < 300*16 || icap < 300 {
		t.Fatalf("Grow(300): room for %d components and %d ids", vcap, icap)
	}
	fill(t, grown, vecs)
	fill(t, plain, vecs)
	if cap(grown.vecs) != vcap || cap(grown.ids) != icap {
		t.Fatalf("adding the vectors Grow made room for reallocated: %d → %d components", vcap, cap(grown.vecs))
	}
	for _, q := range randomVecs(newRand(8), 5, 16) {
		if got, want := grown.Search(q, 10), plain.Search(q, 10); !slices.Equal(got, want) {
			t.Fatalf("grown index: %v, plain: %v", got, want)
		}
	}
	small := mustNew(t, Config{Dim: 16, ExactBelow: 10})
	small.Grow(1000)
	if cap(small.ids) > 10 {
		t.Fatalf("Grow beyond ExactBelow made room for %d ids", cap(small.ids))
	}
}
