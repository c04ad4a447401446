// Package daemon runs agentmem in one process, as memoryd does: an embedded NATS server with
// JetStream (file storage), the streams, buckets and consumers of the topology, and every worker
// (ingest, compressor, extractor, embedder, retriever) connected to it. Separate worker
// processes can connect to the same server.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
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
	"github.com/agentmem/agentmem/internal/forget"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/internal/llm"
	"github.com/agentmem/agentmem/internal/metrics"
	"github.com/agentmem/agentmem/internal/recovery"
	"github.com/agentmem/agentmem/internal/retrieve"
	"github.com/agentmem/agentmem/internal/session"
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
	// Recovery configures the checkpoints of lazy persistence (package recovery; its Topology,
	// DataDir, Consumers and Awaiting are set by the daemon). Lazy persistence is on with the
	// default durability (broker.DurabilitySync), one replica and no archive limits, and on any
	// data directory that had it once (its derived streams stay asynchronous).
	Recovery recovery.Config
	// ViewsInBucket keeps the retriever's stored views in the view bucket. Without it, a daemon
	// with one replica on file storage keeps them as files of its data directory (ViewDirName;
	// retrieve.Config.ViewDir).
	ViewsInBucket bool
}

// Daemon is a running all-in-one process.
type Daemon struct {
	broker *broker.Broker
	nc     *nats.Conn
	ingest atomic.Pointer[ingest.Worker]
	// recovery takes the checkpoints of lazy persistence (nil without it); recovered is what its
	// Prepare did at start.
	recovery  *recovery.Recovery
	recovered recovery.Report
	cancel    context.CancelFunc
	done      chan struct{}
	err       error
	once      sync.Once
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
	copts := append([]nats.Option{nats.Name("memoryd"), nats.MaxReconnects(-1), nats.SyncQueueLen(session.SyncQueueLen),
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
	lazy, err := lazyPersistence(setup, cfg, js)
	if err != nil {
		return fail(err)
	}
	cfg.Topology.Lazy = lazy
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
	if cfg.Broker.DataDir != "" {
		// The retriever's stored views as files of the data directory (package retrieve,
		// viewfiles.go), with one replica on file storage. They are not synced, so an unclean
		// stop empties them; and a run that keeps the views in the bucket removes the files an
		// earlier run left, which its forgets (purging the bucket only) would not reach.
		dir, t := filepath.Join(cfg.Broker.DataDir, ViewDirName), cfg.Topology
		files := !cfg.ViewsInBucket && cfg.Retrieve.ViewDir == "" && !cfg.Retrieve.NoStoredViews &&
			t.Replicas <= 1 && t.Storage == jetstream.FileStorage
		if files {
			cfg.Retrieve.ViewDir = dir
			cfg.Extract.ForgetParts = append(cfg.Extract.ForgetParts, viewFilePart{dir})
			if err := cfg.Metrics.Register(metrics.FilesCollector(dir, retrieve.ViewFileExt, "stored_view", "the stored views of --data/views")); err != nil {
				return fail(err)
			}
		}
		if !files || !b.StartedClean() {
			if err := retrieve.EmptyViewDir(dir); err != nil {
				return fail(err)
			}
		}
	}
	all := cfg.Stages
	if all == nil {
		all = stages.All(stages.Configs{Ingest: cfg.Ingest, Retrieve: cfg.Retrieve, Compress: cfg.Compress,
			Extract: cfg.Extract, Embed: cfg.Embed})
	}
	sh := &stage.Shared{NC: d.nc, JS: js, Topology: cfg.Topology, Metrics: cfg.Metrics, Tracer: cfg.Tracer, Log: log,
		Chat: chat, Embedder: emb, Stages: all}
	var running []stage.Stage
	var consumers []stage.Consumer
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
		running = append(running, st)
		consumers = append(consumers, st.ConsumersOn(cfg.Topology)...)
	}
	if lazy {
		// Before any stage runs: the consumers of the turns stream at their positions and, after
		// an unclean stop, what the last run wrote after its last checkpoint rebuilt.
		rc := cfg.Recovery
		rc.Topology, rc.DataDir, rc.Consumers = cfg.Topology, cfg.Broker.DataDir, consumers
		rc.Awaiting = func() []session.Key {
			if in := d.ingest.Load(); in != nil {
				return in.Awaiting()
			}
			return nil
		}
		if d.recovery, err = recovery.New(setup, rc, js, log); err != nil {
			return fail(err)
		}
		sh.Sync = d.recovery.Sync
		rp, err := newReplayer(ctx, cfg, "", true, js, log)
		if err != nil {
			return fail(err)
		}
		if d.recovered, err = d.recovery.Prepare(ctx, b.StartedClean(), rp); err != nil {
			return fail(fmt.Errorf("recovering after the last run: %w", err))
		}
		log.Info().Bool("clean", d.recovered.Clean).Bool("first", d.recovered.First).Int("sessions_rebuilt", d.recovered.Sessions).
			Dur("took", d.recovered.Took).Msg("lazy persistence: the turns synced, derived memory checkpointed")
	}
	var runners []stage.Runner
	for _, st := range running {
		r, err := st.Build(setup, sh)
		if err != nil {
			return fail(err)
		}
		if in, ok := r.(*ingest.Worker); ok {
			d.ingest.Store(in)
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
	checkpoints := make(chan struct{})
	if d.recovery != nil {
		go func() {
			defer close(checkpoints)
			_ = d.recovery.Run(gctx)
		}()
	} else {
		close(checkpoints)
	}
	go func() {
		err := g.Wait()
		if err != nil && !errors.Is(err, context.Canceled) {
			d.err = err
			log.Error().Err(err).Msg("worker failed")
		}
		<-checkpoints
		clean := false
		if d.recovery != nil {
			// Every stage drained: the checkpoint of a clean stop, then the server's shutdown
			// syncs the rest and marks the directory.
			sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			if err := d.recovery.Stop(sctx); err != nil {
				log.Error().Err(err).Msg("the checkpoint of the clean stop failed: the next start rebuilds what this run wrote since its last checkpoint")
			} else {
				clean = true
			}
			cancel()
		}
		if err := d.nc.Drain(); err != nil {
			log.Debug().Err(err).Msg("draining connection")
			d.nc.Close()
		}
		<-closed
		if clean {
			if err := b.ShutdownClean(); err != nil {
				log.Error().Err(err).Msg("marking the data directory as stopped cleanly failed: the next start rebuilds what this run wrote since its last checkpoint")
			}
		} else {
			b.Shutdown()
		}
		close(d.done)
	}()
	log.Info().Str("url", b.ClientURL()).Str("data", cfg.Broker.DataDir).Msg("memoryd running")
	return d, nil
}

// viewFilePart is a forget's part (package forget): the forgotten user's stored view file, which
// the retriever also removes when the forget's announcement reaches it.
type viewFilePart struct{ dir string }

func (p viewFilePart) Forget(_ context.Context, u forget.User, _ map[string]int) error {
	return retrieve.RemoveViewFile(p.dir, u.Tenant, u.User)
}

// ViewDirName is the directory of the data directory where memoryd's retriever keeps the users'
// stored views, when it runs with one replica on file storage (retrieve.Config.ViewDir).
const ViewDirName = "views"

// Conn is the daemon's own NATS connection.
func (d *Daemon) Conn() *nats.Conn { return d.nc }

// URL is the client URL of the embedded server.
func (d *Daemon) URL() string { return d.broker.ClientURL() }

// Ingest exposes the ingest worker (for its statistics).
func (d *Daemon) Ingest() *ingest.Worker { return d.ingest.Load() }

// Recovered says what the start did to recover from the last run with lazy persistence (package
// recovery), and false without lazy persistence.
func (d *Daemon) Recovered() (recovery.Report, bool) { return d.recovered, d.recovery != nil }

// Checkpoint takes a checkpoint of lazy persistence now (package recovery); it fails without
// lazy persistence.
func (d *Daemon) Checkpoint(ctx context.Context) (recovery.Checkpoint, error) {
	if d.recovery == nil {
		return recovery.Checkpoint{}, errors.New("daemon: no lazy persistence (--durability sync with one replica and no archive limits)")
	}
	return d.recovery.Checkpoint(ctx)
}

// lazyPersistence decides whether the daemon persists derived memory lazily: with the default
// durability, one replica and no archive limits (a rebuild replays the archive, which must hold
// every turn), and on a data directory that had it before (its recovery bucket exists: its
// derived streams are asynchronous, which nats-server cannot change).
func lazyPersistence(ctx context.Context, cfg Config, js jetstream.JetStream) (bool, error) {
	dur, err := broker.ParseDurability(string(cfg.Broker.Durability))
	if err != nil {
		return false, err
	}
	t := cfg.Topology
	if dur == broker.DurabilitySync && t.Replicas == 1 && t.Storage == jetstream.FileStorage &&
		t.ArchiveMaxAge == 0 && t.ArchiveMaxBytes == 0 {
		return true, nil
	}
	_, err = js.KeyValue(ctx, t.RecoveryBucket())
	switch {
	case errors.Is(err, jetstream.ErrBucketNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("looking for the recovery bucket: %w", err)
	}
	return true, nil
}

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
