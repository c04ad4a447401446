package retrieve_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/metrics"
	"github.com/agentmem/agentmem/internal/retrieve"
	"github.com/agentmem/agentmem/internal/vectors"
	"github.com/agentmem/agentmem/pkg/events"
)

// hashEmbedder is a local stand-in for a 384-dimensional model: a pseudo-random vector seeded by
// the text. It counts the texts it embedded.
type hashEmbedder struct{ texts atomic.Int64 }

func (h *hashEmbedder) Name() string { return "bench:hash-384" }

func (h *hashEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	h.texts.Add(int64(len(texts)))
	out := make([][]float32, len(texts))
	for i, t := range texts {
		f := fnv.New64a()
		f.Write([]byte(t))
		rng := rand.New(rand.NewPCG(f.Sum64(), 1))
		v := make([]float32, 384)
		for j := range v {
			v[j] = float32(rng.NormFloat64())
		}
		out[i] = v
	}
	return out, nil
}

// BenchmarkColdLoad10kVectors is BenchmarkColdLoad10k with an embedder: the embedding stage has
// stored the 10,000 turns' vectors, and each iteration is a new retriever answering its first
// request for the user, which reads the turns and their vectors and embeds only the query. It
// reports the texts the retriever embedded per cold load and the heap it keeps per entry.
func BenchmarkColdLoad10kVectors(b *testing.B) {
	emb := &hashEmbedder{}
	ctx := context.Background()
	nc, js := startAgentmem(b, retrieve.Config{Embedder: emb})
	const turns, sessions = 10000, 20
	words := []string{"deploy", "rollback", "kafka", "nats", "postgres", "budget", "travel", "paris", "berlin", "piano", "部署", "回滚", "预算", "旅行", "钢琴"}
	start := time.Now()
	publishBenchTurns(b, js, "cold", "turn %d about %s and %s with %s", words, turns, sessions)
	topo := events.DefaultTopology()
	brokertest.CheckFor(b, 300*time.Second, 100*time.Millisecond, func() error {
		lags, err := metrics.ConsumerLag(ctx, js, topo, nil)
		if err != nil {
			return err
		}
		if lag, ok := metrics.EmbedLag(topo, lags); !ok || lag > 0 {
			return fmt.Errorf("embedding: %d left", lag)
		}
		for _, l := range lags {
			if l.Pending+uint64(l.AckPending) > 0 {
				return fmt.Errorf("%s busy", l.Consumer)
			}
		}
		return nil
	})
	stage := time.Since(start)
	vs, _ := js.Stream(ctx, "KV_"+topo.VectorBucket())
	info, _ := vs.Info(ctx)
	stored, _ := vectors.Open(ctx, js, topo)
	n := 0
	if err := stored.ScanAll(ctx, ">", func(vectors.Vector) { n++ }); err != nil || n != turns {
		b.Fatalf("%d vectors stored (%v), want %d", n, err, turns)
	}
	b.Logf("published, applied and embedded %d turns in %s (%.0f texts/s through the whole pipeline); vector bucket %d bytes, %.0f a vector", turns, stage.Round(time.Millisecond),
		float64(turns)/stage.Seconds(), info.State.Bytes, float64(info.State.Bytes)/turns)
	req := events.RetrieveRequest{Query: "rollback of the postgres deploy", User: "cold", Sources: []string{"archive"}}
	var heap int64
	embedded := emb.texts.Load()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		b.StartTimer()
		svc, err := retrieve.New(ctx, retrieve.Config{Embedder: emb}, nc, js, zerolog.Nop())
		if err != nil {
			b.Fatal(err)
		}
		reply, rerr := svc.Retrieve(ctx, "acme", req)
		if rerr != nil {
			b.Fatal(rerr)
		}
		if len(reply.Entries) == 0 || reply.Entries[0].Scores.Vector == nil {
			b.Fatal("no entries with vector scores")
		}
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&after)
		heap += int64(after.HeapAlloc) - int64(before.HeapAlloc)
		runtime.KeepAlive(svc)
		b.StartTimer()
	}
	b.ReportMetric(float64(emb.texts.Load()-embedded)/float64(b.N), "texts-embedded/op")
	b.ReportMetric(float64(heap)/float64(b.N)/turns, "heap-B/entry")
}
