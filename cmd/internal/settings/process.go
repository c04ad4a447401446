package settings

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/metrics"
	"github.com/agentmem/agentmem/internal/tracing"
	"github.com/agentmem/agentmem/pkg/events"
)

// Process holds the flags every separate worker command shares: the NATS connection, the health
// and metrics endpoints, tracing, the topology, logging and memory.
type Process struct {
	name    string
	conn    *Conn
	health  *string
	metrics *string
	tracing *Tracing
	topo    *Topology
	log     *Log
	mem     *Memory
}

// BindProcess registers the shared flags of the worker command name ("ingest", "compressor", …).
func BindProcess(fs *flag.FlagSet, name string) *Process {
	return &Process{
		name: name, conn: BindConn(fs), health: BindHealth(fs), metrics: BindMetrics(fs),
		tracing: BindTracing(fs), topo: BindTopology(fs), log: BindLog(fs), mem: BindMemory(fs),
	}
}

// MemoryLimit is --memory-limit in bytes (0: none).
func (p *Process) MemoryLimit() int64 { return int64(p.mem.Limit) }

// Logger returns the process's logger (on stderr) and logs the effective flags of fs.
func (p *Process) Logger(fs *flag.FlagSet) (zerolog.Logger, error) {
	log, err := p.log.Logger(os.Stderr, p.name)
	if err != nil {
		return log, err
	}
	Dump(log, fs)
	return log, nil
}

// Running is a started worker process: its tracer, connection, JetStream context, topology
// (created if missing) and metrics. Build the worker with Setup, then Serve it.
type Running struct {
	NC       *nats.Conn
	JS       jetstream.JetStream
	Topology events.Topology
	Metrics  *metrics.Metrics
	Tracer   *tracing.Provider
	// Setup bounds the creation of the worker (its consumers, buckets): 30 seconds.
	Setup context.Context

	p      *Process
	log    zerolog.Logger
	cancel context.CancelFunc
	once   sync.Once
}

// Start starts tracing, connects as a worker, creates the streams and buckets if missing and
// makes the metrics, with the lag of the consumers keep picks. Defer Close.
func (p *Process) Start(ctx context.Context, log zerolog.Logger, keep func(t events.Topology, stream, consumer string) bool) (*Running, error) {
	if err := p.mem.Apply(log); err != nil {
		return nil, err
	}
	tp, err := p.tracing.Provider(ctx, "agentmem-"+p.name, log)
	if err != nil {
		return nil, err
	}
	r := &Running{Tracer: tp, Topology: p.topo.Events(), p: p, log: log}
	r.Setup, r.cancel = context.WithTimeout(ctx, 30*time.Second)
	if r.NC, err = p.conn.ConnectWorker("agentmem-" + p.name); err != nil {
		r.Close()
		return nil, err
	}
	if r.JS, err = jetstream.New(r.NC); err != nil {
		r.Close()
		return nil, err
	}
	if err := r.Topology.Ensure(r.Setup, r.JS); err != nil {
		r.Close()
		return nil, fmt.Errorf("creating streams and buckets: %w", err)
	}
	t := r.Topology
	r.Metrics = WorkerMetrics(r.JS, t, func(stream, consumer string) bool { return keep(t, stream, consumer) })
	return r, nil
}

// Serve serves the health and metrics endpoints (ready from now on: the worker exists and its
// consumers are created), runs run until ctx ends, then drains the connection and exports the
// last spans.
func (r *Running) Serve(ctx context.Context, run func(context.Context) error) error {
	r.cancel()
	r.p.mem.Start(ctx, r.log)
	ServeHealth(ctx, *r.p.health, r.NC, r.Metrics, r.log)
	ServeMetrics(ctx, *r.p.metrics, r.Metrics, r.log)
	defer r.Close()
	if err := run(ctx); err != nil {
		return err
	}
	return r.NC.Drain()
}

// Close closes the connection and exports the last spans; it is safe to call more than once.
func (r *Running) Close() {
	r.once.Do(func() {
		r.cancel()
		if r.NC != nil {
			r.NC.Close()
		}
		ShutdownTracing(r.Tracer, r.log)
	})
}
