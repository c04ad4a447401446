package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/agentmem/agentmem/internal/inventory"
	"github.com/agentmem/agentmem/internal/metrics"
)

func statsCommand(out io.Writer) *ffcli.Command {
	c := &common{}
	var cmd *ffcli.Command
	cmd = newCommand("stats", "[--tenant T] [--json]",
		"per tenant: sessions, turns, facts, summaries, dead letters and LLM usage; the lag of every consumer", c, out, nil,
		func(ctx context.Context, _ []string) error {
			// Every tenant unless --tenant (or AGENTMEM_TENANT) names one.
			tenant := ""
			cmd.FlagSet.Visit(func(f *flag.Flag) {
				if f.Name == "tenant" {
					tenant = c.tenant
				}
			})
			js, nc, err := c.jetstream()
			if err != nil {
				return err
			}
			defer nc.Close()
			topo := c.topo.Events()
			rep, err := inventory.New(js, topo).Report(ctx, tenant)
			if err != nil {
				return err
			}
			out := statsReport{Report: rep}
			if lag, ok := metrics.EmbedLag(topo, rep.Consumers); ok {
				out.EmbedLag = &lag
			}
			return c.print(out, func(w io.Writer) { printStats(w, out) })
		})
	cmd.FlagSet.Lookup("tenant").Usage = "only this tenant (default: every tenant)"
	return cmd
}

// statsReport is the inventory with the embedding stage's lag (absent when no embedder runs).
type statsReport struct {
	inventory.Report
	EmbedLag *uint64 `json:"embed_lag,omitempty"`
}

func printStats(w io.Writer, sr statsReport) {
	r := sr.Report
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "tenant\tsessions\topen\tended\tforgotten\tusers\tturns stored\tapplied\trejected\tfacts active\tsuperseded\tdeleted\tsummaries\tdead letters\tLLM calls\tinput tokens\toutput tokens")
	row := func(t inventory.Tenant) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", t.Tenant,
			t.Sessions.Total, t.Sessions.Open, t.Sessions.Ended, t.Sessions.Forgotten, t.Users,
			t.Turns.Stored, t.Turns.Applied, t.Turns.Rejected,
			t.Facts.Active, t.Facts.Superseded, t.Facts.Deleted, t.Summaries, t.DeadLetters,
			t.Usage.Calls, t.Usage.InputTokens, t.Usage.OutputTokens)
	}
	for _, t := range r.Tenants {
		row(t)
	}
	if len(r.Tenants) > 1 || r.Unattributed > 0 {
		row(r.Total)
	}
	_ = tw.Flush()
	if len(r.Tenants) == 0 {
		fmt.Fprintln(w, "no tenants yet")
	}
	if r.Unattributed > 0 {
		fmt.Fprintf(w, "%d dead letters name no tenant (memory.dlq._; the total includes them)\n", r.Unattributed)
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "stream\tconsumer\tpending\tack pending\tredelivered\twaiting")
	for _, l := range r.Consumers {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\n", l.Stream, l.Consumer, l.Pending, l.AckPending, l.Redelivered, l.Waiting)
	}
	_ = tw.Flush()
	if len(r.Consumers) == 0 {
		fmt.Fprintln(w, "no consumers (no worker has started)")
	}
	if sr.EmbedLag != nil {
		fmt.Fprintf(w, "embedder lag: %d entries not embedded yet (retrieval ranks those by keywords)\n", *sr.EmbedLag)
	} else {
		fmt.Fprintln(w, "embedder: not running (no embedder configured; retrieval ranks by keywords)")
	}
	fmt.Fprintf(w, "counted in %s\n", r.Took.Round(time.Millisecond))
}
