package vector

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Test data: reproducible random vectors, uniform on the sphere or in Gaussian clusters.

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 42)) }

// randomVecs returns n vectors of Gaussian components, which normalise to points uniform on
// the sphere: the hardest case for a graph index, since in 384 dimensions every point is
// nearly as far from a query as every other.
func randomVecs(r *rand.Rand, n, dim int) [][]float32 {
	out := make([][]float32, n)
	for i := range out {
		v := make([]float32, dim)
		for j := range v {
			v[j] = float32(r.NormFloat64())
		}
		out[i] = v
	}
	return out
}

// clusteredVecs returns n vectors around `clusters` random centres, each a centre plus
// Gaussian noise of scale spread per component (0.5 gives about 0.8 cosine to the centre),
// in the order drawn, which mixes the clusters the way an agent's memories arrive.
func clusteredVecs(r *rand.Rand, n, dim, clusters int, spread float64) [][]float32 {
	centres := randomVecs(r, clusters, dim)
	out := make([][]float32, n)
	for i := range out {
		c := centres[r.IntN(clusters)]
		v := make([]float32, dim)
		for j := range v {
			v[j] = c[j] + float32(spread*r.NormFloat64())
		}
		out[i] = v
	}
	return out
}

func id(i int) string { return "v" + strconv.Itoa(i) }

// naiveTopK is the obviously correct search: Cosine against every vector, sorted.
func naiveTopK(vecs map[string][]float32, q []float32, k int) []Hit {
	all := make([]Hit, 0, len(vecs))
	for id, v := range vecs {
		all = append(all, Hit{ID: id, Score: Cosine(q, v)})
	}
	slices.SortFunc(all, func(a, b Hit) int {
		if a.Score != b.Score {
			if a.Score > b.Score {
				return -1
			}
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
	return all[:min(k, len(all))]
}

// recallAt returns the fraction of the true top-k ids that got contains.
func recallAt(got, want []Hit) float64 {
	if len(want) == 0 {
		return 1
	}
	in := make(map[string]bool, len(got))
	for _, h := range got {
		in[h.ID] = true
	}
	n := 0
	for _, h := range want {
		if in[h.ID] {
			n++
		}
	}
	return float64(n) / float64(len(want))
}

// meanRecall returns the mean recall@k of Search against SearchExact over the queries.
func meanRecall(ix *Index, queries [][]float32, k int) float64 {
	var sum float64
	for _, q := range queries {
		sum += recallAt(ix.Search(q, k), ix.SearchExact(q, k))
	}
	return sum / float64(len(queries))
}

func mustNew(tb testing.TB, cfg Config) *Index {
	tb.Helper()
	ix, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return ix
}

func mustAdd(tb testing.TB, ix *Index, id string, v []float32) {
	tb.Helper()
	if err := ix.Add(id, v); err != nil {
		tb.Fatal(err)
	}
}

// fill adds vecs as ids v0, v1, ...
func fill(tb testing.TB, ix *Index, vecs [][]float32) {
	tb.Helper()
	for i, v := range vecs {
		mustAdd(tb, ix, id(i), v)
	}
}

// lowRankVecs returns n random vectors that lie near a random rank-`rank` subspace of the
// dim-dimensional space: a Gaussian latent of `rank` components mapped by one fixed random
// matrix, plus isotropic noise of scale noise per component. Sentence embeddings look like
// this: hundreds of coordinates, a few dozen degrees of freedom.
func lowRankVecs(r *rand.Rand, n, dim, rank int, noise float64) [][]float32 {
	basis := randomVecs(r, rank, dim)
	out := make([][]float32, n)
	z := make([]float64, rank)
	for i := range out {
		for j := range z {
			z[j] = r.NormFloat64()
		}
		v := make([]float32, dim)
		for d := range v {
			var x float64
			for j, b := range basis {
				x += z[j] * float64(b[d])
			}
			v[d] = float32(x + noise*r.NormFloat64())
		}
		out[i] = v
	}
	return out
}
