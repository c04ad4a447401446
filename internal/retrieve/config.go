// Package retrieve is the retriever: a NATS micro service (agentmem-retriever, endpoint
// "retrieve" on memory.retrieve.*) that answers "what do I remember about X?" for an agent.
//
// A request names a tenant (from the subject, never from the body), a query and the sources to
// search. Each candidate entry gets a score
//
//	score = relevance × decay × weight
//
// where relevance is the keyword relevance of the query in the entry (BM25 over CJK-aware terms,
// normalised so that 1.0 means every query term at saturation; see internal/search), decay is
// the entry's time decay at the request's "at" (by default linear from 1.0 to 0.5 over the first
// 24 hours, then 0.5, configurable per entry type; its floor keeps age from swamping relevance;
// 1.0 for an entry said within the period the query asks about, "last Saturday", "四周前": see
// internal/when) and weight is the source weight (short 1.0, archive 1.0, long 1.2). Entries with no keyword
// relevance are left out. The context is the top entries, best first, that fit in
// context_tokens.
//
// The short source is the session's short-term memory as ingest committed it (internal/session),
// including the pending entries and the turns a pending compression names until their summary
// replaces them. Sessions are cached and refreshed from their header's revision on every
// request, so a reply reflects every turn ingest has committed.
package retrieve

import (
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/agentmem/agentmem/internal/limits"
	"github.com/agentmem/agentmem/internal/metrics"
	"github.com/agentmem/agentmem/internal/rank"
	"github.com/agentmem/agentmem/pkg/events"
	"github.com/agentmem/agentmem/pkg/memory"
)

// ServiceName is the micro service name the retriever registers.
const ServiceName = "agentmem-retriever"

// Version is the version the service reports.
const Version = "0.1.0"

// Config configures the retriever.
type Config struct {
	// Topology names the streams and buckets.
	Topology events.Topology
	// Tokenizer counts context tokens: "estimate" (default) or "o200k".
	Tokenizer string
	// Decay is the time decay of every entry type without its own (default: linear 24h to 0.5).
	Decay memory.Decay
	// DecayByType overrides the decay per entry type.
	DecayByType map[memory.Type]memory.Decay
	// CachedSessions bounds the sessions kept in memory (default 4,096).
	CachedSessions int
	// Concurrency bounds the requests handled at once (default 64).
	Concurrency int
	// MaxUserBytes caps the memory of the per-user long-term and archive views (default 512 MiB;
	// ViewBytes derives it from a process memory limit); the least recently used users are
	// evicted first.
	MaxUserBytes int
	// MemoryLimit is the process's soft memory limit (0: none). With one, the users' views are
	// also evicted while the Go heap the rest of the process holds, plus the views, would pass
	// HeapShare of it: the cap shrinks as the rest grows with the stored data.
	MemoryLimit int64
	// ViewIdle is how long a user's or session's view stays cached without a request (default
	// DefaultViewIdle; negative: for ever): then it is dropped, and its memory given back.
	ViewIdle time.Duration
	// NoStoredViews makes cold loads read every session from the turns stream and store no view
	// (snapshot.go; by default a user's view is stored once loaded and read back by the next
	// cold load of the user).
	NoStoredViews bool
	// ViewDir, when set, is a directory of this process's own where stored views are kept as
	// files (viewfiles.go) instead of values of the view bucket: memoryd with its own server sets
	// it under --data. A file read is the view's bytes; a value read makes the server load the
	// 4 MB block the value is in. Every retriever sharing a bucket leaves it empty.
	ViewDir string
	// WarmAfter is how long the pipeline goes without a commit before the warmer stores the views
	// of the users whose sessions changed (warm.go; default DefaultWarmAfter; negative: never, a
	// view is stored by cold loads only). Without stored views there is nothing to warm.
	WarmAfter time.Duration
	// Now is the clock used when a request has no "at" (default time.Now).
	Now func() time.Time
	// Embedder, when set, embeds queries and adds vector relevance to keyword relevance (an
	// OpenAI-compatible endpoint, or with --embed local the shipped word-vector embedder, package
	// wordvec; docs/embeddings.md). Nil, the commands' default without a model: keywords only,
	// scores.vector absent.
	Embedder Embedder
	// PreviousEmbedder, when set, is the model Embedder replaces: queries are embedded with it and
	// compared with its stored vectors until the vector bucket marks Embedder's model complete
	// (memctl reembed), then with Embedder's (docs/vectors.md).
	PreviousEmbedder Embedder
	// IgnorePeriods measures every entry's decay from the request's "at", also for a question
	// about a period (for measurements: by default what was said within the period a one-line
	// query names counts as fresh, internal/when).
	IgnorePeriods bool
	// PeriodWeight is how much a question about a period raises what was said within it (a
	// soft prior that reorders near-ties and never lifts an entry into the top ten: period.go);
	// 0 is DefaultPeriodWeight.
	PeriodWeight float64
	// Graph is the weight of the user's graph in the ranking (package graph): an entry that
	// belongs to an entity the query names and that the query's words do not find (a turn of
	// another of its names, any of its turns when a relation named it, and the facts and
	// summaries made from them) gains Graph × the request's best relevance, a neighbour's half
	// that, and such entries are candidates even without a matching word. 0 is DefaultGraph;
	// rank.Off (-1) leaves the graph out.
	Graph float64
	// Rank configures the keyword ranking of every source (internal/rank); the zero value is
	// the measured default. The archive uses session evidence and diversity (its documents are
	// grouped by session); short-term and long-term entries are ranked alone. memeval's
	// ablation switches its techniques off one by one.
	Rank rank.Config
	// Fusion says how keyword and vector relevance combine (fusion.go); the zero value is the
	// tuned default.
	Fusion Fusion
	// Limits holds the per-tenant retrieve rates; nil limits nothing.
	Limits *limits.Limiter
	// Metrics records requests and their latency by source; nil records nothing.
	Metrics *metrics.Metrics
	// Tracer makes a span of every request (child of its traceparent header); nil makes none.
	Tracer trace.TracerProvider
}

func (c Config) withDefaults() Config {
	if c.Topology.Prefix == "" {
		c.Topology = events.DefaultTopology()
	}
	if c.Tokenizer == "" {
		c.Tokenizer = "estimate"
	}
	if c.Decay.Kind == "" {
		c.Decay = memory.DefaultDecay()
	}
	if c.CachedSessions == 0 {
		c.CachedSessions = 4096
	}
	if c.Concurrency == 0 {
		c.Concurrency = 64
	}
	if c.MaxUserBytes == 0 {
		c.MaxUserBytes = 512 << 20
	}
	if c.ViewIdle == 0 {
		c.ViewIdle = DefaultViewIdle
	}
	if c.WarmAfter == 0 {
		c.WarmAfter = DefaultWarmAfter
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.PeriodWeight == 0 {
		c.PeriodWeight = DefaultPeriodWeight
	}
	if c.Graph == 0 {
		c.Graph = DefaultGraph
	}
	return c
}

// DefaultGraph is Config.Graph's default, measured on the development sets (docs/graph.md).
const DefaultGraph = 0.3

// diversity is the session-diversity factor of the keyword ranking (rank.Config.Diversity), 1
// when it is off.
func (c Config) diversity() float64 {
	switch c.Rank.Diversity {
	case 0:
		return rank.DefaultDiversity
	case rank.Off:
		return 1
	}
	return c.Rank.Diversity
}

// graphWeight is the weight of the graph in the ranking, 0 when it is left out.
func (c Config) graphWeight() float64 { return max(c.Graph, 0) }

// Validate names the first field that cannot work.
func (c Config) Validate() error {
	if err := c.Topology.Validate(); err != nil {
		return err
	}
	if _, err := memory.NewCounter(c.Tokenizer); err != nil {
		return fmt.Errorf("retrieve: tokenizer: %w", err)
	}
	if err := c.Decay.Validate(); err != nil {
		return fmt.Errorf("retrieve: decay: %w", err)
	}
	for t, d := range c.DecayByType {
		if err := d.Validate(); err != nil {
			return fmt.Errorf("retrieve: decay of %s: %w", t, err)
		}
	}
	if err := c.Rank.Validate(); err != nil {
		return fmt.Errorf("retrieve: rank: %w", err)
	}
	if err := c.Fusion.Validate(); err != nil {
		return err
	}
	if c.Graph < 0 && c.Graph != rank.Off {
		return fmt.Errorf("retrieve: graph weight %v, want >= 0 or rank.Off", c.Graph)
	}
	if c.CachedSessions < 1 || c.Concurrency < 1 {
		return errors.New("retrieve: cached sessions and concurrency must be positive")
	}
	return nil
}

func (c Config) decay(t memory.Type) memory.Decay {
	if d, ok := c.DecayByType[t]; ok {
		return d
	}
	return c.Decay
}
