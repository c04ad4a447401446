// Command ingest runs the ingest worker against an existing NATS server or cluster (memoryd
// runs the same worker in-process). It creates the streams, buckets and consumers it needs if
// they are missing.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/agentmem/agentmem/cmd/internal/settings"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/pkg/events"
)

func main() {
	ctx, stop := settings.SignalContext()
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		os.Exit(settings.Report(os.Stdout, os.Stderr, "ingest", err))
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("ingest", flag.ContinueOnError)
	summaryTokens := fs.Int("summary-tokens", 2000, "token cap a compression range is accounted at")
	maxContent := fs.Int("max-content-bytes", 256<<10, "largest turn content accepted")
	idle := fs.Duration("idle-timeout", ingest.DefaultIdleTimeout, "end a session after this long without a turn (negative: never)")
	repressure := fs.Duration("repressure-after", ingest.DefaultRepressureAfter, "re-emit the pressure of a range whose summary has not arrived after this long (negative: never)")
	parts := fs.String("owned-partitions", "", "comma-separated partitions this process consumes, statically (default: share the partitions with the other ingest members)")
	member := fs.String("member", "", "this process's name among the ingest members (default: host-pid-random)")
	memberTTL := fs.Duration("member-ttl", 6*time.Second, "how long a member that stopped its heartbeats keeps its partitions")
	proc := settings.BindProcess(fs, "ingest")
	budget := settings.BindBudget(fs)
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
	owned, err := parsePartitions(*parts)
	if err != nil {
		return err
	}
	rt, err := proc.Start(ctx, log, func(t events.Topology, _, consumer string) bool {
		return strings.HasPrefix(consumer, t.Prefix+"_ingest_")
	})
	if err != nil {
		return err
	}
	defer rt.Close()
	w, err := ingest.New(rt.Setup, ingest.Config{
		Topology: rt.Topology, Budget: budget.Memory(), Tokenizer: budget.Tokenizer, SummaryTokens: *summaryTokens,
		MaxContentBytes: *maxContent, IdleTimeout: *idle, RepressureAfter: *repressure, Partitions: owned,
		Member: *member, MemberTTL: *memberTTL, Limits: lim, Metrics: rt.Metrics, Tracer: rt.Tracer,
	}, rt.JS, log)
	if err != nil {
		return err
	}
	return rt.Serve(ctx, w.Run)
}

func parsePartitions(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var out []int
	for _, p := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil {
			return nil, fmt.Errorf("--owned-partitions: %q is not a number", p)
		}
		out = append(out, n)
	}
	return out, nil
}
