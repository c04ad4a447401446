// Package extract is the fact extractor: it turns conversations into durable facts in the
// long-term store. It is triggered by agentmem.session.ended.v1 (read from the turns stream) and
// by agentmem.summary.v1 (facts in turns being compressed away must not wait for the session to
// end); both are durable consumers any number of extractor processes share.
//
// For each trigger it reads the session's turns that were not extracted yet (up to the trigger),
// keeps only those ingest applied (a turn ingest rejected, e.g. one naming another user, never
// becomes a fact), and extracts with the LLM when one is configured (one call, a JSON list of
// facts in the conversation's language, and the entities and relations of the user's graph in the
// same answer) or with the offline rules (package fact). Facts are
// stored through longterm.Store.AddFact, whose writes decide atomically (dedup by a
// content-derived id, earliest timestamp, provenance union, supersession by key), and every
// change is published as agentmem.fact.v1 on memory.facts.<tenant>.<user>. The graph is stored
// after the facts by graph.Write (entities, aliases, and edges kept as facts are).
//
// The extractor process also serves forget (package forget) on its micro service,
// agentmem-extractor.
package extract

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentmem/agentmem/internal/archive"
	"github.com/agentmem/agentmem/internal/deadletter"
	"github.com/agentmem/agentmem/internal/fact"
	"github.com/agentmem/agentmem/internal/forget"
	"github.com/agentmem/agentmem/internal/graph"
	"github.com/agentmem/agentmem/internal/integrity"
	"github.com/agentmem/agentmem/internal/llm"
	"github.com/agentmem/agentmem/internal/longterm"
	"github.com/agentmem/agentmem/internal/metrics"
	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/internal/stage"
	"github.com/agentmem/agentmem/internal/tracing"
	"github.com/agentmem/agentmem/internal/usage"
	"github.com/agentmem/agentmem/internal/vectors"
	"github.com/agentmem/agentmem/internal/worker"
	"github.com/agentmem/agentmem/pkg/events"
	"github.com/agentmem/agentmem/pkg/memory"
)

// Chat is what the extractor needs of an LLM.
type Chat interface {
	Complete(ctx context.Context, req llm.Request) (llm.Response, error)
}

var _ Chat = (*llm.Client)(nil)

// Config configures the extractor.
type Config struct {
	// Topology names the streams, buckets and consumers.
	Topology events.Topology
	// Concurrency bounds the triggers handled at once per consumer (default 16).
	Concurrency int
	// MinConfidence drops candidates below it (default 0.5).
	MinConfidence float64
	// Source is the CloudEvents source of fact events ("agentmem/extractor").
	Source string
	// Tokenizer counts a fact's tokens ("estimate").
	Tokenizer string
	// Backoff is the redelivery delay after the n-th failed attempt (default worker.Backoff).
	Backoff func(n uint64) time.Duration
	// NoConsumers builds an extractor for direct Extract calls (a replay) without its consumers
	// and without publishing fact events (unless Events); Run must not be called then.
	NoConsumers bool
	// Events makes an extractor built with NoConsumers publish its fact events all the same: a
	// replay into the live buckets that stands for the live pipeline (package recovery's
	// rebuild).
	Events bool
	// Metrics records extraction runs and fact changes; nil records nothing.
	Metrics *metrics.Metrics
	// Tracer makes a span of every extraction (child of the trigger's traceparent, linked to
	// the traces of the turns it reads); nil makes none.
	Tracer trace.TracerProvider
	// ForgetWaits are the consumers that may still write a user's data after a forget began
	// (stage.ForgetWaits): a forget waits until each has acknowledged what its stream held then.
	ForgetWaits []stage.Consumer
	// ForgetParts are forgotten after the stores' parts: what else of a user the process keeps
	// (the daemon's: its retriever's stored view files).
	ForgetParts []forget.Part
	// Sync, when not nil, makes every write acknowledged so far durable (stage.Shared.Sync): a
	// user's forget calls it before it answers.
	Sync func(ctx context.Context) error
}

// ApplyEdit makes edit e of a user's facts again (a replay of its record in the turns stream;
// the forget service made it live): forget.Service.ApplyEdit, publishing fact events as the
// extractor does. It fails as that does.
func (w *Worker) ApplyEdit(ctx context.Context, tenant string, e events.Edit) error {
	_, _, err := w.forget.ApplyEdit(ctx, tenant, e)
	return err
}

// errNotApplied: ingest has not decided the session up to the trigger yet.
var errNotApplied = errors.New("extract: ingest has not applied the session up to the trigger yet")

// Worker is the extractor.
type Worker struct {
	cfg      Config
	js       jetstream.JetStream
	store    *longterm.Store
	sessions *session.Store
	usage    *usage.Store
	forget   *forget.Service
	reader   *archive.Reader
	chat     Chat
	model    string
	counter  memory.Counter
	ends     *worker.Worker
	sums     *worker.Worker
	tracer   trace.Tracer
	log      zerolog.Logger
}

// New returns an extractor using chat (model names it), or the offline rules when chat is nil.
// It creates its consumers.
func New(ctx context.Context, cfg Config, js jetstream.JetStream, chat Chat, model string, log zerolog.Logger) (*Worker, error) {
	if cfg.Topology.Prefix == "" {
		cfg.Topology = events.DefaultTopology()
	}
	if err := cfg.Topology.Validate(); err != nil {
		return nil, err
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 16 // extraction waits mostly on JetStream round trips
	}
	if cfg.MinConfidence == 0 {
		cfg.MinConfidence = 0.5
	}
	if cfg.Source == "" {
		cfg.Source = "agentmem/extractor"
	}
	counter, err := memory.NewCounter(cfg.Tokenizer)
	if err != nil {
		return nil, err
	}
	topo := cfg.Topology
	store, err := longterm.Open(ctx, js, topo)
	if err != nil {
		return nil, err
	}
	sessions, err := session.NewStore(ctx, js, topo)
	if err != nil {
		return nil, err
	}
	us, err := usage.Open(ctx, js, topo)
	if err != nil {
		return nil, err
	}
	vs, err := vectors.Open(ctx, js, topo)
	if err != nil {
		return nil, err
	}
	if !cfg.NoConsumers {
		for _, c := range Consumers(topo) {
			if err := events.EnsureConsumers(ctx, js, c.Stream, c.Config); err != nil {
				return nil, err
			}
		}
	}
	// Corrupt values in the buckets (another owner's, or undecodable) are logged, counted and
	// read as absent.
	rep := integrity.NewReporter(cfg.Metrics, log.With().Str("component", "extractor").Logger())
	store, sessions, us, vs = store.Instrument(rep), sessions.Instrument(rep), us.Instrument(rep), vs.Instrument(rep)
	// The extractor serves forget (Run). It waits for the consumers of ForgetWaits (the
	// embedding stage's): what they have in flight when a forget begins is stored after its
	// first pass.
	var waits []forget.Consumer
	for _, c := range cfg.ForgetWaits {
		waits = append(waits, forget.Consumer{Stream: c.Stream, Name: c.Name()})
	}
	fs, err := forget.New(forget.Config{Topology: topo, Source: cfg.Source, Tokenizer: cfg.Tokenizer, Waits: waits, Metrics: cfg.Metrics,
		NoEvents: cfg.NoConsumers && !cfg.Events, Sync: cfg.Sync, Parts: cfg.ForgetParts},
		js, forget.Stores{Long: store, Sessions: sessions, Usage: us, Vectors: vs}, log.With().Str("component", "forget").Logger())
	if err != nil {
		return nil, err
	}
	w := &Worker{
		cfg: cfg, js: js, store: store, sessions: sessions, usage: us, forget: fs, chat: chat, model: model, counter: counter,
		reader: archive.NewReader(js, topo.TurnsStream()), tracer: tracing.Tracer(cfg.Tracer),
		log: log.With().Str("component", "extractor").Logger(),
	}
	dlq := deadletter.NewWriter(js, 0).Instrument(cfg.Metrics, "extractor")
	place := func(m worker.Subjected) (string, string) {
		k, _ := sessionOf(m.Subject())
		return k.Tenant, k.Session
	}
	w.ends = worker.New(worker.Config{
		Name: "extractor-ends", Stream: topo.TurnsStream(), Consumer: EndConsumerName(topo),
		Concurrency: cfg.Concurrency, MaxDeliver: events.WorkerMaxDeliver, Place: place, Backoff: cfg.Backoff,
		Metrics: cfg.Metrics,
	}, js, dlq, worker.Dispatch{
		// Ingest announces each session end it applied (events.TypeEndApplied): the extractors
		// read those, not every turn of the stream. They are agentmem's own, so one that does not
		// decode is dead-lettered.
		Kinds:  []string{events.KindEnded},
		Routes: []worker.Route{worker.On(events.TypeEndApplied, w.handleEnd).Traced(spanName)},
		Tracer: w.tracer,
	}.Handler(), log)
	w.sums = worker.New(worker.Config{
		Name: "extractor-summaries", Stream: topo.SummaryStream(), Consumer: SummaryConsumerName(topo),
		Concurrency: cfg.Concurrency, MaxDeliver: events.WorkerMaxDeliver, Place: place, Backoff: cfg.Backoff,
		Metrics: cfg.Metrics,
	}, js, dlq, worker.Dispatch{
		Kinds:  []string{events.KindSummaries},
		Routes: []worker.Route{worker.On(events.TypeSummary, w.handleSummary).Traced(spanName)},
		Tracer: w.tracer,
		// A summary that breaks the contract is ingest's to dead-letter.
		SkipInvalid: true,
	}.Handler(), log)
	return w, nil
}

// Run serves the forget endpoint and extracts until ctx is cancelled, then stops the service
// and drains both consumers.
func (w *Worker) Run(ctx context.Context) error {
	svc, err := w.startService(ctx, w.js.Conn())
	if err != nil {
		return err
	}
	errs := make(chan error, 2)
	go func() { errs <- w.ends.Run(ctx) }()
	go func() { errs <- w.sums.Run(ctx) }()
	err = errors.Join(<-errs, <-errs)
	return errors.Join(err, svc.Stop())
}

// ServiceName is the micro service the extractor registers; its endpoint "forget" (package
// forget) answers on memory.forget.<tenant>.
const ServiceName = "agentmem-extractor"

// startService registers the agentmem-extractor micro service with the forget endpoint.
func (w *Worker) startService(ctx context.Context, nc *nats.Conn) (micro.Service, error) {
	svc, err := micro.AddService(nc, micro.Config{
		Name: ServiceName, Version: "0.1.0",
		Description: "agentmem fact extraction and forgetting: memory.forget.<tenant> removes everything of a user",
	})
	if err != nil {
		return nil, fmt.Errorf("registering %s: %w", ServiceName, err)
	}
	if err := w.forget.AddEndpoint(ctx, svc); err != nil {
		_ = svc.Stop()
		return nil, err
	}
	if err := nc.Flush(); err != nil {
		_ = svc.Stop()
		return nil, err
	}
	return svc, nil
}

// sessionOf reads "<p>.memory.<kind>.<tenant>.<session>".
func sessionOf(subject string) (session.Key, error) {
	a, err := events.ParseEventSubject(subject)
	if err == nil && a.Kind == events.KindFacts {
		err = fmt.Errorf("%w: subject %q names a user, not a session", events.ErrInvalid, subject)
	}
	if err != nil {
		return session.Key{}, err
	}
	return session.Key{Tenant: a.Tenant, Session: a.Key}, nil
}

// handleEnd extracts from a session up to the end ingest applied.
func (w *Worker) handleEnd(ctx context.Context, e worker.Event, end events.EndApplied) error {
	k := session.Key{Tenant: e.Address.Tenant, Session: e.Address.Key}
	return w.extract(ctx, k, end.Seq, e.Meta.NumDelivered > 1, "session end")
}

// handleSummary extracts from the turns a summary covers.
func (w *Worker) handleSummary(ctx context.Context, e worker.Event, sum events.Summary) error {
	if sum.LastSeq == 0 {
		return nil // a summary without its range: the session end will extract
	}
	k := session.Key{Tenant: e.Address.Tenant, Session: e.Address.Key}
	return w.extract(ctx, k, sum.LastSeq, e.Meta.NumDelivered > 1, "summary")
}

// spanName names the span of an extraction: the consumers' (a Trace middleware of their
// Dispatch, child of the trigger's trace) and a replay's.
const spanName = "agentmem.extract"

// Extract extracts the facts of a session's applied turns up to stream sequence upTo that were
// not extracted yet (a replay's direct call; the consumers do the same on their triggers).
func (w *Worker) Extract(ctx context.Context, k session.Key, upTo uint64) (err error) {
	ctx, span := w.tracer.Start(ctx, spanName, trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(attribute.String("agentmem.tenant", k.Tenant), attribute.String("agentmem.session", k.Session)))
	defer func() { tracing.End(span, err) }()
	return w.extract(ctx, k, upTo, false, "replay")
}

// extract extracts the facts of the session's applied turns up to seq that were not extracted
// yet, in the extraction span of ctx (which it gives the trigger, the range and what it read).
func (w *Worker) extract(ctx context.Context, k session.Key, upTo uint64, redelivered bool, trigger string) (err error) {
	span := trace.SpanFromContext(ctx)
	span.SetAttributes(attribute.String("agentmem.trigger", trigger), attribute.Int64("agentmem.up_to_seq", int64(upTo)))
	if err := w.awaitIngest(ctx, k, upTo); err != nil {
		return err
	}
	st, err := w.sessions.Load(ctx, k, 0)
	if err != nil {
		return err
	}
	if st.Revision() == 0 || st.Header.User == "" {
		if st.Header.LastSeq >= upTo {
			return nil // nothing of this session was applied (or it was forgotten)
		}
		return fmt.Errorf("%w: %s at %d", errNotApplied, k, upTo)
	}
	if st.Header.LastSeq < upTo {
		return fmt.Errorf("%w: %s decided up to %d, trigger at %d", errNotApplied, k, st.Header.LastSeq, upTo)
	}
	user := st.Header.User
	from := uint64(1)
	ref, err := w.store.SessionRef(ctx, k.Tenant, user, k.Session)
	if err == nil {
		from = ref.ExtractedSeq + 1
	} else if !errors.Is(err, longterm.ErrNotFound) {
		return err
	}
	if from > upTo {
		return nil
	}
	subject := events.SessionFilter(k.Tenant, k.Session)
	if st.Header.Partition >= 0 {
		subject = events.PartitionedSubject(st.Header.Partition, k.Tenant, k.Session)
	}
	var turns []fact.Turn
	var first, last time.Time
	err = w.reader.Scan(ctx, subject, from, upTo, func(m *jetstream.RawStreamMsg) error {
		stored, err := events.ReadStoredTurn(m)
		if err != nil {
			return nil
		}
		id, t, at := stored.ID, stored.Turn, stored.Time
		if !st.AppliedAt(id, m.Sequence) {
			return nil // rejected by ingest, or a late copy
		}
		if t.Role != events.RoleUser && t.Role != events.RoleAssistant {
			return nil
		}
		if first.IsZero() || at.Before(first) {
			first = at
		}
		if at.After(last) {
			last = at
		}
		if sc, ok := events.SpanContextOf(m.Header, m.Data); ok {
			span.AddLink(trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{attribute.String("agentmem.turn_id", id)}})
		}
		turns = append(turns, fact.Turn{ID: id, Role: t.Role, Content: t.Content, Time: at})
		return nil
	})
	if err != nil {
		return err
	}
	found, extractor, err := w.candidates(ctx, k, turns)
	cands := found.Facts
	mode := "rules"
	if w.chat != nil {
		mode = "llm"
	}
	w.cfg.Metrics.Extraction(mode, err)
	if err != nil {
		return err
	}
	text := make(map[string]string, len(turns))
	stated := make(map[string]time.Time, len(turns))
	for _, t := range turns {
		text[t.ID] = t.Content
		stated[t.ID] = t.Time
	}
	stored := 0
	for _, c := range cands {
		if c.Confidence < w.cfg.MinConfidence {
			continue
		}
		f := longterm.Fact{
			ID: fact.ID(k.Tenant, user, c.Content), Tenant: k.Tenant, User: user, Content: c.Content,
			Category: c.Category, Key: c.Key, Tokens: w.counter.Count(c.Content), ValidFrom: c.Time,
			Provenance: c.Provenance, Sessions: []string{k.Session}, Confidence: c.Confidence, Extractor: extractor,
			Metadata: map[string]any{"source_text": sourceText(c.Provenance, text)}, StatedAt: stated,
		}
		ch, err := w.store.AddFact(ctx, f)
		if err != nil {
			return err
		}
		w.countChange(ch)
		if err := w.announce(ctx, k.Tenant, user, ch, redelivered); err != nil {
			return err
		}
		stored++
	}
	// The graph after the facts: its writes, like theirs, are merges that a redelivery or a
	// racing extractor repeats to the same result, in whatever order sessions are extracted.
	// (So an entity's provenance is what the extraction of each session found by itself: a
	// later session's "Anna visited" is Anna's only when that session names her as the rules
	// or the LLM see it; keyword search finds such turns anyway.)
	written, err := graph.Write(ctx, w.store, k.Tenant, user, extractor, found.Graph, stated)
	if err != nil {
		return err
	}
	if !first.IsZero() {
		if err := w.store.TouchSession(ctx, k.Tenant, user, k.Session, first, last); err != nil {
			return err
		}
	}
	if err := w.store.MarkExtracted(ctx, k.Tenant, user, k.Session, upTo); err != nil {
		return err
	}
	span.SetAttributes(attribute.Int("agentmem.turns", len(turns)), attribute.Int("agentmem.facts", stored),
		attribute.Int("agentmem.entities", len(found.Graph.Entities)), attribute.Int("agentmem.relations", len(found.Graph.Relations)),
		attribute.String("agentmem.extractor", extractor))
	w.log.Debug().Str("tenant", k.Tenant).Str("session", k.Session).Str("trigger", trigger).Int("turns", len(turns)).
		Int("facts", stored).Int("new_entities", written.Entities).Int("new_edges", written.Edges).Str("extractor", extractor).Msg("extracted")
	return nil
}

// sourceTextLimit bounds the words of the stating turns kept with a fact.
const sourceTextLimit = 600

// sourceText is what the turns behind a fact said, kept with the fact so that a search in the
// user's words finds it even when the fact is phrased differently ("I love writing Go, it's my
// favourite language" behind "The user loves writing Go").
func sourceText(provenance []string, text map[string]string) string {
	var b strings.Builder
	for _, id := range provenance {
		t := strings.Join(strings.Fields(text[id]), " ")
		if t == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(" | ")
		}
		b.WriteString(t)
		if b.Len() >= sourceTextLimit {
			break
		}
	}
	r := []rune(b.String())
	if len(r) > sourceTextLimit {
		r = r[:sourceTextLimit]
	}
	return string(r)
}

// ingestWait bounds how long a trigger waits for ingest to apply the session up to it before it
// is retried later (a trigger usually arrives while ingest is still applying its session).
const ingestWait = 20 * time.Second

// awaitIngest waits until ingest decided the session up to seq, watching its header.
func (w *Worker) awaitIngest(ctx context.Context, k session.Key, seq uint64) error {
	if h, _, err := w.sessions.Header(ctx, k); err == nil && h.LastSeq >= seq {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, ingestWait)
	defer cancel()
	watcher, err := w.sessions.WatchHeader(wctx, k)
	if err != nil {
		return err
	}
	defer func() { _ = watcher.Stop() }()
	// Check again: the header may have moved before the watch started.
	if h, _, err := w.sessions.Header(ctx, k); err == nil && h.LastSeq >= seq {
		return nil
	}
	for {
		select {
		case e, ok := <-watcher.Updates():
			if !ok {
				return fmt.Errorf("%w: %s at %d", errNotApplied, k, seq)
			}
			if e == nil {
				continue
			}
			if h, _, err := w.sessions.Header(ctx, k); err == nil && h.LastSeq >= seq {
				return nil
			}
		case <-wctx.Done():
			return fmt.Errorf("%w: %s at %d", errNotApplied, k, seq)
		case <-worker.Stopping(ctx):
			return fmt.Errorf("%w: %s at %d (stopping)", errNotApplied, k, seq)
		}
	}
}

// candidates runs the LLM extractor, or the rules offline: the facts and the graph, from one
// LLM call.
func (w *Worker) candidates(ctx context.Context, k session.Key, turns []fact.Turn) (fact.Extraction, string, error) {
	if len(turns) == 0 {
		return fact.Extraction{}, "", nil
	}
	rules := func() fact.Extraction {
		cands := fact.Rules(turns)
		return fact.Extraction{Facts: cands, Graph: fact.GraphRules(turns, cands)}
	}
	if w.chat == nil {
		return rules(), "rules", nil
	}
	resp, err := w.chat.Complete(ctx, fact.Prompt(turns))
	if resp.Usage.Calls > 0 {
		if uerr := w.usage.Add(ctx, k.Tenant, k.Session, resp.Usage); uerr != nil {
			w.log.Warn().Err(uerr).Msg("recording LLM usage")
		}
	}
	if errors.Is(err, llm.ErrRejected) {
		w.log.Error().Err(err).Str("session", k.Session).Msg("the LLM rejected the extraction; using the rules")
		return rules(), "rules (llm rejected)", nil
	}
	if err != nil {
		return fact.Extraction{}, "", err
	}
	x, err := fact.ParseAll(resp.Content, turns)
	if err != nil {
		// A malformed answer is retried (the worker's backoff), then dead-lettered; nothing partial is stored.
		return fact.Extraction{}, "", err
	}
	return x, "llm:" + w.model, nil
}

// countChange counts one stored fact change in the metrics.
func (w *Worker) countChange(ch longterm.FactChange) {
	m := w.cfg.Metrics
	switch {
	case ch.Added && ch.SupersededBy != "":
		m.Facts("added", 1)
		m.Facts("superseded", 1) // older than the live fact of its key: straight into the history
	case ch.Added:
		m.Facts("added", 1)
	default:
		m.Facts("reinforced", 1)
	}
	m.Facts("superseded", len(ch.Superseded))
	for _, again := range ch.Restated {
		w.countChange(again)
	}
}

// announce publishes the fact events of one change. A first delivery publishes what changed; a
// redelivery republishes everything (the ids are deterministic, so JetStream stores each once),
// in case the previous attempt stored the change and died before publishing.
func (w *Worker) announce(ctx context.Context, tenant, user string, ch longterm.FactChange, redelivered bool) error {
	if ch.Added || redelivered {
		op, id := events.FactAdded, "fact-added-"+ch.Fact.ID
		if ch.SupersededBy != "" {
			op, id = events.FactSuperseded, "fact-superseded-"+ch.Fact.ID+"-"+ch.SupersededBy
		}
		if err := w.publishFact(ctx, tenant, user, id, op, ch.Fact); err != nil {
			return err
		}
	}
	for _, old := range ch.Superseded {
		if err := w.publishFact(ctx, tenant, user, "fact-superseded-"+old.ID+"-"+old.SupersededBy, events.FactSuperseded, old); err != nil {
			return err
		}
	}
	for _, again := range ch.Restated {
		if err := w.announce(ctx, tenant, user, again, redelivered); err != nil {
			return err
		}
	}
	return nil
}

func (w *Worker) publishFact(ctx context.Context, tenant, user, id, op string, f longterm.Fact) error {
	if w.cfg.NoConsumers && !w.cfg.Events {
		return nil // a replay publishes no events
	}
	msg, err := events.NewMsg(ctx, tenant, user, id, events.TypeFact, w.cfg.Source, f.ValidFrom, events.FactEvent{Op: op, Fact: f.Event()})
	if err != nil {
		return err
	}
	// A publish lost in a leader change fails after 10 s rather than at the handler's timeout.
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := w.js.PublishMsg(pctx, msg); err != nil {
		return fmt.Errorf("publishing fact event %s: %w", id, err)
	}
	return nil
}
