package ingest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/internal/metrics"
	"github.com/agentmem/agentmem/pkg/events"
)

// BenchmarkObservabilityOverhead measures ingest throughput with metrics off and on, in the same
// run on the same server: rounds alternate between the settings (each on a fresh tenant and its
// own worker) so drift in the machine's speed hits both alike. It reports each setting's
// turns/s over all its rounds and the ratio on/off.
func BenchmarkObservabilityOverhead(b *testing.B) {
	const rounds = 3
	settings := []struct {
		name    string
		metrics func() *metrics.Metrics
	}{
		{"off", func() *metrics.Metrics { return nil }},
		{"metrics", metrics.New},
	}
	for i := 0; i < b.N; i++ {
		env := brokertest.Start(b)
		js, err := jetstream.New(env.NC, jetstream.WithPublishAsyncMaxPending(1000))
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		topo := events.DefaultTopology()
		if err := topo.Ensure(ctx, js); err != nil {
			b.Fatal(err)
		}
		elapsed := make([]time.Duration, len(settings))
		for r := range rounds {
			for s, set := range settings {
				msgs := buildTurns(b, fmt.Sprintf("obs%d%s%d", i, set.name, r), benchTurns/2, 20)
				wjs, _ := jetstream.New(env.Connect(b))
				w, err := ingest.New(ctx, ingest.Config{Topology: topo, IdleTimeout: -1, Metrics: set.metrics()}, wjs, zerolog.Nop())
				if err != nil {
					b.Fatal(err)
				}
				runCtx, stop := context.WithCancel(ctx)
				stopped := make(chan error, 1)
				go func() { stopped <- w.Run(runCtx) }()
				start := time.Now()
				publishAll(b, js, msgs)
				for w.Stats().Applied < uint64(len(msgs)) {
					wait := time.NewTimer(2 * time.Millisecond)
					<-wait.C
				}
				elapsed[s] += time.Since(start)
				stop()
				<-stopped
			}
		}
		turns := float64(rounds * benchTurns / 2)
		for s, set := range settings {
			b.ReportMetric(turns/elapsed[s].Seconds(), set.name+"_turns/s")
		}
		b.ReportMetric(elapsed[0].Seconds()/elapsed[1].Seconds(), "ratio_metrics/off")
		env.Stop()
	}
}
