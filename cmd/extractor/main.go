// Command extractor runs the fact extractor against an existing NATS server or cluster: it turns
// session ends and summaries into durable facts in the long-term store, with an OpenAI-compatible
// LLM when one is configured and the offline rules otherwise. Any number of extractors share its
// durable consumers.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/cmd/internal/settings"
	"github.com/agentmem/agentmem/internal/extract"
	"github.com/agentmem/agentmem/internal/llm"
)

func main() {
	ctx, stop := settings.SignalContext()
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "extractor:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("extractor", flag.ContinueOnError)
	concurrency := fs.Int("concurrency", 16, "extractions running at once per trigger kind")
	minConfidence := fs.Float64("min-confidence", 0.5, "drop facts the extractor is less sure of")
	tokenizer := fs.String("tokenizer", "estimate", "token counter: estimate or o200k")
	conn := settings.BindConn(fs)
	healthAddr := settings.BindHealth(fs)
	metricsAddr := settings.BindMetrics(fs)
	tracer := settings.BindTracing(fs)
	llmCfg := settings.BindLLM(fs)
	topo := settings.BindTopology(fs)
	logf := settings.BindLog(fs)
	if err := settings.Parse(fs, args); err != nil {
		return err
	}
	log, err := logf.Logger(os.Stderr, "extractor")
	if err != nil {
		return err
	}
	settings.Dump(log, fs)
	tp, err := tracer.Provider(ctx, "agentmem-extractor", log)
	if err != nil {
		return err
	}
	defer settings.ShutdownTracing(tp, log)
	nc, err := conn.ConnectWorker("agentmem-extractor")
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
	m := settings.WorkerMetrics(js, t, func(_, consumer string) bool {
		return consumer == t.ExtractorEndConsumer() || consumer == t.ExtractorSummaryConsumer()
	})
	llmCfg.Metrics = m
	var chat extract.Chat
	model := ""
	if llmCfg.Enabled() {
		c, err := llm.New(*llmCfg, log)
		if err != nil {
			return err
		}
		chat, model = c, c.Model()
	}
	w, err := extract.New(setup, extract.Config{Topology: t, Concurrency: *concurrency, MinConfidence: *minConfidence, Tokenizer: *tokenizer, Metrics: m, Tracer: tp}, js, chat, model, log)
	if err != nil {
		return err
	}
	// Ready (for /readyz) once the worker exists and its consumers are created.
	settings.ServeHealth(ctx, *healthAddr, nc, m, log)
	settings.ServeMetrics(ctx, *metricsAddr, m, log)
	if err := w.Run(ctx); err != nil {
		return err
	}
	return nc.Drain()
}
