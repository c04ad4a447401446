package extract

import (
	"context"
	"flag"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/internal/stage"
	"github.com/agentmem/agentmem/pkg/events"
)

// EndConsumerName names the durable consumer of the turns stream the extractors share (they
// act on session ends).
func EndConsumerName(t events.Topology) string { return t.Prefix + "_extractor_ends" }

// SummaryConsumerName names the durable consumer of summaries the extractors share.
func SummaryConsumerName(t events.Topology) string { return t.Prefix + "_extractor_summaries" }

// Consumers are the consumers the extractors share: session ends ingest applied (turns stream)
// and summaries.
func Consumers(t events.Topology) []stage.Consumer {
	cc := func(name, desc, filter string, ackPending int) jetstream.ConsumerConfig {
		return jetstream.ConsumerConfig{
			Durable: name, Description: desc, FilterSubject: filter,
			DeliverPolicy: jetstream.DeliverAllPolicy, AckPolicy: jetstream.AckExplicitPolicy,
			AckWait: events.WorkerAckWait, MaxDeliver: events.WorkerMaxDeliver, MaxAckPending: ackPending,
		}
	}
	return []stage.Consumer{
		{Stream: t.TurnsStream(), Config: cc(EndConsumerName(t), "agentmem extractors: session ends ingest applied", "memory.ended.*.*", 1024), Rebuilt: true},
		{Stream: t.SummaryStream(), Config: cc(SummaryConsumerName(t), "agentmem extractors: summaries", "*.memory.summaries.*.*", 256), Rebuilt: true},
	}
}

// Stage is the extractor as a stage with cfg (its Topology, Metrics and Tracer are the shared
// ones; with the shared LLM client when there is one, the offline rules otherwise). Forget
// waits on the consumers of the shared stages that ask for it (stage.Consumer.Forget).
func Stage(cfg Config) stage.Stage {
	return stage.Stage{
		Name:      "extractor",
		Consumers: Consumers,
		Services:  []string{ServiceName},
		Build: func(ctx context.Context, sh *stage.Shared) (stage.Runner, error) {
			cfg := cfg
			cfg.Topology, cfg.Metrics, cfg.Tracer, cfg.Sync = sh.Topology, sh.Metrics, sh.Tracer, sh.Sync
			if cfg.ForgetWaits == nil {
				cfg.ForgetWaits = stage.ForgetWaits(sh.Topology, sh.Stages...)
			}
			var chat Chat
			model := ""
			if sh.Chat != nil {
				chat, model = sh.Chat, sh.Chat.Model()
			}
			return New(ctx, cfg, sh.JS, chat, model, sh.Log)
		},
		Command: &stage.Command{
			Needs: stage.NeedsLLM | stage.NeedsTokenizer,
			Flags: func(fs *flag.FlagSet) func(stage.Options) (stage.Stage, error) {
				concurrency := fs.Int("concurrency", 16, "extractions running at once per trigger kind")
				minConfidence := fs.Float64("min-confidence", 0.5, "drop facts the extractor is less sure of")
				return func(o stage.Options) (stage.Stage, error) {
					return Stage(Config{Concurrency: *concurrency, MinConfidence: *minConfidence, Tokenizer: o.Tokenizer}), nil
				}
			},
		},
	}
}
