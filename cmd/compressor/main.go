// Command compressor runs the compressor worker against an existing NATS server or cluster: it
// turns memory.pressure events into Map-Reduce summaries, with an OpenAI-compatible LLM when one
// is configured (--llm-base-url, --llm-model) and the extractive summariser otherwise. Any number
// of compressors share one durable consumer.
package main

import (
	"context"
	"flag"
	"os"

	"github.com/agentmem/agentmem/cmd/internal/settings"
	"github.com/agentmem/agentmem/internal/compress"
	"github.com/agentmem/agentmem/internal/llm"
	"github.com/agentmem/agentmem/pkg/events"
)

func main() {
	ctx, stop := settings.SignalContext()
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		os.Exit(settings.Report(os.Stdout, os.Stderr, "compressor", err))
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("compressor", flag.ContinueOnError)
	concurrency := fs.Int("concurrency", 4, "compressions running at once")
	tokenizer := settings.BindTokenizer(fs)
	proc := settings.BindProcess(fs, "compressor")
	llmCfg := settings.BindLLM(fs)
	if err := settings.Parse(fs, args); err != nil {
		return err
	}
	log, err := proc.Logger(fs)
	if err != nil {
		return err
	}
	rt, err := proc.Start(ctx, log, func(t events.Topology, _, consumer string) bool { return consumer == t.CompressorConsumer() })
	if err != nil {
		return err
	}
	defer rt.Close()
	llmCfg.Metrics = rt.Metrics
	var chat compress.Chat
	model := ""
	if llmCfg.Enabled() {
		c, err := llm.New(*llmCfg, log)
		if err != nil {
			return err
		}
		chat, model = c, c.Model()
	}
	w, err := compress.New(rt.Setup, compress.Config{Topology: rt.Topology, Concurrency: *concurrency, Tokenizer: *tokenizer,
		Metrics: rt.Metrics, Tracer: rt.Tracer}, rt.JS, chat, model, log)
	if err != nil {
		return err
	}
	return rt.Serve(ctx, w.Run)
}
