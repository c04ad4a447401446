package daemon

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/compress"
	"github.com/agentmem/agentmem/internal/extract"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/internal/llm"
	"github.com/agentmem/agentmem/pkg/events"
)

// NewReplayer builds the synchronous replay pipeline (ingest decisions, compression, extraction)
// that rebuilds memory from the live turns stream into the buckets of the topology prefix into
// ("" rebuilds into cfg's own buckets, for an empty system). It creates the target buckets, no
// streams and no consumers.
func NewReplayer(ctx context.Context, cfg Config, into string, js jetstream.JetStream, log zerolog.Logger) (*ingest.Replayer, error) {
	return newReplayer(ctx, cfg, into, false, js, log)
}

// newReplayer is NewReplayer; withEvents makes the replay publish the events the live pipeline
// publishes (ingest.Replayer.WithEvents): memoryd's rebuild after an unclean stop.
func newReplayer(ctx context.Context, cfg Config, into string, withEvents bool, js jetstream.JetStream, log zerolog.Logger) (*ingest.Replayer, error) {
	if cfg.Topology.Prefix == "" {
		cfg.Topology = events.DefaultTopology()
	}
	topo := cfg.Topology
	if into != "" {
		topo = ingest.ReplayTopology(cfg.Topology, into)
		if topo.Prefix == cfg.Topology.Prefix {
			return nil, fmt.Errorf("replay: --into %q is the live prefix", into)
		}
	}
	if err := topo.EnsureBuckets(ctx, js); err != nil {
		return nil, err
	}
	icfg := cfg.Ingest
	icfg.Topology, icfg.NoConsumers, icfg.IdleTimeout, icfg.RepressureAfter = topo, true, -1, -1
	in, err := ingest.New(ctx, icfg, js, log)
	if err != nil {
		return nil, err
	}
	var compChat compress.Chat
	var extChat extract.Chat
	model := ""
	if cfg.LLM.Enabled() {
		c, err := llm.New(cfg.LLM, log)
		if err != nil {
			return nil, err
		}
		compChat, extChat, model = c, c, c.Model()
	}
	ccfg := cfg.Compress
	ccfg.Topology, ccfg.NoConsumer = topo, true
	cp, err := compress.New(ctx, ccfg, js, compChat, model, log)
	if err != nil {
		return nil, err
	}
	ecfg := cfg.Extract
	ecfg.Topology, ecfg.NoConsumers, ecfg.Events = topo, true, withEvents
	ex, err := extract.New(ctx, ecfg, js, extChat, model, log)
	if err != nil {
		return nil, err
	}
	rp := ingest.NewReplayer(in, cp, ex)
	if withEvents {
		rp.WithEvents(cp)
	}
	return rp, nil
}
