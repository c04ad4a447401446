package vector

import (
	"strconv"
	"sync"
	"testing"
	"time"
)

// Benchmarks search 384-dim vectors, one query per op, cycling through 100 queries that are
// fresh draws from the data's distribution. The 100k graphs are built once per run and shared;
// their sub-benchmarks report recall@10 against exact search, the build time and the memory
// per vector alongside ns/op.

const (
	benchDim     = 384
	benchQueries = 100
)

// benchSet is a data set with its exact-only and graph indexes, built on first use.
type benchSet struct {
	vecs, queries [][]float32
	graph         *Index
	build         time.Duration
	exactTop      [][]Hit
}

var benchData = struct {
	sync.Mutex
	sets map[string]*benchSet
}{sets: map[string]*benchSet{}}

// benchVecs returns n vectors and the queries of a named distribution, generated once.
func benchVecs(name string, n int) ([][]float32, [][]float32) {
	gen := map[string]func(n int) [][]float32{
		"random":   func(n int) [][]float32 { return randomVecs(newRand(20), n, benchDim) },
		"low-rank": func(n int) [][]float32 { return lowRankVecs(newRand(21), n, benchDim, 32, 0.5) },
	}[name]
	all := gen(n + benchQueries)
	return all[:n], all[n:]
}

// graphSet returns the 100k graph of a named distribution, building it on first use.
func graphSet(b *testing.B, name string) *benchSet {
	benchData.Lock()
	defer benchData.Unlock()
	if s, ok := benchData.sets[name]; ok {
		return s
	}
	vecs, queries := benchVecs(name, 100_000)
	s := &benchSet{vecs: vecs, queries: queries, graph: mustNew(b, Config{Dim: benchDim, ExactBelow: len(vecs)})}
	start := time.Now()
	fill(b, s.graph, vecs)
	s.build = time.Since(start)
	b.Logf("%s: built the 100k graph in %v", name, s.build.Round(time.Second))
	for _, q := range queries {
		s.exactTop = append(s.exactTop, s.graph.SearchExact(q, 10))
	}
	benchData.sets[name] = s
	return s
}

func benchExact(b *testing.B, n int) {
	vecs, queries := benchVecs("random", n)
	ix := mustNew(b, Config{Dim: benchDim, ExactBelow: n + 1})
	fill(b, ix, vecs)
	i := 0
	for b.Loop() {
		if hits := ix.Search(queries[i%len(queries)], 10); len(hits) != 10 {
			b.Fatalf("%d hits", len(hits))
		}
		i++
	}
	b.ReportMetric(float64(ix.Bytes())/float64(n), "B/vector") // after the loop, which clears metrics
}

func BenchmarkExact10k(b *testing.B)  { benchExact(b, 10_000) }
func BenchmarkExact100k(b *testing.B) { benchExact(b, 100_000) }

// BenchmarkHNSW100k searches 100k-vector graphs built with the default Config, at the
// default EfSearch and above it, on low-rank data (like real embeddings) and isotropic random
// data (the worst case).
func BenchmarkHNSW100k(b *testing.B) {
	for _, data := range []string{"low-rank", "random"} {
		for _, ef := range []int{DefaultEfSearch, 128, 256} {
			b.Run(data+"/ef="+strconv.Itoa(ef), func(b *testing.B) {
				s := graphSet(b, data)
				ix := s.graph
				ix.cfg.EfSearch = ef // sub-benchmarks run one at a time
				var recall float64
				for i, q := range s.queries {
					recall += recallAt(ix.Search(q, 10), s.exactTop[i])
				}
				recall /= float64(len(s.queries))
				// Nodes a query visits on the bottom layer, each one a dot product: the
				// machine-independent cost, against 100,000 for exact search.
				var visited int
				sc := new(scratch)
				for _, q := range s.queries {
					ix.g.search(ix.space(), Normalize(q), max(ef, 10), nil, sc)
					for _, e := range sc.seen {
						if e == sc.epoch {
							visited++
						}
					}
				}
				i := 0
				for b.Loop() {
					if hits := ix.Search(s.queries[i%len(s.queries)], 10); len(hits) != 10 {
						b.Fatalf("%d hits", len(hits))
					}
					i++
				}
				b.ReportMetric(recall, "recall@10")
				b.ReportMetric(float64(visited)/float64(len(s.queries)), "visited/query")
				b.ReportMetric(s.build.Seconds(), "build-s")
				b.ReportMetric(float64(ix.Bytes())/float64(ix.Len()), "B/vector")
			})
		}
	}
}
