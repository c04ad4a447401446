// Package daemon runs agentmem in one process, as memoryd does: an embedded NATS server with
// JetStream (file storage), the streams, buckets and consumers of the topology, and every worker
// (ingest, compressor, extractor, embedder, retriever) connected to it. Separate worker
// processes can connect to the same server.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"

	"github.com/agentmem/agentmem/internal/broker"
	"github.com/agentmem/agentmem/internal/compress"
	"github.com/agentmem/agentmem/internal/embed"
	"github.com/agentmem/agentmem/internal/embedder"
	"github.com/agentmem/agentmem/internal/extract"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/internal/llm"
	"github.com/agentmem/agentmem/internal/metrics"
	"github.com/agentmem/agentmem/internal/retrieve"
	"github.com/agentmem/agentmem/internal/stage"
	"github.com/agentmem/agentmem/internal/stages"
	"github.com/agentmem/agentmem/pkg/events"
)

// Config configures the all-in-one process.
type Config struct {
	// Broker configures the embedded NATS server.
	Broker broker.Config
	// Topology names and configures streams, buckets and consumers.
	Topology events.Topology
	// Ingest, Retrieve, Compress and Extract configure the workers (their Topology is set from
	// Topology).
	Ingest   ingest.Config
	Retrieve retrieve.Config
	Compress compress.Config
	Extract  extract.Config
	// Embed configures the embedding stage, which runs when Retrieve.Embedder is set: it embeds
	// every applied turn, summary and fact with that embedder and stores the vectors the
	// retriever reads (its Topology and Metrics are set from the daemon's).
	Embed embedder.Config
	// Embedder, when set, is what the embedding stage embeds with instead of Retrieve.Embedder
	// (the same model without a query cache, for instance); it must name the same model.
	Embedder embed.Embedder
	// LLM is the OpenAI-compatible endpoint the compressor and extractor use; without one they
	// work offline (extractive summaries, rule-based facts).
	LLM llm.Config
	// ClientOptions are added to the daemon's own connection (its credential when the server
	// requires authentication).
	ClientOptions []nats.Option
	// Metrics, when not nil, is given to every worker and the LLM client, and gains the lag of
	// every consumer and the size of every stream.
	Metrics *metrics.Metrics
	// Tracer, when not nil, makes the spans of every worker (see package tracing); the LLM and
	// embedding calls become children of the span that makes them.
	Tracer trace.TracerProvider
	// Stages are the stages the daemon runs, in order (package stage). Nil runs every stage of
	// the registry (package stages) with the settings above; a list given here carries its own
	// settings, and Ingest, Retrieve, Compress, Extract and Embed are ignored then.
	Stages []stage.Stage
}

// Daemon is a running all-in-one process.
type Daemon struct {
	broker *broker.Broker
	nc     *nats.Conn
	ingest *ingest.Worker
	cancel context.CancelFunc
	done   chan struct{}
	err    error
	once   sync.Once
}

// Start starts the server, creates the topology and starts every worker. It returns once they
// run; Stop (or cancelling ctx) drains the workers and shuts the server down.
func Start(ctx context.Context, cfg Config, log zerolog.Logger) (*Daemon, error) {
	if cfg.Topology.Prefix == "" {
		cfg.Topology = events.DefaultTopology()
	}
	if err := cfg.Topology.Validate(); err != nil {
		return nil, err
	}
	cfg.LLM.Metrics = cfg.Metrics
	if cfg.Compress.Tokenizer == "" {
		// Summaries are capped at what ingest accounts them at, so they count as ingest does.
		cfg.Compress.Tokenizer = cfg.Ingest.Tokenizer
	}
	var chat *llm.Client
	if cfg.LLM.Enabled() {
		var err error
		if chat, err = llm.New(cfg.LLM, log); err != nil {
			return nil, err
		}
	}
	b, err := broker.Start(cfg.Broker, log)
	if err != nil {
		return nil, err
	}
	d := &Daemon{broker: b, done: make(chan struct{})}
	fail := func(err error) (*Daemon, error) {
		if d.nc != nil {
			d.nc.Close()
		}
		b.Shutdown()
		return nil, err
	}
	closed := make(chan struct{})
	copts := append([]nats.Option{nats.Name("memoryd"), nats.MaxReconnects(-1),
		nats.ClosedHandler(func(*nats.Conn) { close(closed) })}, cfg.ClientOptions...)
	d.nc, err = nats.Connect(b.ClientURL(), copts...)
	if err != nil {
		return fail(fmt.Errorf("connecting to the embedded server: %w", err))
	}
	js, err := jetstream.New(d.nc)
	if err != nil {
		return fail(err)
	}
	setup, cancelSetup := context.WithTimeout(ctx, 30*time.Second)
	defer cancelSetup()
	if err := cfg.Topology.Ensure(setup, js); err != nil {
		return fail(fmt.Errorf("creating streams and buckets: %w", err))
	}
	if err := cfg.Metrics.Register(metrics.LagCollector(js, cfg.Topology, nil, 5*time.Second)); err != nil {
		return fail(fmt.Errorf("registering the consumer lag collector: %w", err))
	}
	var emb embed.Embedder
	if cfg.Retrieve.Embedder != nil {
		emb = cfg.Embedder
		if emb == nil {
			emb = cfg.Retrieve.Embedder
		}
		if emb.Name() != cfg.Retrieve.Embedder.Name() {
			return fail(fmt.Errorf("the embedding stage embeds with %s, the retriever with %s: they must be the same model", emb.Name(), cfg.Retrieve.Embedder.Name()))
		}
	}
	all := cfg.Stages
	if all == nil {
		all = stages.All(stages.Configs{Ingest: cfg.Ingest, Retrieve: cfg.Retrieve, Compress: cfg.Compress,
			Extract: cfg.Extract, Embed: cfg.Embed})
	}
	sh := &stage.Shared{NC: d.nc, JS: js, Topology: cfg.Topology, Metrics: cfg.Metrics, Tracer: cfg.Tracer, Log: log,
		Chat: chat, Embedder: emb, Stages: all}
	var runners []stage.Runner
	names := map[string]bool{}
	for _, st := range all {
		if err := st.Validate(); err != nil {
			return fail(err)
		}
		if names[st.Name] {
			return fail(fmt.Errorf("stage %s is listed twice", st.Name))
		}
		names[st.Name] = true
		if !st.Running(sh) {
			// The consumers of an earlier run would only pile up (and stall whoever waits for
			// every consumer of a stream to be done).
			if err := st.RemoveConsumers(setup, js, cfg.Topology); err != nil {
				return fail(err)
			}
			continue
		}
		r, err := st.Build(setup, sh)
		if err != nil {
			return fail(err)
		}
		if in, ok := r.(*ingest.Worker); ok {
			d.ingest = in
		}
		runners = append(runners, r)
	}
	runCtx, cancel := context.WithCancel(ctx)
	d.cancel = cancel
	for _, r := range runners {
		if s, ok := r.(stage.Starter); ok {
			if err := s.Start(runCtx); err != nil {
				cancel()
				return fail(err)
			}
		}
	}
	g, gctx := errgroup.WithContext(runCtx)
	for _, r := range runners {
		g.Go(func() error { return r.Run(gctx) })
	}
	go func() {
		err := g.Wait()
		if err != nil && !errors.Is(err, context.Canceled) {
			d.err = err
			log.Error().Err(err).Msg("worker failed")
		}
		if err := d.nc.Drain(); err != nil {
			log.Debug().Err(err).Msg("draining connection")
			d.nc.Close()
		}
		<-closed
		b.Shutdown()
		close(d.done)
	}()
	log.Info().Str("url", b.ClientURL()).Str("data", cfg.Broker.DataDir).Msg("memoryd running")
	return d, nil
}

// Conn is the daemon's own NATS connection.
func (d *Daemon) Conn() *nats.Conn { return d.nc }

// URL is the client URL of the embedded server.
func (d *Daemon) URL() string { return d.broker.ClientURL() }

// Ingest exposes the ingest worker (for its statistics).
func (d *Daemon) Ingest() *ingest.Worker { return d.ingest }

// Stop drains every worker, then shuts the server down, and waits for all of it.
func (d *Daemon) Stop() error {
	d.once.Do(d.cancel)
	<-d.done
	return d.err
}

// Reload re-reads the server's configuration file (users and permissions, after memctl auth
// added or removed a credential).
func (d *Daemon) Reload() error { return d.broker.Reload() }

// Done is closed when the daemon has stopped.
func (d *Daemon) Done() <-chan struct{} { return d.done }

// Err is the error that stopped the daemon, if any, once Done is closed.
func (d *Daemon) Err() error { return d.err }
