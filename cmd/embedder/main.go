// Command embedder runs the embedding stage against an existing NATS server or cluster: it embeds
// every applied turn, summary and fact once with the configured embedder (--embed-*) and stores
// the vectors in the vector bucket, where retrievers read them. Any number of embedders share its
// durable consumers. Without an embedder configured it does nothing (retrieval ranks by
// keywords) and only serves its health endpoint.
package main

import (
	"context"
	"flag"
	"os"

	"github.com/agentmem/agentmem/cmd/internal/settings"
	"github.com/agentmem/agentmem/internal/embed"
	"github.com/agentmem/agentmem/internal/embedder"
	"github.com/agentmem/agentmem/pkg/events"
)

func main() {
	ctx, stop := settings.SignalContext()
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		os.Exit(settings.Report(os.Stdout, os.Stderr, "embedder", err))
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("embedder", flag.ContinueOnError)
	concurrency := fs.Int("concurrency", embedder.DefaultConcurrency, "messages handled at once per consumer (turns, summaries, facts); also how many texts can share a batch")
	batchSize := fs.Int("batch-size", embedder.DefaultBatchSize, "texts per embedding call")
	batchWait := fs.Duration("batch-wait", embedder.DefaultBatchWait, "how long a batch waits for more texts after its first")
	proc := settings.BindProcess(fs, "embedder")
	embedCfg := settings.BindEmbed(fs)
	if err := settings.Parse(fs, args); err != nil {
		return err
	}
	log, err := proc.Logger(fs)
	if err != nil {
		return err
	}
	rt, err := proc.Start(ctx, log, func(t events.Topology, _, consumer string) bool {
		return consumer == t.EmbedderTurnsConsumer() || consumer == t.EmbedderSummaryConsumer() || consumer == t.EmbedderFactConsumer()
	})
	if err != nil {
		return err
	}
	defer rt.Close()
	embedCfg.Metrics = rt.Metrics
	// Each text is embedded once: an LRU of its vectors would only hold memory.
	embedCfg.CacheEntries = -1
	emb, err := settings.Embedder(embedCfg, log)
	if err != nil {
		return err
	}
	var e embed.Embedder
	if emb != nil {
		e = emb
	}
	if e == nil {
		log.Warn().Msg("no embedder configured (--embed-*): nothing to embed; retrieval ranks by keywords")
		return rt.Serve(ctx, func(ctx context.Context) error { <-ctx.Done(); return nil })
	}
	cfg := embedder.Config{Topology: rt.Topology, Concurrency: *concurrency, BatchSize: *batchSize, BatchWait: *batchWait, Metrics: rt.Metrics}
	w, err := embedder.New(rt.Setup, cfg, rt.JS, e, log)
	if err != nil {
		return err
	}
	log.Info().Str("model", e.Name()).Msg("embedding")
	return rt.Serve(ctx, w.Run)
}
