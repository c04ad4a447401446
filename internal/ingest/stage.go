package ingest

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/internal/stage"
	"github.com/agentmem/agentmem/pkg/events"
)

// AckWait is how long a turn may stay unacknowledged before JetStream redelivers it: what
// a killed ingest process held comes back after this long. A batch still being handled sends
// InProgress every third of it; a redelivered copy of a turn already applied is acknowledged
// and skipped.
const AckWait = 10 * time.Second

// PriorityGroup is the priority group of the partition consumers: with the pinned-client
// policy JetStream delivers a partition to one ingest member at a time.
const PriorityGroup = "ingest"

// PinnedTTL is how long a member that stopped pulling stays pinned to a partition (how long a
// dead member's partitions wait before another member is served).
const PinnedTTL = 5 * time.Second

// MaxAckPending bounds the turns one partition has in flight.
const MaxAckPending = 1024

// TurnsConsumerName names the durable consumer of turns partition p.
func TurnsConsumerName(t events.Topology, p int) string {
	return fmt.Sprintf("%s_ingest_p%02d", t.Prefix, p)
}

// SummaryConsumerName names the durable consumer of summaries partition p (ingest applies them).
func SummaryConsumerName(t events.Topology, p int) string {
	return fmt.Sprintf("%s_ingest_summaries_p%02d", t.Prefix, p)
}

// MalformedConsumerName names the durable consumer of turns whose subject has the wrong shape
// (the stream stores them untransformed; ingest dead-letters them).
func MalformedConsumerName(t events.Topology) string { return t.Prefix + "_ingest_malformed" }

// TurnsConsumerConfig is the durable consumer of turns partition p. Deliveries are unlimited:
// a turn that cannot be applied for a transient reason stalls its session instead of being
// skipped; bad input is terminated and dead-lettered by ingest itself.
func TurnsConsumerConfig(t events.Topology, p int) jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:        TurnsConsumerName(t, p),
		Description:    fmt.Sprintf("agentmem ingest, turns partition %d", p),
		FilterSubject:  t.PartitionFilter(p),
		DeliverPolicy:  jetstream.DeliverAllPolicy,
		AckPolicy:      jetstream.AckExplicitPolicy,
		AckWait:        AckWait,
		MaxDeliver:     -1,
		MaxAckPending:  MaxAckPending,
		PriorityPolicy: jetstream.PriorityPolicyPinned,
		PriorityGroups: []string{PriorityGroup},
		PinnedTTL:      PinnedTTL,
	}
}

// MalformedConsumerConfig is the durable consumer of turns published on a subject of the wrong
// shape (they are never partitioned).
func MalformedConsumerConfig(t events.Topology) jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:       MalformedConsumerName(t),
		Description:   "agentmem ingest: turns on malformed subjects, dead-lettered",
		FilterSubject: events.TurnsSubjects,
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       AckWait,
		MaxDeliver:    -1,
		MaxAckPending: MaxAckPending,
	}
}

// SummaryConsumerConfig is the durable consumer of summaries partition p.
func SummaryConsumerConfig(t events.Topology, p int) jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:        SummaryConsumerName(t, p),
		Description:    fmt.Sprintf("agentmem ingest, summaries partition %d", p),
		FilterSubject:  t.SummaryPartitionFilter(p),
		DeliverPolicy:  jetstream.DeliverAllPolicy,
		AckPolicy:      jetstream.AckExplicitPolicy,
		AckWait:        AckWait,
		MaxDeliver:     -1,
		MaxAckPending:  MaxAckPending,
		PriorityPolicy: jetstream.PriorityPolicyPinned,
		PriorityGroups: []string{PriorityGroup},
		PinnedTTL:      PinnedTTL,
	}
}

// Consumers are every consumer of the ingest members: turns and summaries of each partition,
// and the malformed turns.
func Consumers(t events.Topology) []stage.Consumer {
	var out []stage.Consumer
	for p := range t.Partitions {
		out = append(out, stage.Consumer{Stream: t.TurnsStream(), Config: TurnsConsumerConfig(t, p), Rebuilt: true},
			stage.Consumer{Stream: t.SummaryStream(), Config: SummaryConsumerConfig(t, p), Rebuilt: true})
	}
	return append(out, stage.Consumer{Stream: t.TurnsStream(), Config: MalformedConsumerConfig(t)})
}

// Stage is ingest as a stage with cfg (its Topology, Metrics and Tracer are the shared ones).
func Stage(cfg Config) stage.Stage {
	return stage.Stage{
		Name:      "ingest",
		Consumers: Consumers,
		Build: func(ctx context.Context, sh *stage.Shared) (stage.Runner, error) {
			cfg := cfg
			cfg.Topology, cfg.Metrics, cfg.Tracer = sh.Topology, sh.Metrics, sh.Tracer
			return New(ctx, cfg, sh.JS, sh.Log)
		},
		Command: &stage.Command{
			Needs: stage.NeedsBudget | stage.NeedsLimits,
			Flags: bindFlags,
		},
	}
}

func bindFlags(fs *flag.FlagSet) func(stage.Options) (stage.Stage, error) {
	summaryTokens := fs.Int("summary-tokens", 2000, "token cap a compression range is accounted at")
	maxContent := fs.Int("max-content-bytes", 256<<10, "largest turn content accepted")
	idle := fs.Duration("idle-timeout", DefaultIdleTimeout, "end a session after this long without a turn (negative: never)")
	repressure := fs.Duration("repressure-after", DefaultRepressureAfter, "re-emit the pressure of a range whose summary has not arrived after this long (negative: never)")
	parts := fs.String("owned-partitions", "", "comma-separated partitions this process consumes, statically (default: share the partitions with the other ingest members)")
	member := fs.String("member", "", "this process's name among the ingest members (default: host-pid-random)")
	memberTTL := fs.Duration("member-ttl", 6*time.Second, "how long a member that stopped its heartbeats keeps its partitions")
	return func(o stage.Options) (stage.Stage, error) {
		owned, err := parsePartitions(*parts)
		if err != nil {
			return stage.Stage{}, err
		}
		return Stage(Config{
			Budget: o.Budget, Tokenizer: o.Tokenizer, SummaryTokens: *summaryTokens,
			MaxContentBytes: *maxContent, IdleTimeout: *idle, RepressureAfter: *repressure, Partitions: owned,
			Member: *member, MemberTTL: *memberTTL, Limits: o.Limits,
		}), nil
	}
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
