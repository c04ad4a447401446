package ingest_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/internal/metrics"
	"github.com/agentmem/agentmem/internal/tracing"
	"github.com/agentmem/agentmem/internal/tracing/tracingtest"
	"github.com/agentmem/agentmem/pkg/events"
)

// BenchmarkObservabilityOverhead measures ingest throughput with observability off, with
// metrics, and with metrics and traces (every span exported over OTLP/HTTP to an in-process
// collector, sampling 1), in the same run on the same server: rounds alternate between the
// settings (each on a fresh tenant and its own worker owning every partition statically) so
// drift in the machine's speed hits all alike. The turns carry a traceparent, as those of a
// traced agent do. It reports each setting's turns/s over all its rounds and the ratios to off.
func BenchmarkObservabilityOverhead(b *testing.B) {
	const rounds = 6
	col := tracingtest.New(b)
	tp, err := tracing.New(context.Background(), tracing.Config{Endpoint: col.URL, SampleRatio: 1, Service: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	settings := []struct {
		name    string
		metrics func() *metrics.Metrics
		tracer  trace.TracerProvider
	}{
		{"off", func() *metrics.Metrics { return nil }, nil},
		{"metrics", metrics.New, nil},
		{"metrics+traces", metrics.New, tp},
	}
	all := make([]int, events.DefaultPartitions)
	for p := range all {
		all[p] = p
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
				msgs := buildTurns(b, fmt.Sprintf("obs%d%d%d", i, s, r), benchTurns/2, 20)
				for _, m := range msgs { // a sampled agent's trace context, recorded by nobody here
					var sc trace.SpanContextConfig
					_, _ = rand.Read(sc.TraceID[:])
					_, _ = rand.Read(sc.SpanID[:])
					sc.TraceFlags = trace.FlagsSampled
					h := nats.Header{}
					events.InjectHeader(trace.ContextWithRemoteSpanContext(ctx, trace.NewSpanContext(sc)), h)
					m.Header.Set("ce-"+events.TraceParentAttribute, h.Get("traceparent"))
				}
				wjs, _ := jetstream.New(env.Connect(b))
				w, err := ingest.New(ctx, ingest.Config{Topology: topo, IdleTimeout: -1, Partitions: all, Metrics: set.metrics(), Tracer: set.tracer}, wjs, zerolog.Nop())
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
		b.ReportMetric(elapsed[0].Seconds()/elapsed[2].Seconds(), "ratio_metrics+traces/off")
		env.Stop()
	}
}
