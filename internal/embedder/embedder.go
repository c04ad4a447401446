// Package embedder is the pipeline's embedding stage: it embeds every applied turn, every summary
// and every fact once per embedding model, in batches, and keeps the vectors in the vector store
// (package vectors): a summary's or a fact's under its entry id (vectors.Key), the turns of a
// batch together, one pack per user (vectors.PackKey). Retrievers load those vectors with a
// user's memory and embed only queries.
//
// It consumes three durable consumers any number of embedder processes share: the turns stream
// (a turn is embedded only once ingest has decided it and only when ingest applied it, read from
// the session's committed state; a rejected turn never is), the summaries stream and the fact
// events. Acknowledgement, retries with backoff and dead letters are package worker's: while the
// embedding endpoint fails, the stage stalls and retries, ingest and retrieval go on (retrieval
// ranks by keywords where vectors are missing), and the stage catches up when the endpoint is
// back. A vector already stored is never made again, so redelivery and replay embed nothing
// twice.
package embedder

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentmem/agentmem/internal/deadletter"
	"github.com/agentmem/agentmem/internal/embed"
	"github.com/agentmem/agentmem/internal/integrity"
	"github.com/agentmem/agentmem/internal/longterm"
	"github.com/agentmem/agentmem/internal/metrics"
	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/internal/tracing"
	"github.com/agentmem/agentmem/internal/vectors"
	"github.com/agentmem/agentmem/internal/worker"
	"github.com/agentmem/agentmem/pkg/events"
)

// Defaults of Config.
const (
	DefaultConcurrency = callsInFlight * DefaultBatchSize // 256
	DefaultBatchSize   = 64
	DefaultBatchWait   = 20 * time.Millisecond
	DefaultDecideWait  = 2 * time.Minute
)

// Config configures the embedding stage.
type Config struct {
	// Topology names the streams, the vector bucket and the consumers.
	Topology events.Topology
	// Concurrency bounds the messages handled at once per consumer (default 256); it is also how
	// many texts can wait for one batch. The default fills every Embed call in flight
	// (callsInFlight × DefaultBatchSize): the turns' batches, and so their packs, are large, and a
	// pack's write is paid once per batch, not once per turn (measured in docs/operations.md).
	Concurrency int
	// BatchSize bounds the texts of one Embed call (default 64).
	BatchSize int
	// BatchWait is how long a batch waits for more texts after its first (default 20ms).
	BatchWait time.Duration
	// DecideWait is how long a turn waits for ingest to decide it before the message is retried
	// later (default 2 minutes; the handler timeout is 4).
	DecideWait time.Duration
	// Backoff is the redelivery delay after the n-th failed delivery (default worker.Backoff).
	Backoff func(n uint64) time.Duration
	// Metrics counts embedded texts and stored vectors; nil counts nothing.
	Metrics *metrics.Metrics
	// Tracer makes a span of every summary and fact embedded (child of the event's
	// traceparent); nil makes none. Turns, read on a hot path without a CloudEvent, get none.
	Tracer trace.TracerProvider
}

// Validate reports the first field of c that cannot work.
func (c Config) Validate() error {
	switch {
	case c.Concurrency < 0:
		return fmt.Errorf("embedder: concurrency %d must not be negative", c.Concurrency)
	case c.BatchSize < 0:
		return fmt.Errorf("embedder: batch size %d must not be negative", c.BatchSize)
	case c.BatchWait < 0 || c.DecideWait < 0:
		return errors.New("embedder: waits must not be negative")
	}
	return c.Topology.Validate()
}

func (c Config) withDefaults() Config {
	if c.Topology.Prefix == "" {
		c.Topology = events.DefaultTopology()
	}
	if c.Concurrency == 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.BatchWait == 0 {
		c.BatchWait = DefaultBatchWait
	}
	if c.DecideWait == 0 {
		c.DecideWait = DefaultDecideWait
	}
	return c
}

// Worker is the embedding stage.
type Worker struct {
	cfg      Config
	emb      embed.Embedder
	vectors  *vectors.Store
	packs    *packIndex
	sessions *sessionCache
	// long is read before a summary's or fact's vector is stored: one forgotten meanwhile is not.
	long    *longterm.Store
	batch   *batcher
	workers []*worker.Worker
	log     zerolog.Logger
	// turnsSince is when the turns consumer was created (Unix nanoseconds; the worker says so
	// again when the consumer is created anew): a turn stored after it and delivered for the
	// first time cannot have a vector yet (nothing else embeds live turns), so it is embedded
	// without looking for one first. Turns stored before (a consumer created again, going
	// through the stream from the start) are looked up, and embedded only if they have none.
	turnsSince atomic.Int64
}

// New returns the stage embedding with emb. It creates its consumers; Run starts it.
func New(ctx context.Context, cfg Config, js jetstream.JetStream, emb embed.Embedder, log zerolog.Logger) (*Worker, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if emb == nil {
		return nil, errors.New("embedder: no embedder")
	}
	topo := cfg.Topology
	log = log.With().Str("component", "embedder").Str("model", emb.Name()).Logger()
	rep := integrity.NewReporter(cfg.Metrics, log)
	vs, err := vectors.Open(ctx, js, topo)
	if err != nil {
		return nil, err
	}
	store, err := session.NewStore(ctx, js, topo)
	if err != nil {
		return nil, err
	}
	long, err := longterm.Open(ctx, js, topo)
	if err != nil {
		return nil, err
	}
	ccs := consumerConfigs(topo)
	for stream, cc := range ccs {
		if err := events.EnsureConsumers(ctx, js, stream, cc); err != nil {
			return nil, err
		}
	}
	turns, err := js.Consumer(ctx, topo.TurnsStream(), ccs[topo.TurnsStream()].Durable)
	if err != nil {
		return nil, fmt.Errorf("binding consumer %q: %w", ccs[topo.TurnsStream()].Durable, err)
	}
	vs = vs.Instrument(rep)
	w := &Worker{
		cfg: cfg, emb: emb, vectors: vs, packs: newPackIndex(vs, packIndexSize), log: log,
		sessions: newSessionCache(store.Instrument(rep), sessionCacheSize), long: long.Instrument(rep),
	}
	w.turnsSince.Store(turns.CachedInfo().Created.UnixNano())
	w.batch = &batcher{emb: emb, size: cfg.BatchSize, wait: cfg.BatchWait, reqs: make(chan batchReq),
		embedded: func(n int) { cfg.Metrics.Embedded(emb.Name(), n) }, store: w.storePacks}
	dlq := deadletter.NewWriter(js, 0).Instrument(cfg.Metrics, "embedder")
	place := func(m worker.Subjected) (string, string) {
		a, err := events.ParseEventSubject(m.Subject())
		switch {
		case err != nil:
			return "", ""
		case a.Kind == events.KindFacts:
			return a.Tenant, "" // the key is a user
		}
		return a.Tenant, a.Key
	}
	tracer := tracing.Tracer(cfg.Tracer)
	for _, h := range []struct {
		name, stream string
		handler      worker.Handler
		skip         func(jetstream.Msg) bool
		created      func(time.Time)
	}{
		// Turns ingest rejects or cannot decode are ingest's to dead-letter; session ends are
		// not embedded.
		{"embedder-turns", topo.TurnsStream(), worker.Dispatch{Kinds: []string{events.KindTurns},
			Routes: []worker.Route{worker.Read(readTurn, w.handleTurn)}, SkipInvalid: true}.Handler(),
			func(m jetstream.Msg) bool { return !maybeTurn(m.Headers()) },
			func(t time.Time) { w.turnsSince.Store(t.UnixNano()) }},
		// A summary that breaks the contract is ingest's to dead-letter.
		{"embedder-summaries", topo.SummaryStream(), worker.Dispatch{Kinds: []string{events.KindSummaries},
			Routes: []worker.Route{worker.On(events.TypeSummary, w.handleSummary).Traced("agentmem.embed")}, SkipInvalid: true,
			Tracer: tracer}.Handler(), nil, nil},
		// Other fact changes (superseded, deleted, forgotten) keep the vectors there are or
		// remove them with the user.
		{"embedder-facts", topo.FactStream(), worker.Dispatch{Kinds: []string{events.KindFacts},
			Routes: []worker.Route{worker.On(events.TypeFact, w.handleFact).Traced("agentmem.embed")}, SkipUnknown: true,
			Tracer: tracer}.Handler(),
			func(m jetstream.Msg) bool { return !events.MaybeType(m.Headers(), events.TypeFact) }, nil},
	} {
		w.workers = append(w.workers, worker.New(worker.Config{
			Name: h.name, Stream: h.stream, Consumer: ccs[h.stream].Durable,
			Concurrency: cfg.Concurrency, MaxDeliver: events.WorkerMaxDeliver, Place: place, Backoff: cfg.Backoff,
			Skip: h.skip, Created: h.created, Metrics: cfg.Metrics,
		}, js, dlq, h.handler, log))
	}
	return w, nil
}

// Model is the name of the embedding model the stage stores vectors of.
func (w *Worker) Model() string { return w.emb.Name() }

// Run embeds until ctx is cancelled, then stops fetching and waits for the messages in flight.
func (w *Worker) Run(ctx context.Context) error {
	bctx, stopBatches := context.WithCancel(context.WithoutCancel(ctx))
	var bwg sync.WaitGroup
	bwg.Go(func() { w.batch.run(bctx) })
	// A turn waits for ingest's decision: each commit wakes the waiters of its session.
	if err := w.sessions.store.WatchCommits(ctx, w.sessions.committed); err != nil {
		w.log.Warn().Err(err).Msg("session commits not watched; waiting turns poll instead")
	}
	errs := make(chan error, len(w.workers))
	for _, wk := range w.workers {
		go func() { errs <- wk.Run(ctx) }()
	}
	var err error
	for range w.workers {
		err = errors.Join(err, <-errs)
	}
	// The batches outlive the consumers: a handler in flight at shutdown still gets its answer.
	stopBatches()
	bwg.Wait()
	return err
}

// maybeTurn reports whether a turns-stream message may be a turn: binary mode says so in its
// ce-type header; structured mode only in its body.
func maybeTurn(h nats.Header) bool { return events.MaybeType(h, events.TypeTurn) }

// readTurn reads a message of the turns consumer with events.ReadAppliedTurn: agentmem's own
// binary-mode turns from their id header and data, without building and checking a CloudEvent
// (most of what the stage spent per turn besides the embedding and the write). That check would
// only repeat ingest's: a turn is embedded once ingest has applied it (handleTurn), and ingest
// applies only turns that pass it. A message that cannot be read as a turn at all is not
// embedded (ingest dead-letters it, or it is a session end): the Dispatch skips it.
func readTurn(e worker.Event) (events.StoredTurn, error) {
	return events.ReadAppliedTurn(&jetstream.RawStreamMsg{Subject: e.Msg.Subject(), Header: e.Msg.Headers(), Data: e.Msg.Data(),
		Sequence: e.Meta.Sequence.Stream, Time: e.Meta.Timestamp})
}

// handleTurn embeds a turn once ingest has applied it. Turns ingest rejects (bad input, another
// user's session) or never sees decoded are not embedded: ingest dead-letters those.
func (w *Worker) handleTurn(ctx context.Context, e worker.Event, t events.StoredTurn) error {
	addr, meta, id, turn := e.Address, e.Meta, t.ID, t.Turn
	if addr.Partition < 0 {
		return nil // not a partitioned turn subject: ingest dead-letters it
	}
	k := session.Key{Tenant: addr.Tenant, Session: addr.Key}
	epoch := w.sessions.forgets.Load() // before the decision: a forget during it is seen
	// A turn waiting for ingest gives its message back at once when the worker stops, instead of
	// holding the shutdown up.
	stopping := worker.Stopping(ctx)
	applied, user, err := w.sessions.decided(ctx, stopping, k, id, meta.Sequence.Stream, w.cfg.DecideWait)
	if err != nil {
		return err
	}
	if !applied || user == "" || strings.TrimSpace(turn.Content) == "" {
		w.cfg.Metrics.EmbedSkipped("turn")
		return nil
	}
	// A turn stored after the consumer was created and delivered for the first time cannot have a
	// vector yet; others (redelivered, or replayed by a new consumer) are looked up.
	model := w.emb.Name()
	if fresh := meta.NumDelivered == 1 && meta.Timestamp.UnixNano() > w.turnsSince.Load(); !fresh {
		has, err := w.vectors.Has(ctx, k.Tenant, user, model, id) // a single value: backfill's, or an earlier build's
		if err == nil && !has {
			has, err = w.packs.has(ctx, k.Tenant, user, model, id)
		}
		if err != nil {
			return err
		}
		if has {
			w.cfg.Metrics.EmbedSkipped("stored")
			return nil
		}
	}
	keep := func(ctx context.Context) (bool, error) {
		ok, err := w.sessions.stillApplied(ctx, stopping, k, id, meta.Sequence.Stream, epoch)
		if err == nil && !ok {
			w.cfg.Metrics.EmbedSkipped("turn")
		}
		return ok, err
	}
	if err := w.batch.embedAndStore(ctx, turn.Content, vectors.Vector{Tenant: k.Tenant, User: user, Model: model, ID: id, Kind: vectors.KindTurn}, keep); err != nil {
		return fmt.Errorf("embedding with %s and storing: %w", model, err)
	}
	return nil
}

// gone reports whether the summary or fact id of (tenant, user) is no longer in the long-term
// store, or is a deleted fact.
func (w *Worker) gone(ctx context.Context, tenant, user, id string, kind byte) (bool, error) {
	var err error
	switch kind {
	case vectors.KindSummary:
		_, err = w.long.Summary(ctx, tenant, user, id)
	case vectors.KindFact:
		var f longterm.Fact
		if f, err = w.long.Fact(ctx, tenant, user, id); err == nil && f.Deleted {
			return true, nil
		}
	default:
		return false, nil
	}
	if errors.Is(err, longterm.ErrNotFound) {
		return true, nil
	}
	return false, err
}

// storePacks stores the packs of a batch (each the vectors of one owner and model) at once and
// returns each pack's error.
func (w *Worker) storePacks(ctx context.Context, packs [][]vectors.Vector) []error {
	errs := w.vectors.PutPacks(ctx, packs)
	for k, vs := range packs {
		if errs[k] != nil {
			continue
		}
		ids := make([]string, len(vs))
		for i, v := range vs {
			ids[i] = v.ID
			w.cfg.Metrics.VectorStored(kindName(v.Kind))
		}
		w.packs.add(vs[0].Tenant, vs[0].User, vs[0].Model, ids)
	}
	return errs
}

// handleSummary embeds a summary (the compressor stored it in the long-term bucket before
// publishing it).
func (w *Worker) handleSummary(ctx context.Context, e worker.Event, sum events.Summary) error {
	if sum.User == "" || sum.SummaryID == "" || strings.TrimSpace(sum.Content) == "" {
		w.cfg.Metrics.EmbedSkipped("summary")
		return nil
	}
	return w.store(ctx, e.Address.Tenant, sum.User, sum.SummaryID, vectors.KindSummary, sum.Content)
}

// handleFact embeds a fact when it is added.
func (w *Worker) handleFact(ctx context.Context, e worker.Event, fe events.FactEvent) error {
	if fe.Op != events.FactAdded || fe.Fact.ID == "" || strings.TrimSpace(fe.Fact.Content) == "" {
		return nil
	}
	return w.store(ctx, e.Address.Tenant, e.Address.Key, fe.Fact.ID, vectors.KindFact, fe.Fact.Content)
}

// store embeds text as entry id of (tenant, user) unless its vector exists, and stores it under
// a key of its own (Key).
func (w *Worker) store(ctx context.Context, tenant, user, id string, kind byte, text string) error {
	model := w.emb.Name()
	has, err := w.vectors.Has(ctx, tenant, user, model, id)
	if err != nil {
		return err
	}
	if has {
		w.cfg.Metrics.EmbedSkipped("stored")
		return nil
	}
	vec, err := w.batch.embed(ctx, text)
	if err != nil {
		return fmt.Errorf("embedding with %s: %w", model, err)
	}
	// The call may have outlasted a forget of the user, or the fact's delete: an entry no longer
	// stored gets no vector (one removed between this read and the write is the forget's second
	// pass's to remove).
	if gone, err := w.gone(ctx, tenant, user, id, kind); err != nil {
		return err
	} else if gone {
		w.cfg.Metrics.EmbedSkipped(kindName(kind))
		return nil
	}
	q, scale := vectors.Quantize(vec)
	if err := w.vectors.Put(ctx, vectors.Vector{Tenant: tenant, User: user, Model: model, ID: id, Kind: kind, Scale: scale, Q: q}); err != nil {
		return err
	}
	w.cfg.Metrics.VectorStored(kindName(kind))
	return nil
}

func kindName(k byte) string {
	switch k {
	case vectors.KindTurn:
		return "turn"
	case vectors.KindSummary:
		return "summary"
	case vectors.KindFact:
		return "fact"
	}
	return "other"
}
