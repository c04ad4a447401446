// Package runner runs one stage of the registry (package stages) as its own process: the body of
// every worker command (cmd/ingest, cmd/compressor, …). It binds the process flags and the flag
// groups the stage's command needs (stage.Command), connects, creates the streams and buckets if
// missing, makes the metrics with the lag of the stage's consumers, builds the stage from the
// shared resources and serves it with its health endpoint.
package runner

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/agentmem/agentmem/cmd/internal/settings"
	"github.com/agentmem/agentmem/internal/embed"
	"github.com/agentmem/agentmem/internal/llm"
	"github.com/agentmem/agentmem/internal/stage"
	"github.com/agentmem/agentmem/internal/stages"
	"github.com/agentmem/agentmem/pkg/events"
)

// Main runs the command of the stage named name with the program's arguments and exits with
// the status settings.Report gives its error.
func Main(name string) {
	ctx, stop := settings.SignalContext()
	err := Run(ctx, name, os.Args[1:])
	stop()
	if err != nil {
		os.Exit(settings.Report(os.Stdout, os.Stderr, name, err))
	}
}

// Run runs the command of the stage named name with args until ctx is cancelled. It fails when
// the registry has no such stage or the stage has no command.
func Run(ctx context.Context, name string, args []string) error {
	all := stages.Defaults()
	st, ok := stage.Find(all, name)
	if !ok || st.Command == nil {
		return fmt.Errorf("runner: no stage %q with a command", name)
	}
	cmd := st.Command
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	makeStage := cmd.Flags(fs)
	proc := settings.BindProcess(fs, name)
	g := bind(fs, cmd.Needs)
	if err := settings.Parse(fs, args); err != nil {
		return err
	}
	log, err := proc.Logger(fs)
	if err != nil {
		return err
	}
	opts, err := g.options()
	if err != nil {
		return err
	}
	opts.MemoryLimit = proc.MemoryLimit()
	if st, err = makeStage(opts); err != nil {
		return err
	}
	rt, err := proc.Start(ctx, log, func(t events.Topology, stream, consumer string) bool {
		return stage.Keep(t, st)(stream, consumer)
	})
	if err != nil {
		return err
	}
	defer rt.Close()
	sh := &stage.Shared{NC: rt.NC, JS: rt.JS, Topology: rt.Topology, Metrics: rt.Metrics, Tracer: rt.Tracer, Log: log, Stages: all}
	if g.llm != nil {
		g.llm.Metrics = rt.Metrics
		if g.llm.Enabled() {
			if sh.Chat, err = llm.New(*g.llm, log); err != nil {
				return err
			}
		}
	}
	if g.embed != nil {
		g.embed.Metrics = rt.Metrics
		if !cmd.EmbedCache {
			// Each text is embedded once: an LRU of its vectors would only hold memory.
			g.embed.CacheEntries = -1
		}
		if sh.Embedder, err = settings.Embedder(g.embed, log); err != nil {
			return err
		}
		opts.EmbedModel = func(model string) (embed.Embedder, error) {
			c := *g.embed
			c.Model = model
			return settings.Embedder(&c, log)
		}
	}
	if !st.Running(sh) {
		log.Warn().Msg(st.Off)
		return rt.Serve(ctx, func(ctx context.Context) error { <-ctx.Done(); return nil })
	}
	r, err := st.Build(rt.Setup, sh)
	if err != nil {
		return err
	}
	return rt.Serve(ctx, r.Run)
}

// groups are the shared flag groups a command binds (nil: not bound).
type groups struct {
	tokenizer *string
	budget    *settings.Budget
	limits    *string
	llm       *llm.Config
	embed     *settings.Embed
}

func bind(fs *flag.FlagSet, needs stage.Needs) *groups {
	g := &groups{}
	switch {
	case needs&stage.NeedsBudget != 0:
		g.budget = settings.BindBudget(fs)
	case needs&stage.NeedsTokenizer != 0:
		g.tokenizer = settings.BindTokenizer(fs)
	}
	if needs&stage.NeedsLLM != 0 {
		g.llm = settings.BindLLM(fs)
	}
	if needs&stage.NeedsEmbedder != 0 {
		g.embed = settings.BindEmbed(fs)
	}
	if needs&stage.NeedsLimits != 0 {
		g.limits = settings.BindLimits(fs)
	}
	return g
}

// options are what the parsed groups give the stage's command.
func (g *groups) options() (stage.Options, error) {
	var o stage.Options
	switch {
	case g.budget != nil:
		o.Budget, o.Tokenizer = g.budget.Memory(), g.budget.Tokenizer
	case g.tokenizer != nil:
		o.Tokenizer = *g.tokenizer
	}
	if g.limits != nil {
		lim, err := settings.Limiter(*g.limits)
		if err != nil {
			return o, err
		}
		o.Limits = lim
	}
	return o, nil
}
