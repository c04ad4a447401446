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
	"github.com/agentmem/agentmem/internal/embed"
	"github.com/agentmem/agentmem/internal/embedder"
)

func reembedCommand(out io.Writer) *ffcli.Command {
	c := &common{}
	var cmd *ffcli.Command
	var batch int
	var newEmbedder func() (embed.Embedder, error)
	cmd = newCommand("reembed", "[--embed-base-url URL --embed-model MODEL] [--tenant T] [--batch-size N]",
		"backfill the vectors of an embedding model from the archive and the long-term store (a model change), then mark the model complete", c, out,
		func(fs *flag.FlagSet) {
			fs.IntVar(&batch, "batch-size", embedder.DefaultBatchSize, "texts per embedding call")
			ec := settings.BindEmbed(fs)
			newEmbedder = func() (embed.Embedder, error) {
				e, err := settings.Embedder(ec, zerolog.Nop())
				if err != nil || e == nil {
					return nil, err
				}
				return e, nil
			}
		},
		func(ctx context.Context, _ []string) error {
			// Every tenant unless --tenant (or AGENTMEM_TENANT) names one.
			tenant := ""
			cmd.FlagSet.Visit(func(f *flag.Flag) {
				if f.Name == "tenant" {
					tenant = c.tenant
				}
			})
			e, err := newEmbedder()
			if err != nil {
				return err
			}
			if e == nil {
				return errors.New("no embedder configured: name the model to backfill with the --embed flags, as the embedder and the retrievers will use it")
			}
			js, nc, err := c.jetstream()
			if err != nil {
				return err
			}
			defer nc.Close()
			var bar *progressbar.ProgressBar
			progress := func(done, total int) {
				if bar == nil {
					bar = progressbar.NewOptions64(int64(total), progressbar.OptionSetWriter(os.Stderr),
						progressbar.OptionSetDescription("embedding with "+e.Name()), progressbar.OptionShowCount(),
						progressbar.OptionShowIts(), progressbar.OptionSetItsString("entries"), progressbar.OptionThrottle(100*time.Millisecond))
				}
				_ = bar.Set64(int64(done))
			}
			start := time.Now()
			res, err := embedder.Backfill(ctx, embedder.BackfillConfig{Topology: c.topo.Events(), Tenant: tenant, BatchSize: batch, Progress: progress}, js, e, zerolog.Nop())
			if bar != nil {
				_ = bar.Finish()
				fmt.Fprintln(os.Stderr)
			}
			if err != nil {
				return err
			}
			return c.print(res, func(w io.Writer) {
				fmt.Fprintf(w, "%s: %d entries of %d users, %d embedded now, %d had a vector, in %s\n",
					e.Name(), res.Entries, res.Users, res.Embedded, res.Had, time.Since(start).Round(time.Millisecond))
				if res.Marked {
					fmt.Fprintln(w, "the model is complete: retrievers that still answer with a previous model switch to it")
				} else {
					fmt.Fprintln(w, "one tenant only: the model is not marked complete (run without --tenant for that)")
				}
			})
		})
	cmd.FlagSet.Lookup("tenant").Usage = "only this tenant (default: every tenant, then the model is marked complete)"
	return cmd
}
