package vector

import (
	"testing"
	"time"
)

// TestRecall checks the graph against exact search on 20,000 384-dim vectors with the default
// Config, once uniform on the sphere (the hardest case) and once clustered (closer to real
// embeddings). The queries are fresh draws from the same distribution, not stored vectors.
func TestRecall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two 20k graphs")
	}
	const dim, n, nq, k = 384, 20_000, 200, 10
	tests := []struct {
		name string
		gen  func(n int) [][]float32
	}{
		{"random", func(n int) [][]float32 { return randomVecs(newRand(10), n, dim) }},
		{"clustered", func(n int) [][]float32 { return clusteredVecs(newRand(11), n, dim, 50, 0.5) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			all := tt.gen(n + nq)
			ix := mustNew(t, Config{Dim: dim})
			start := time.Now()
			fill(t, ix, all[:n])
			build := time.Since(start)
			if ix.g == nil {
				t.Fatal("no graph at the threshold")
			}
			recall := meanRecall(ix, all[n:], k)
			t.Logf("recall@%d %.4f, build %v, %.0f bytes/vector", k, recall, build.Round(time.Millisecond), float64(ix.Bytes())/n)
			if recall < 0.95 {
				t.Fatalf("recall@%d = %.4f, want >= 0.95", k, recall)
			}
		})
	}
}
