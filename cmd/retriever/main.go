// Command retriever runs the retriever (the agentmem-retriever micro service on
// memory.retrieve.*) against an existing NATS server or cluster; any number may run, they share
// a queue group.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/cmd/internal/settings"
	"github.com/agentmem/agentmem/internal/retrieve"
	"github.com/agentmem/agentmem/pkg/memory"
)

func main() {
	ctx, stop := settings.SignalContext()
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "retriever:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("retriever", flag.ContinueOnError)
	decay := fs.String("decay", "linear:24h:0.5", "time decay of retrieval scores: linear:WINDOW:FLOOR, halflife:HALFLIFE:FLOOR or none")
	conn := settings.BindConn(fs)
	healthAddr := settings.BindHealth(fs)
	metricsAddr := settings.BindMetrics(fs)
	tracer := settings.BindTracing(fs)
	budget := settings.BindBudget(fs)
	topo := settings.BindTopology(fs)
	embedCfg := settings.BindEmbed(fs)
	limitsFile := settings.BindLimits(fs)
	logf := settings.BindLog(fs)
	if err := settings.Parse(fs, args); err != nil {
		return err
	}
	log, err := logf.Logger(os.Stderr, "retriever")
	if err != nil {
		return err
	}
	settings.Dump(log, fs)
	tp, err := tracer.Provider(ctx, "agentmem-retriever", log)
	if err != nil {
		return err
	}
	defer settings.ShutdownTracing(tp, log)
	lim, err := settings.Limiter(*limitsFile)
	if err != nil {
		return err
	}
	d, err := memory.ParseDecay(*decay)
	if err != nil {
		return fmt.Errorf("--decay: %w", err)
	}
	nc, err := conn.ConnectWorker("agentmem-retriever")
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	t := topo.Events()
	setup, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := t.Ensure(setup, js); err != nil {
		return fmt.Errorf("creating streams and buckets: %w", err)
	}
	m := settings.WorkerMetrics(js, t, func(string, string) bool { return false })
	embedCfg.Metrics = m
	emb, err := settings.Embedder(embedCfg, log)
	if err != nil {
		return err
	}
	var embedder retrieve.Embedder
	if emb != nil {
		embedder = emb
	}
	svc, err := retrieve.New(setup, retrieve.Config{Topology: t, Tokenizer: budget.Tokenizer, Decay: d, Embedder: embedder, Limits: lim, Metrics: m, Tracer: tp}, nc, js, log)
	if err != nil {
		return err
	}
	// Ready (for /readyz) once the worker exists and its consumers are created.
	settings.ServeHealth(ctx, *healthAddr, nc, m, log)
	settings.ServeMetrics(ctx, *metricsAddr, m, log)
	if err := svc.Run(ctx); err != nil {
		return err
	}
	return nc.Drain()
}
