package compress

import (
	"context"
	"flag"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/internal/stage"
	"github.com/agentmem/agentmem/pkg/events"
)

// ConsumerName names the durable consumer of pressure events shared by every compressor.
func ConsumerName(t events.Topology) string { return t.Prefix + "_compressor" }

// ConsumerConfig is the consumer of pressure events shared by every compressor.
func ConsumerConfig(t events.Topology) jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:       ConsumerName(t),
		Description:   "agentmem compressors: pressure events",
		FilterSubject: events.PressureSubjects,
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       events.WorkerAckWait,
		MaxDeliver:    events.WorkerMaxDeliver,
		MaxAckPending: 256,
	}
}

// Stage is the compressor as a stage with cfg (its Topology, Metrics and Tracer are the shared
// ones; with the shared LLM client when there is one, offline otherwise).
func Stage(cfg Config) stage.Stage {
	return stage.Stage{
		Name: "compressor",
		Consumers: func(t events.Topology) []stage.Consumer {
			return []stage.Consumer{{Stream: t.PressureStream(), Config: ConsumerConfig(t), Rebuilt: true}}
		},
		Build: func(ctx context.Context, sh *stage.Shared) (stage.Runner, error) {
			cfg := cfg
			cfg.Topology, cfg.Metrics, cfg.Tracer = sh.Topology, sh.Metrics, sh.Tracer
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
				concurrency := fs.Int("concurrency", 4, "compressions running at once")
				return func(o stage.Options) (stage.Stage, error) {
					return Stage(Config{Concurrency: *concurrency, Tokenizer: o.Tokenizer}), nil
				}
			},
		},
	}
}
