package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"
	"github.com/rs/zerolog"
	"github.com/schollz/progressbar/v3"

	"github.com/agentmem/agentmem/cmd/internal/settings"
	"github.com/agentmem/agentmem/internal/daemon"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/internal/session"
)

func replayCommand(out io.Writer) *ffcli.Command {
	c := &common{}
	var from uint64
	var since, into string
	var budget *settings.Budget
	var llmCfg = new(struct{ base, key, model string })
	return newCommand("replay", "--tenant T [--from SEQ | --since TIME] [--into NAME]",
		"rebuild short-term and long-term memory from the turns stream, into an empty system or a separate set of buckets", c, out,
		func(fs *flag.FlagSet) {
			fs.Uint64Var(&from, "from", 0, "first turns-stream sequence to replay (default: the beginning)")
			fs.StringVar(&since, "since", "", "replay only messages stored at or after this time (RFC 3339)")
			fs.StringVar(&into, "into", "", "name of a separate set of buckets to build (default: the live buckets, which must hold nothing of the tenant)")
			budget = settings.BindBudget(fs)
			fs.StringVar(&llmCfg.base, "llm-base-url", "", "OpenAI-compatible API root for summaries and facts (empty: offline, as the live default)")
			fs.StringVar(&llmCfg.key, "llm-api-key", "", "its key (secret)")
			fs.StringVar(&llmCfg.model, "llm-model", "", "model name")
		},
		func(ctx context.Context, _ []string) error {
			var sinceT time.Time
			if since != "" {
				t, err := time.Parse(time.RFC3339, since)
				if err != nil {
					return fmt.Errorf("--since: %w", err)
				}
				sinceT = t
			}
			js, nc, err := c.jetstream()
			if err != nil {
				return err
			}
			defer nc.Close()
			topo := c.topo.Events()
			cfg := daemon.Config{Topology: topo}
			cfg.Ingest.Budget, cfg.Ingest.Tokenizer = budget.Memory(), budget.Tokenizer
			cfg.Extract.Tokenizer = budget.Tokenizer
			cfg.LLM.BaseURL, cfg.LLM.APIKey, cfg.LLM.Model = llmCfg.base, llmCfg.key, llmCfg.model
			if into == "" {
				// Into the live buckets: only an empty system (for this tenant) can be rebuilt.
				store, err := session.NewStore(ctx, js, topo)
				if err != nil {
					return err
				}
				busy := errors.New("busy")
				err = store.List(ctx, func(h session.Header) error {
					if h.Tenant == c.tenant {
						return busy
					}
					return nil
				})
				if errors.Is(err, busy) {
					return fmt.Errorf("tenant %q already has sessions in the live buckets: replay --into NAME builds a separate set", c.tenant)
				}
				if err != nil {
					return err
				}
			}
			rp, err := daemon.NewReplayer(ctx, cfg, into, js, zerolog.Nop())
			if err != nil {
				return err
			}
			var bar *progressbar.ProgressBar
			progress := func(done, total uint64) {
				if bar == nil {
					bar = progressbar.NewOptions64(int64(total), progressbar.OptionSetWriter(os.Stderr),
						progressbar.OptionSetDescription("replaying "+c.tenant), progressbar.OptionShowCount(),
						progressbar.OptionShowIts(), progressbar.OptionSetItsString("turns"), progressbar.OptionThrottle(100*time.Millisecond))
				}
				_ = bar.Set64(int64(done))
			}
			stats, err := rp.Replay(ctx, c.tenant, from, sinceT, progress)
			if bar != nil {
				_ = bar.Finish()
				fmt.Fprintln(os.Stderr)
			}
			if err != nil {
				return err
			}
			target := topo.Prefix
			if into != "" {
				target = ingest.ReplayTopology(topo, into).Prefix
			}
			return c.print(stats, func(w io.Writer) {
				fmt.Fprintf(w, "replayed %d messages of %s into %s: %d sessions, %d applied, %d rejected, %d summaries in %s\n",
					stats.Messages, c.tenant, target, stats.Sessions, stats.Applied, stats.Rejected, stats.Summaries, stats.Took)
			})
		})
}
