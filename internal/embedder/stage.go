package embedder

import (
	"context"
	"flag"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/internal/stage"
	"github.com/agentmem/agentmem/pkg/events"
)

// TurnsConsumerName names the durable consumer of the turns stream the embedders share.
func TurnsConsumerName(t events.Topology) string { return t.Prefix + "_embedder_turns" }

// SummaryConsumerName names the durable consumer of summaries the embedders share.
func SummaryConsumerName(t events.Topology) string { return t.Prefix + "_embedder_summaries" }

// FactConsumerName names the durable consumer of fact events the embedders share.
func FactConsumerName(t events.Topology) string { return t.Prefix + "_embedder_facts" }

// Consumers are the consumers the embedders share: applied turns (the turns stream), summaries
// and fact events. Like the extractor's, a message is tried events.WorkerMaxDeliver times and
// then dead-lettered. Forget waits on each: a vector being embedded when a forget began is
// stored whenever its call returns.
func Consumers(t events.Topology) []stage.Consumer {
	cc := func(name, desc, filter string, ackPending int) jetstream.ConsumerConfig {
		return jetstream.ConsumerConfig{
			Durable: name, Description: desc, FilterSubject: filter,
			DeliverPolicy: jetstream.DeliverAllPolicy, AckPolicy: jetstream.AckExplicitPolicy,
			AckWait: events.WorkerAckWait, MaxDeliver: events.WorkerMaxDeliver, MaxAckPending: ackPending,
		}
	}
	return []stage.Consumer{
		{Stream: t.TurnsStream(), Config: cc(TurnsConsumerName(t), "agentmem embedders: applied turns", "*.memory.turns.*.*", 1024), Forget: true},
		{Stream: t.SummaryStream(), Config: cc(SummaryConsumerName(t), "agentmem embedders: summaries", "*.memory.summaries.*.*", 256), Forget: true},
		{Stream: t.FactStream(), Config: cc(FactConsumerName(t), "agentmem embedders: facts", events.FactSubjects, 256), Forget: true},
	}
}

// consumerConfigs are Consumers keyed by stream.
func consumerConfigs(t events.Topology) map[string]jetstream.ConsumerConfig {
	m := map[string]jetstream.ConsumerConfig{}
	for _, c := range Consumers(t) {
		m[c.Stream] = c.Config
	}
	return m
}

// Stage is the embedding stage with cfg (its Topology and Metrics are the shared ones). It runs
// only with the shared embedder; a runner of every stage removes its consumers without one.
func Stage(cfg Config) stage.Stage {
	return stage.Stage{
		Name:      "embedder",
		Consumers: Consumers,
		Runs:      func(sh *stage.Shared) bool { return sh.Embedder != nil },
		Off:       "no embedder configured (--embed-*): nothing to embed; retrieval ranks by keywords",
		Build: func(ctx context.Context, sh *stage.Shared) (stage.Runner, error) {
			cfg := cfg
			cfg.Topology, cfg.Metrics, cfg.Tracer = sh.Topology, sh.Metrics, sh.Tracer
			w, err := New(ctx, cfg, sh.JS, sh.Embedder, sh.Log)
			if err != nil {
				return nil, err
			}
			sh.Log.Info().Str("model", sh.Embedder.Name()).Msg("embedding")
			return w, nil
		},
		Command: &stage.Command{
			Needs: stage.NeedsEmbedder,
			Flags: func(fs *flag.FlagSet) func(stage.Options) (stage.Stage, error) {
				concurrency := fs.Int("concurrency", DefaultConcurrency, "messages handled at once per consumer (turns, summaries, facts); also how many texts can share a batch")
				batchSize := fs.Int("batch-size", DefaultBatchSize, "texts per embedding call")
				batchWait := fs.Duration("batch-wait", DefaultBatchWait, "how long a batch waits for more texts after its first")
				return func(stage.Options) (stage.Stage, error) {
					return Stage(Config{Concurrency: *concurrency, BatchSize: *batchSize, BatchWait: *batchWait}), nil
				}
			},
		},
	}
}
