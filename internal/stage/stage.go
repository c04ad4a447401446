// Package stage describes a stage of agentmem as a value: its name, the durable consumers it
// reads, the services it registers, whether it runs with the resources at hand, and how it is
// built from them. The runners (package daemon for memoryd, cmd/internal/runner for the
// separate worker commands) create the shared resources once and loop over the stages; package
// stages lists them. Adding a stage is its own package, a Stage value and one entry in that list.
package stage

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentmem/agentmem/internal/embed"
	"github.com/agentmem/agentmem/internal/limits"
	"github.com/agentmem/agentmem/internal/llm"
	"github.com/agentmem/agentmem/internal/metrics"
	"github.com/agentmem/agentmem/pkg/events"
	"github.com/agentmem/agentmem/pkg/memory"
)

// Consumer is a durable consumer a stage reads.
type Consumer struct {
	// Stream is the stream the consumer is on.
	Stream string
	// Config is the consumer's configuration; Config.Durable is its name.
	Config jetstream.ConsumerConfig
	// Forget marks a consumer whose handlers may still write a user's data after a forget of
	// that user began: forget waits until it has acknowledged what its stream held then.
	Forget bool
	// Rebuilt marks a consumer whose work memoryd's rebuild after an unclean stop does itself
	// for everything it rebuilds (package recovery: ingest's decisions, compressions,
	// extractions): the consumer starts again after what the rebuild read. A consumer without it
	// is delivered again from its last checkpointed position (its handlers are idempotent).
	Rebuilt bool
}

// Name is the consumer's durable name.
func (c Consumer) Name() string { return c.Config.Durable }

// Shared holds the resources a runner creates once and every stage is built from.
type Shared struct {
	NC       *nats.Conn
	JS       jetstream.JetStream
	Topology events.Topology
	// Metrics and Tracer may be nil (no metrics, no spans).
	Metrics *metrics.Metrics
	Tracer  trace.TracerProvider
	Log     zerolog.Logger
	// Chat is the LLM client; nil works offline.
	Chat *llm.Client
	// Embedder embeds texts; nil when none is configured.
	Embedder embed.Embedder
	// Stages are every stage the deployment has, running here or not (for what one stage
	// needs to know of the others: ForgetWaits).
	Stages []Stage
	// Sync, when not nil, makes every write acknowledged so far durable: memoryd persists what
	// it derives from the turns lazily (package recovery) and a stage whose answer promises
	// durability (a user's forget) calls it first. Nil when every write is synced as it is
	// acknowledged, or as the server is configured.
	Sync func(ctx context.Context) error
}

// Runner is a built stage: Run works until ctx is cancelled, then drains.
type Runner interface {
	Run(ctx context.Context) error
}

// Starter is a Runner that serves requests once started (a micro service): the runners start it
// before they report the process ready, then Run it.
type Starter interface {
	Runner
	Start(ctx context.Context) error
}

// Stage is one stage of agentmem.
type Stage struct {
	// Name names the stage ("ingest", "compressor", …): its process, its logs.
	Name string
	// Consumers lists the durable consumers the stage reads on topology t (nil: none). Their
	// names derive from t.Prefix.
	Consumers func(t events.Topology) []Consumer
	// Services names the micro services the stage registers.
	Services []string
	// Runs reports whether the stage runs with the shared resources (nil: always). A runner
	// that runs every stage removes the consumers of one that does not, so that none piles up
	// without a worker behind it.
	Runs func(sh *Shared) bool
	// Off is logged when the stage does not run (what is missing and what that means).
	Off string
	// Build creates the stage (its consumers, its stores) from the shared resources; ctx
	// bounds the creation.
	Build func(ctx context.Context, sh *Shared) (Runner, error)
	// Command describes the stage's own process (cmd/<name>); nil when it has none.
	Command *Command
}

// ConsumersOn is s.Consumers(t), nil when s reads none.
func (s Stage) ConsumersOn(t events.Topology) []Consumer {
	if s.Consumers == nil {
		return nil
	}
	return s.Consumers(t)
}

// Running reports whether s runs with sh.
func (s Stage) Running(sh *Shared) bool { return s.Runs == nil || s.Runs(sh) }

// Validate reports what is missing from s.
func (s Stage) Validate() error {
	switch {
	case s.Name == "":
		return errors.New("stage: no name")
	case s.Build == nil:
		return fmt.Errorf("stage %s: no Build", s.Name)
	}
	return nil
}

// EnsureConsumers creates or updates the consumers of s on t.
func (s Stage) EnsureConsumers(ctx context.Context, js jetstream.JetStream, t events.Topology) error {
	for _, c := range s.ConsumersOn(t) {
		if err := events.EnsureConsumers(ctx, js, c.Stream, c.Config); err != nil {
			return err
		}
	}
	return nil
}

// RemoveConsumers deletes the consumers of s on t that exist.
func (s Stage) RemoveConsumers(ctx context.Context, js jetstream.JetStream, t events.Topology) error {
	for _, c := range s.ConsumersOn(t) {
		err := js.DeleteConsumer(ctx, c.Stream, c.Name())
		if err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) && !errors.Is(err, jetstream.ErrStreamNotFound) {
			return fmt.Errorf("removing consumer %q: %w", c.Name(), err)
		}
	}
	return nil
}

// Keep returns a lag filter (package metrics) that picks the consumers of stages on t.
func Keep(t events.Topology, stages ...Stage) func(stream, consumer string) bool {
	type key struct{ stream, consumer string }
	set := map[key]bool{}
	for _, s := range stages {
		for _, c := range s.ConsumersOn(t) {
			set[key{c.Stream, c.Name()}] = true
		}
	}
	return func(stream, consumer string) bool { return set[key{stream, consumer}] }
}

// ForgetWaits lists the consumers of stages on t that forget waits on (Consumer.Forget).
func ForgetWaits(t events.Topology, stages ...Stage) []Consumer {
	var out []Consumer
	for _, s := range stages {
		for _, c := range s.ConsumersOn(t) {
			if c.Forget {
				out = append(out, c)
			}
		}
	}
	return out
}

// Find returns the stage named name.
func Find(stages []Stage, name string) (Stage, bool) {
	i := slices.IndexFunc(stages, func(s Stage) bool { return s.Name == name })
	if i < 0 {
		return Stage{}, false
	}
	return stages[i], true
}

// Needs lists the shared flag groups a stage's command binds.
type Needs uint8

// Flag groups.
const (
	// NeedsLLM binds --llm-*: Shared.Chat.
	NeedsLLM Needs = 1 << iota
	// NeedsEmbedder binds --embed-*: Shared.Embedder.
	NeedsEmbedder
	// NeedsTokenizer binds --tokenizer: Options.Tokenizer.
	NeedsTokenizer
	// NeedsBudget binds the token budget flags and --tokenizer: Options.Budget and
	// Options.Tokenizer.
	NeedsBudget
	// NeedsLimits binds --limits: Options.Limits.
	NeedsLimits
)

// Command describes the process of a stage that runs on its own (cmd/<name>).
type Command struct {
	// Needs lists the shared flag groups the command binds besides the process flags
	// (connection, health, metrics, tracing, topology, logging).
	Needs Needs
	// EmbedCache keeps the query cache of the embedder (NeedsEmbedder); without it each text
	// is embedded with no cache.
	EmbedCache bool
	// Flags binds the stage's own flags to fs; the function it returns makes the stage once
	// fs is parsed.
	Flags func(fs *flag.FlagSet) func(o Options) (Stage, error)
}

// Options are what the shared flag groups of a command parsed to.
type Options struct {
	// Tokenizer is --tokenizer (NeedsTokenizer, NeedsBudget).
	Tokenizer string
	// Budget is the token budget (NeedsBudget).
	Budget memory.Budget
	// Limits are the per-tenant limits (NeedsLimits); nil when none.
	Limits *limits.Limiter
	// EmbedModel builds an embedder of the --embed-* endpoint with another model
	// (NeedsEmbedder); it fails when the flags configure no endpoint.
	EmbedModel func(model string) (embed.Embedder, error)
	// MemoryLimit is the process's --memory-limit in bytes (0: none), from which a stage may
	// size its caches.
	MemoryLimit int64
}
