// Command extractor runs the fact extractor against an existing NATS server or cluster: it turns
// session ends and summaries into durable facts in the long-term store, with an OpenAI-compatible
// LLM when one is configured and the offline rules otherwise. Any number of extractors share its
// durable consumers.
package main

import (
	"context"
	"flag"
	"os"

	"github.com/agentmem/agentmem/cmd/internal/settings"
	"github.com/agentmem/agentmem/internal/extract"
	"github.com/agentmem/agentmem/internal/llm"
	"github.com/agentmem/agentmem/pkg/events"
)

func main() {
	ctx, stop := settings.SignalContext()
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		os.Exit(settings.Report(os.Stdout, os.Stderr, "extractor", err))
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("extractor", flag.ContinueOnError)
	concurrency := fs.Int("concurrency", 16, "extractions running at once per trigger kind")
	minConfidence := fs.Float64("min-confidence", 0.5, "drop facts the extractor is less sure of")
	tokenizer := settings.BindTokenizer(fs)
	proc := settings.BindProcess(fs, "extractor")
	llmCfg := settings.BindLLM(fs)
	if err := settings.Parse(fs, args); err != nil {
		return err
	}
	log, err := proc.Logger(fs)
	if err != nil {
		return err
	}
	rt, err := proc.Start(ctx, log, func(t events.Topology, _, consumer string) bool {
		return consumer == t.ExtractorEndConsumer() || consumer == t.ExtractorSummaryConsumer()
	})
	if err != nil {
		return err
	}
	defer rt.Close()
	llmCfg.Metrics = rt.Metrics
	var chat extract.Chat
	model := ""
	if llmCfg.Enabled() {
		c, err := llm.New(*llmCfg, log)
		if err != nil {
			return err
		}
		chat, model = c, c.Model()
	}
	cfg := extract.Config{Topology: rt.Topology, Concurrency: *concurrency, MinConfidence: *minConfidence, Tokenizer: *tokenizer,
		Metrics: rt.Metrics, Tracer: rt.Tracer}
	w, err := extract.New(rt.Setup, cfg, rt.JS, chat, model, log)
	if err != nil {
		return err
	}
	return rt.Serve(ctx, w.Run)
}
