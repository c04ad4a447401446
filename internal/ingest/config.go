// Package ingest is the ingest worker: it turns the turns stream into each session's short-term
// memory, emits memory.pressure when a session reaches 80 % of its budget, evicts above 100 %,
// records session ends (and ends idle sessions itself), and dead-letters bad input.
//
// # Ordering and exactly-once effects
//
// The turns stream is partitioned by (tenant, session) with a subject transform; each partition
// has one durable consumer and is processed by one goroutine, strictly in delivery order. Whether
// a message was already decided is read from the session's header (the stream sequence of the
// last message decided), and whether a turn id was already applied from the session's record of
// seen ids, never from delivery counts. Before a session's first message of a batch is applied,
// ingest asks the stream whether an earlier message of that session is still undecided (for
// example one that a crashed process had received and not acknowledged) and applies those first,
// reading them straight from the stream. So a session's turns are applied in publish order even
// across crashes, restarts and redeliveries.
//
// # Batches
//
// Messages are taken from a partition in batches (as many as are waiting, up to BatchSize). For
// each session of the batch ingest applies the turns in memory, publishes the pressure events and
// dead letters the batch produced (with deterministic Nats-Msg-Ids, so a retry stores them once),
// commits the session (one chunk and one header write, revision-checked) and only then
// acknowledges the messages. A transient failure leaves the session's messages unacknowledged
// (they are redelivered and decided again from the last commit); it never skips a turn.
package ingest

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nuid"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentmem/agentmem/internal/limits"
	"github.com/agentmem/agentmem/internal/metrics"
	"github.com/agentmem/agentmem/pkg/events"
	"github.com/agentmem/agentmem/pkg/memory"
)

// Config configures the ingest worker.
type Config struct {
	// Topology names the streams, buckets and consumers.
	Topology events.Topology
	// Budget is the token budget of every session.
	Budget memory.Budget
	// Tokenizer counts tokens: "estimate" (default) or "o200k".
	Tokenizer string
	// SummaryTokens is the fixed cap a named range is accounted at from the moment a pressure event
	// names it (default 2,000, at most a tenth of the conversation budget).
	SummaryTokens int
	// MaxContentBytes is the largest turn content accepted (default 256 KiB); a tenant's
	// max_turn_bytes limit, when set, replaces it for that tenant.
	MaxContentBytes int
	// Limits holds the per-tenant limits (turn size and rate); nil limits nothing.
	Limits *limits.Limiter
	// IdleTimeout ends a session that received nothing for this long (default 30 minutes;
	// negative disables). It is measured on the wall clock since the last stored message.
	IdleTimeout time.Duration
	// RepressureAfter re-emits the pressure event of a named range whose summary has not arrived
	// for this long, and again every RepressureAfter (default 10 minutes; negative disables).
	RepressureAfter time.Duration
	// BatchSize bounds the messages taken from a partition at once (default 256).
	BatchSize int
	// Partitions, when set, are the partitions this process owns, statically. Otherwise (the
	// default) the process joins the ingest members and owns the partitions rendezvous hashing
	// gives it among the live members (all of them when it runs alone).
	Partitions []int
	// Metrics records what the worker does; nil records nothing.
	Metrics *metrics.Metrics
	// Tracer makes a span of every turn, session end and summary applied (child of the event's
	// traceparent) and of every pressure event; nil makes none.
	Tracer trace.TracerProvider
	// NoConsumers builds a worker for Replay without consumers; Run must not be called then.
	NoConsumers bool
	// Member names this process among the ingest members (default: host-pid-random).
	Member string
	// MemberTTL is how long a member that stopped its heartbeats keeps its partitions (default 6s).
	MemberTTL time.Duration
	// Heartbeat is how often a batch still being handled sends InProgress for its messages
	// (default a third of AckWait).
	Heartbeat time.Duration
	static    bool
	// CachedSessions bounds the sessions each partition keeps in memory (default 1,024).
	CachedSessions int
	// Source is the CloudEvents source of the events ingest publishes ("agentmem/ingest").
	Source string
	// DeadLetterMaxBody is how much of a bad message's body its dead letter keeps (64 KiB).
	DeadLetterMaxBody int
}

// DefaultIdleTimeout is the idle time after which ingest ends a session.
const DefaultIdleTimeout = 30 * time.Minute

// DefaultRepressureAfter is how long ingest waits for a summary before re-emitting its pressure.
const DefaultRepressureAfter = 10 * time.Minute

// heartbeat is how often a batch still being handled extends its messages' AckWait.
func (c Config) heartbeat() time.Duration {
	if c.Heartbeat > 0 {
		return c.Heartbeat
	}
	return AckWait / 3
}

func (c Config) withDefaults() Config {
	if c.Topology.Prefix == "" {
		c.Topology = events.DefaultTopology()
	}
	if c.Budget == (memory.Budget{}) {
		c.Budget = memory.DefaultBudget()
	}
	if c.Tokenizer == "" {
		c.Tokenizer = "estimate"
	}
	if c.SummaryTokens == 0 {
		c.SummaryTokens = 2000
	}
	if limit := c.Budget.Conversation() / 10; c.SummaryTokens > limit && limit > 0 {
		c.SummaryTokens = limit
	}
	if c.MaxContentBytes == 0 {
		c.MaxContentBytes = 256 << 10
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.BatchSize == 0 {
		c.BatchSize = 256
	}
	if c.RepressureAfter == 0 {
		c.RepressureAfter = DefaultRepressureAfter
	}
	c.static = len(c.Partitions) > 0
	if c.Member == "" {
		host, _ := os.Hostname()
		c.Member = memberToken(fmt.Sprintf("%s-%d-%s", host, os.Getpid(), nuid.Next()[:6]))
	}
	if c.MemberTTL == 0 {
		c.MemberTTL = 6 * time.Second
	}
	if len(c.Partitions) == 0 {
		for p := 0; p < c.Topology.Partitions; p++ {
			c.Partitions = append(c.Partitions, p)
		}
	}
	if c.CachedSessions == 0 {
		c.CachedSessions = 1024
	}
	if c.Source == "" {
		c.Source = "agentmem/ingest"
	}
	return c
}

// memberToken keeps a member name usable as a KV key.
func memberToken(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	return string(b)
}

// Validate names the first field that cannot work.
func (c Config) Validate() error {
	if err := c.Topology.Validate(); err != nil {
		return err
	}
	if err := c.Budget.Validate(); err != nil {
		return err
	}
	if _, err := memory.NewCounter(c.Tokenizer); err != nil {
		return fmt.Errorf("ingest: tokenizer: %w", err)
	}
	switch {
	case c.SummaryTokens < 1:
		return errors.New("ingest: summary tokens must be positive")
	case c.MaxContentBytes < 1:
		return errors.New("ingest: max content bytes must be positive")
	case c.BatchSize < 1 || c.BatchSize > MaxAckPending:
		return fmt.Errorf("ingest: batch size %d must be within 1-%d", c.BatchSize, MaxAckPending)
	case c.CachedSessions < 1:
		return errors.New("ingest: cached sessions must be positive")
	case c.MemberTTL < 300*time.Millisecond:
		return errors.New("ingest: member TTL must be at least 300ms")
	case memberToken(c.Member) != c.Member:
		return fmt.Errorf("ingest: member %q may hold only [A-Za-z0-9_-]", c.Member)
	}
	for _, p := range c.Partitions {
		if p < 0 || p >= c.Topology.Partitions {
			return fmt.Errorf("ingest: partition %d outside 0-%d", p, c.Topology.Partitions-1)
		}
	}
	return nil
}
