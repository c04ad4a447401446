package vector

import (
	"testing"
	"time"
)

// TestRecall measures the graph against exact search on 384-dim vectors, 20,000 of them (4,000
// under the race detector, which slows the build about fivefold), with fresh draws from the
// same distribution as queries. The data decides what recall is possible:
//
//   - clustered (50 Gaussian clusters) and low-rank (random vectors near a 32-dim subspace)
//     data look like sentence embeddings, and the defaults reach 0.95;
//   - isotropic random vectors are the worst case for any graph index: in 384 dimensions every
//     stored vector is nearly as similar to a query as every other, so there is no gradient to
//     follow. hnswlib (M=16, efConstruction=200) scores 0.27 at ef=64 and 0.84 at ef=512 on
//     this data; we must match it, not beat it, and no sublinear search can do 0.95 here.
func TestRecall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds three graphs")
	}
	const dim, nq, k = 384, 200, 10
	n := 20_000
	if raceEnabled {
		n = 4_000
	}
	type check struct {
		efSearch int // 0 for the default
		min      float64
	}
	tests := []struct {
		name   string
		gen    func(n int) [][]float32
		checks []check
	}{
		{"clustered", func(n int) [][]float32 { return clusteredVecs(newRand(11), n, dim, 50, 0.5) },
			[]check{{0, 0.95}}},
		{"low-rank", func(n int) [][]float32 { return lowRankVecs(newRand(12), n, dim, 32, 0.5) },
			[]check{{0, 0.90}, {128, 0.95}}},
		{"random", func(n int) [][]float32 { return randomVecs(newRand(10), n, dim) },
			[]check{{0, 0.22}, {512, 0.75}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			all := tt.gen(n + nq)
			ix := mustNew(t, Config{Dim: dim, ExactBelow: n})
			start := time.Now()
			fill(t, ix, all[:n])
			build := time.Since(start)
			if ix.g == nil {
				t.Fatal("no graph at the threshold")
			}
			t.Logf("%d vectors: graph built in %v, %.0f bytes/vector", n, build.Round(time.Millisecond), float64(ix.Bytes())/float64(n))
			for _, c := range tt.checks {
				if c.efSearch != 0 {
					ix.cfg.EfSearch = c.efSearch // no search is running
				}
				recall := meanRecall(ix, all[n:], k)
				t.Logf("EfSearch %d: recall@%d %.4f", ix.cfg.EfSearch, k, recall)
				if recall < c.min {
					t.Errorf("EfSearch %d: recall@%d = %.4f, want >= %.2f", ix.cfg.EfSearch, k, recall, c.min)
				}
			}
		})
	}
}

// TestRecallWithTombstones checks that the graph keeps its recall, and never returns a removed
// vector, with a third of it tombstoned (just under the compaction line).
func TestRecallWithTombstones(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a graph")
	}
	const dim, nq, k = 384, 200, 10
	n := 6_000
	if raceEnabled {
		n = 2_000
	}
	all := clusteredVecs(newRand(13), n+nq, dim, 30, 0.5)
	ix := mustNew(t, Config{Dim: dim, ExactBelow: 1})
	fill(t, ix, all[:n])
	removed := map[string]bool{}
	for i := 0; len(removed) < n/3-1; i += 3 {
		ix.Remove(id(i))
		removed[id(i)] = true
	}
	if ix.ndead != len(removed) {
		t.Fatalf("%d tombstones, want %d (compacted too early)", ix.ndead, len(removed))
	}
	for _, q := range all[n:] {
		for _, h := range ix.Search(q, k) {
			if removed[h.ID] {
				t.Fatalf("removed %s returned", h.ID)
			}
		}
	}
	recall := meanRecall(ix, all[n:], k)
	t.Logf("recall@%d with %d of %d tombstoned: %.4f", k, ix.ndead, n, recall)
	if recall < 0.95 {
		t.Fatalf("recall@%d = %.4f with tombstones, want >= 0.95", k, recall)
	}
}
