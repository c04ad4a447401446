package retrieve

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/agentmem/agentmem/internal/stage"
	"github.com/agentmem/agentmem/pkg/memory"
)

// Stage is the retriever as a stage with cfg: the micro service ServiceName, reading no
// consumer. Its Topology, Metrics and Tracer are the shared ones, its Embedder the shared one
// unless cfg names its own.
func Stage(cfg Config) stage.Stage {
	return stage.Stage{
		Name:     "retriever",
		Services: []string{ServiceName},
		Build: func(ctx context.Context, sh *stage.Shared) (stage.Runner, error) {
			cfg := cfg
			cfg.Topology, cfg.Metrics, cfg.Tracer = sh.Topology, sh.Metrics, sh.Tracer
			if cfg.Embedder == nil && sh.Embedder != nil {
				cfg.Embedder = sh.Embedder
			}
			return New(ctx, cfg, sh.NC, sh.JS, sh.Log)
		},
		Command: &stage.Command{
			Needs:      stage.NeedsBudget | stage.NeedsEmbedder | stage.NeedsLimits,
			EmbedCache: true,
			Flags:      bindFlags,
		},
	}
}

func bindFlags(fs *flag.FlagSet) func(stage.Options) (stage.Stage, error) {
	decay := fs.String("decay", "linear:24h:0.5", "time decay of retrieval scores: linear:WINDOW:FLOOR, halflife:HALFLIFE:FLOOR or none")
	prevModel := fs.String("embed-previous-model", "", "during a model change, the model of the same endpoint the stored vectors were made with: queries use it until memctl reembed has completed --embed-model (docs/vectors.md)")
	viewIdle := BindViewIdle(fs)
	storedViews := BindStoredViews(fs)
	warmViews := BindWarmViews(fs)
	return func(o stage.Options) (stage.Stage, error) {
		d, err := memory.ParseDecay(*decay)
		if err != nil {
			return stage.Stage{}, fmt.Errorf("--decay: %w", err)
		}
		cfg := Config{Tokenizer: o.Tokenizer, Decay: d, Limits: o.Limits, ViewIdle: *viewIdle, NoStoredViews: !*storedViews, WarmAfter: WarmAfter(*warmViews)}
		if o.MemoryLimit > 0 {
			cfg.MaxUserBytes, cfg.MemoryLimit = ViewBytes(o.MemoryLimit), o.MemoryLimit
		}
		s := Stage(cfg)
		if *prevModel == "" {
			return s, nil
		}
		s.Build = func(ctx context.Context, sh *stage.Shared) (stage.Runner, error) {
			// The same endpoint with the model the stored vectors were made with.
			prev, err := o.EmbedModel(*prevModel)
			if err != nil || prev == nil || sh.Embedder == nil || prev.Name() == sh.Embedder.Name() {
				return nil, fmt.Errorf("--embed-previous-model %q: it needs --embed-base-url and a different --embed-model (%v)", *prevModel, err)
			}
			cfg.PreviousEmbedder = prev
			return Stage(cfg).Build(ctx, sh)
		}
		return s, nil
	}
}

// BindStoredViews registers --stored-views (Config.NoStoredViews, negated), for the commands that
// run a retriever.
func BindStoredViews(fs *flag.FlagSet) *bool {
	return fs.Bool("stored-views", true, "store each user's view once loaded (bucket AGENTMEM_VIEWS) and read it back on the user's next cold load, for the sessions unchanged since (false: every cold load reads the turns stream)")
}

// BindWarmViews registers --warm-views (Config.WarmAfter; 0 turns warming off), for the
// commands that run a retriever.
func BindWarmViews(fs *flag.FlagSet) *time.Duration {
	return fs.Duration("warm-views", DefaultWarmAfter, "once no session had a commit for this long, store the views of the users whose sessions changed, so that a user's next cold load reads one value instead of the turns stream (0: only cold loads store views)")
}

// WarmAfter is Config.WarmAfter for the value of --warm-views: 0 there turns warming off.
func WarmAfter(flag time.Duration) time.Duration {
	if flag <= 0 {
		return -1
	}
	return flag
}

// BindViewIdle registers --view-idle (Config.ViewIdle), for the commands that run a retriever.
func BindViewIdle(fs *flag.FlagSet) *time.Duration {
	return fs.Duration("view-idle", DefaultViewIdle, "drop a user's or session's cached view after this long without a request; the next request reads it again (negative: never)")
}
