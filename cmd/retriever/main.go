// Command retriever runs the retriever (the agentmem-retriever micro service on
// memory.retrieve.*) against an existing NATS server or cluster; any number may run, they share
// a queue group.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/agentmem/agentmem/cmd/internal/settings"
	"github.com/agentmem/agentmem/internal/retrieve"
	"github.com/agentmem/agentmem/pkg/events"
	"github.com/agentmem/agentmem/pkg/memory"
)

func main() {
	ctx, stop := settings.SignalContext()
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		os.Exit(settings.Report(os.Stdout, os.Stderr, "retriever", err))
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("retriever", flag.ContinueOnError)
	decay := fs.String("decay", "linear:24h:0.5", "time decay of retrieval scores: linear:WINDOW:FLOOR, halflife:HALFLIFE:FLOOR or none")
	proc := settings.BindProcess(fs, "retriever")
	budget := settings.BindBudget(fs)
	embedCfg := settings.BindEmbed(fs)
	prevModel := fs.String("embed-previous-model", "", "during a model change, the model of the same endpoint the stored vectors were made with: queries use it until memctl reembed has completed --embed-model (docs/vectors.md)")
	limitsFile := settings.BindLimits(fs)
	if err := settings.Parse(fs, args); err != nil {
		return err
	}
	log, err := proc.Logger(fs)
	if err != nil {
		return err
	}
	lim, err := settings.Limiter(*limitsFile)
	if err != nil {
		return err
	}
	d, err := memory.ParseDecay(*decay)
	if err != nil {
		return fmt.Errorf("--decay: %w", err)
	}
	rt, err := proc.Start(ctx, log, func(events.Topology, string, string) bool { return false })
	if err != nil {
		return err
	}
	defer rt.Close()
	embedCfg.Metrics = rt.Metrics
	emb, err := settings.Embedder(embedCfg, log)
	if err != nil {
		return err
	}
	var embedder retrieve.Embedder
	if emb != nil {
		embedder = emb
	}
	cfg := retrieve.Config{Topology: rt.Topology, Tokenizer: budget.Tokenizer, Decay: d, Embedder: embedder, Limits: lim,
		Metrics: rt.Metrics, Tracer: rt.Tracer}
	if *prevModel != "" {
		// The same endpoint with the model the stored vectors were made with.
		prevCfg := *embedCfg
		prevCfg.Model = *prevModel
		prev, err := settings.Embedder(&prevCfg, log)
		if err != nil || prev == nil || embedder == nil || prev.Name() == embedder.Name() {
			return fmt.Errorf("--embed-previous-model %q: it needs --embed-base-url and a different --embed-model (%v)", *prevModel, err)
		}
		cfg.PreviousEmbedder = prev
	}
	svc, err := retrieve.New(rt.Setup, cfg, rt.NC, rt.JS, log)
	if err != nil {
		return err
	}
	return rt.Serve(ctx, svc.Run)
}
