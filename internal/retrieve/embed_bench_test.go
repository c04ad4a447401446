package retrieve_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/embed/wordvec"
	"github.com/agentmem/agentmem/internal/metrics"
	"github.com/agentmem/agentmem/internal/retrieve"
	"github.com/agentmem/agentmem/pkg/events"
)

// BenchmarkWarmEmbed10k measures warm retrieves over a user's 10,000 archived turns (20
// sessions) with keywords only ("off") and with the local embedder fused ("local"), for a short
// question and for a dialogue of about 1,000 characters used as the query: what the local
// embedder costs a request once the user is loaded. It calls the retriever in-process (no NATS
// request-reply) and reports p50 and p99 in µs.
func BenchmarkWarmEmbed10k(b *testing.B) {
	for _, mode := range []string{"off", "local"} {
		b.Run(mode, func(b *testing.B) {
			var rcfg retrieve.Config
			if mode == "local" {
				emb, err := wordvec.New()
				if err != nil {
					b.Fatal(err)
				}
				rcfg.Embedder = emb
			}
			ctx := context.Background()
			nc, js := startAgentmem(b, rcfg)
			const turns, sessions = 10000, 20
			words := strings.Fields("deploy rollback kafka database budget travel paris berlin piano guitar garden dinner hiking camera coffee movie school doctor birthday weekend")
			publishBenchTurns(b, js, "warm", "turn %d about the %s and the %s with my %s", words, turns, sessions)
			topo := events.DefaultTopology()
			brokertest.CheckFor(b, 300*time.Second, 100*time.Millisecond, func() error {
				lags, err := metrics.ConsumerLag(ctx, js, topo, nil)
				if err != nil {
					return err
				}
				for _, l := range lags {
					if l.Pending+uint64(l.AckPending) > 0 {
						return fmt.Errorf("%s busy", l.Consumer)
					}
				}
				return nil
			})
			svc, err := retrieve.New(ctx, rcfg, nc, js, zerolog.Nop())
			if err != nil {
				b.Fatal(err)
			}
			dialogue := strings.Repeat("I went hiking with my camera last weekend and then we had dinner in the garden.\nassistant: That sounds lovely, did you take pictures of the garden?\n", 7)
			queries := map[string][]string{
				"question": {"rollback of the database deploy", "what guitar did I buy", "where did we travel for my birthday", "coffee with the doctor"},
				"dialogue": {dialogue, dialogue + "\nwhat about the piano?", dialogue + "\nand the movie", dialogue + "\nmy school budget"},
			}
			for _, kind := range []string{"question", "dialogue"} {
				b.Run(kind, func(b *testing.B) {
					qs := queries[kind]
					req := events.RetrieveRequest{User: "warm", Sources: []string{"archive"}}
					req.Query = qs[0]
					if _, err := svc.Retrieve(ctx, "acme", req); err != nil { // loads the user
						b.Fatal(err)
					}
					lat := make([]time.Duration, b.N)
					b.ResetTimer()
					for i := range b.N {
						req.Query = qs[i%len(qs)]
						t0 := time.Now()
						reply, err := svc.Retrieve(ctx, "acme", req)
						lat[i] = time.Since(t0)
						if err != nil || len(reply.Entries) == 0 {
							b.Fatalf("retrieve: %v, %d entries", err, len(reply.Entries))
						}
					}
					b.StopTimer()
					slices.Sort(lat)
					b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
					b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
				})
			}
		})
	}
}
