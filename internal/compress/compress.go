// Package compress is the compressor worker: it consumes memory.pressure events (a durable
// consumer any number of compressor processes share), summarises exactly the entries an event
// names, Map-Reduce style (package summarize: groups of 5, one call each, one reduce call when
// there is more than one partial), stores the summary in long-term memory and publishes
// agentmem.summary.v1, which ingest applies to the session.
//
// Exactly once, whatever the redeliveries: the summary id is derived from the turn ids it covers
// and fixed by the pressure event, the long-term write is a KV create on that id, and the event is
// published with that id as its Nats-Msg-Id. A redelivered pressure event whose summary exists
// (a compressor killed after its LLM calls, before its ack) republishes the stored summary and
// makes no call. One compression per session at a time: in one process a per-session lock, across
// processes the previous summary, which the next pressure event names first, must exist before
// the next compression starts (until then the event is retried with backoff).
//
// With the LLM unavailable, events are retried with backoff (ingest keeps applying turns and
// evicting into the pending list meanwhile); after the last delivery the event is dead-lettered
// with the reason. A request the LLM rejects outright (a context too long, a bad key) falls back to
// the extractive summariser so no session stays stuck, and the summary says so.
package compress

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentmem/agentmem/internal/archive"
	"github.com/agentmem/agentmem/internal/deadletter"
	"github.com/agentmem/agentmem/internal/integrity"
	"github.com/agentmem/agentmem/internal/llm"
	"github.com/agentmem/agentmem/internal/longterm"
	"github.com/agentmem/agentmem/internal/metrics"
	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/internal/summarize"
	"github.com/agentmem/agentmem/internal/tracing"
	"github.com/agentmem/agentmem/internal/usage"
	"github.com/agentmem/agentmem/internal/worker"
	"github.com/agentmem/agentmem/pkg/events"
	"github.com/agentmem/agentmem/pkg/memory"
)

// Config configures the compressor.
type Config struct {
	// Topology names the streams, buckets and consumers.
	Topology events.Topology
	// Concurrency bounds the compressions running at once in this process (default 4).
	Concurrency int
	// Summarize configures the map-reduce summariser. Its Counter, when nil, is Tokenizer's.
	Summarize summarize.Config
	// Tokenizer names the token counter the summaries are capped by (memory.NewCounter:
	// "estimate", the default, or "o200k"); pass ingest's, which counts the caps it sets.
	Tokenizer string
	// Source is the CloudEvents source of summary events ("agentmem/compressor").
	Source string
	// Timeout bounds one compression (default 4 minutes).
	Timeout time.Duration
	// Backoff is the redelivery delay after the n-th failed attempt (default worker.Backoff).
	Backoff func(n uint64) time.Duration
	// NoConsumer builds a compressor for direct Compress calls (a replay) without its consumer;
	// Run must not be called then.
	NoConsumer bool
	// Metrics records compressions and their token savings; nil records nothing.
	Metrics *metrics.Metrics
	// Tracer makes a span of every compression (child of the pressure event's traceparent,
	// linked to the traces of the turns it summarises); nil makes none.
	Tracer trace.TracerProvider
}

// Chat is what the compressor needs of an LLM.
type Chat = summarize.Chat

var _ Chat = (*llm.Client)(nil)

// Worker is the compressor.
type Worker struct {
	cfg      Config
	tracer   trace.Tracer
	js       jetstream.JetStream
	store    *longterm.Store
	sessions *session.Store
	usage    *usage.Store
	reader   *archive.Reader
	llm      *summarize.Summarizer
	fallback *summarize.Summarizer
	memo     *memoChat // nil without an LLM
	run      *worker.Worker
	waiters  chan struct{} // handlers waiting for a previous summary
	log      zerolog.Logger

	mu    sync.Mutex
	locks map[string]*sessionLock
}

type sessionLock struct {
	mu   sync.Mutex
	refs int
}

// New returns a compressor using chat (model names it), or the extractive summariser when chat
// is nil. It creates its consumer.
func New(ctx context.Context, cfg Config, js jetstream.JetStream, chat Chat, model string, log zerolog.Logger) (*Worker, error) {
	if cfg.Topology.Prefix == "" {
		cfg.Topology = events.DefaultTopology()
	}
	if err := cfg.Topology.Validate(); err != nil {
		return nil, err
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 4
	}
	if cfg.Source == "" {
		cfg.Source = "agentmem/compressor"
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 4 * time.Minute
	}
	if cfg.Summarize.Counter == nil {
		counter, err := memory.NewCounter(cfg.Tokenizer)
		if err != nil {
			return nil, fmt.Errorf("compress: Tokenizer: %w", err)
		}
		cfg.Summarize.Counter = counter
	}
	store, err := longterm.Open(ctx, js, cfg.Topology)
	if err != nil {
		return nil, err
	}
	us, err := usage.Open(ctx, js, cfg.Topology)
	if err != nil {
		return nil, err
	}
	sessions, err := session.NewStore(ctx, js, cfg.Topology)
	if err != nil {
		return nil, err
	}
	topo := cfg.Topology
	if !cfg.NoConsumer {
		if err := events.EnsureConsumers(ctx, js, topo.PressureStream(), ConsumerConfig(topo)); err != nil {
			return nil, err
		}
	}
	// Corrupt values in the buckets (another owner's, or undecodable) are logged, counted and
	// read as absent.
	rep := integrity.NewReporter(cfg.Metrics, log.With().Str("component", "compressor").Logger())
	store, us, sessions = store.Instrument(rep), us.Instrument(rep), sessions.Instrument(rep)
	w := &Worker{
		cfg: cfg, js: js, store: store, usage: us, sessions: sessions,
		reader:   archive.NewReader(js, topo.TurnsStream()),
		fallback: summarize.New(cfg.Summarize, nil, ""),
		log:      log.With().Str("component", "compressor").Logger(),
		tracer:   tracing.Tracer(cfg.Tracer),
		locks:    map[string]*sessionLock{},
		// One handler is always left for the compressions the waiters wait for.
		waiters: make(chan struct{}, cfg.Concurrency-1),
	}
	w.llm = w.fallback
	if chat != nil {
		kv, err := events.BindBucket(ctx, js, topo.MemoBucket())
		if err != nil {
			return nil, err
		}
		w.memo = &memoChat{next: chat, js: js, bucket: topo.MemoBucket(), kv: kv, metrics: cfg.Metrics, log: w.log}
		w.llm = summarize.New(cfg.Summarize, w.memo, model)
	}
	w.run = worker.New(worker.Config{
		Name: "compressor", Stream: topo.PressureStream(), Consumer: ConsumerName(topo),
		Concurrency: cfg.Concurrency, MaxDeliver: events.WorkerMaxDeliver, Timeout: cfg.Timeout, Backoff: cfg.Backoff,
		Place: func(m worker.Subjected) (string, string) {
			t, s, _ := parsePressureSubject(m.Subject())
			return t, s
		},
		Metrics: cfg.Metrics,
	}, js, deadletter.NewWriter(js, 0).Instrument(cfg.Metrics, "compressor"), worker.Dispatch{
		Kinds:  []string{events.KindPressure},
		Routes: []worker.Route{worker.On(events.TypePressure, w.handle).Traced("agentmem.compress")},
		Tracer: w.tracer,
	}.Handler(), log)
	return w, nil
}

// Run compresses until ctx is cancelled, then drains.
func (w *Worker) Run(ctx context.Context) error { return w.run.Run(ctx) }

func parsePressureSubject(subject string) (tenant, session string, err error) {
	return events.ParseKindSubject(events.KindPressure, subject)
}

func (w *Worker) lock(key string) func() {
	w.mu.Lock()
	l := w.locks[key]
	if l == nil {
		l = &sessionLock{}
		w.locks[key] = l
	}
	l.refs++
	w.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		w.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(w.locks, key)
		}
		w.mu.Unlock()
	}
}

// jsTimeout bounds one JetStream operation of a compression. The handler's context lasts as long
// as the whole compression (LLM calls included); a publish or KV request lost in a leader change
// would otherwise hold the compression, and every later one of its session, that long.
const jsTimeout = 10 * time.Second

// op returns ctx bounded by jsTimeout.
func op(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, jsTimeout)
}

// errNotCommitted: ingest has not committed the session that asked for the compression yet.
var errNotCommitted = errors.New("compress: session not committed by ingest yet")

// errPreviousMissing: the previous summary this event names first does not exist yet.
var errPreviousMissing = errors.New("compress: previous summary not available yet")

// handle compresses the range a pressure event names (the consume layer decoded and validated
// it, and started its span).
func (w *Worker) handle(ctx context.Context, e worker.Event, p events.Pressure) error {
	tenant, sess := e.Address.Tenant, e.Address.Key
	if p.Session != sess {
		return fmt.Errorf("%w: the event names session %q on the subject of session %q", events.ErrInvalid, p.Session, sess)
	}
	trace.SpanFromContext(ctx).SetAttributes(attribute.String("agentmem.summary_id", p.SummaryID),
		attribute.Int("agentmem.pressure", p.Number), attribute.Int("agentmem.entries", len(p.EntryIDs)))
	waiting := false
	defer func() {
		if waiting {
			<-w.waiters
		}
	}()
	for wait := previousPoll; ; wait = min(2*wait, 5*time.Second) {
		unlock := w.lock(tenant + "." + sess)
		sum, stored, err := w.Compress(ctx, tenant, p)
		unlock()
		if errors.Is(err, errPreviousMissing) {
			// The previous compression of the session is still running (here or in another
			// process): wait for its summary while the consume layer keeps this event, rather
			// than spend one of its deliveries per retry. Unlocked, so that a compression of the
			// previous range in this process can go ahead. Up to Concurrency-1 handlers wait: one
			// is always left for the compressions they wait for. A handler with less than half
			// its time left stops waiting; the event is then retried by redelivery.
			if !waiting {
				select {
				case w.waiters <- struct{}{}:
					waiting = true
				default:
					return err
				}
			}
			if dl, ok := ctx.Deadline(); ok && time.Until(dl) < w.cfg.Timeout/2 {
				return err
			}
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return err
			case <-worker.Stopping(ctx):
				t.Stop()
				return err
			case <-t.C:
			}
			continue
		}
		if err != nil || !stored {
			return err
		}
		return w.Publish(ctx, tenant, p, sum)
	}
}

// previousPoll is the first pause between two looks for the previous summary (then doubling to
// 5 s).
const previousPoll = 50 * time.Millisecond

// Compress makes (or finds) the summary a pressure event asks for and stores it in long-term
// memory; it does not publish it. stored is false when the session was forgotten meanwhile.
func (w *Worker) Compress(ctx context.Context, tenant string, p events.Pressure) (longterm.Summary, bool, error) {
	sess := p.Session
	octx, cancel := op(ctx)
	existing, err := w.store.Summary(octx, tenant, p.User, p.SummaryID)
	cancel()
	if err == nil {
		return existing, true, nil
	} else if !errors.Is(err, longterm.ErrNotFound) {
		return longterm.Summary{}, false, err
	}
	entries, err := w.entries(ctx, tenant, sess, p)
	if err != nil {
		return longterm.Summary{}, false, err
	}
	if len(entries) == 0 {
		return longterm.Summary{}, false, worker.Permanent(fmt.Errorf("none of the %d entries the pressure event names exists any more", len(p.EntryIDs)))
	}
	// Everything that can make this attempt fail without the model is checked before the model is
	// asked: a session ingest has not committed yet is retried later, a forgotten one dropped.
	if err := w.committed(ctx, tenant, p); err != nil {
		return longterm.Summary{}, false, err
	}
	ctx, memo := withMemo(ctx, tenant, sess, p.SummaryID)
	start := time.Now()
	res, err := w.llm.Summarize(ctx, entries, p.SummaryTokens)
	if res.Usage.Calls > 0 {
		octx, cancel := op(ctx)
		uerr := w.usage.Add(octx, tenant, sess, res.Usage)
		cancel()
		if uerr != nil {
			w.log.Warn().Err(uerr).Msg("recording LLM usage")
		}
	}
	if errors.Is(err, llm.ErrRejected) {
		w.log.Error().Err(err).Str("session", sess).Msg("the LLM rejected the compression; using the extractive summariser")
		reason := err.Error()
		if res, err = w.fallback.Summarize(ctx, entries, p.SummaryTokens); err == nil {
			res.Summarizer = "extractive (llm rejected: " + reason + ")"
		}
	}
	mode := "extractive"
	if w.llm != w.fallback && (err != nil || !strings.HasPrefix(res.Summarizer, "extractive")) {
		mode = "llm"
	}
	if err != nil {
		w.cfg.Metrics.Compression(mode, 0, 0, time.Since(start), err)
		return longterm.Summary{}, false, fmt.Errorf("summarising %d entries: %w", len(entries), err)
	}
	newest := time.Time{}
	for _, e := range entries {
		if e.Timestamp.After(newest) {
			newest = e.Timestamp
		}
	}
	sum := longterm.Summary{
		ID: p.SummaryID, Tenant: tenant, User: p.User, Session: sess, Content: res.Content,
		Tokens: w.cfg.Summarize.Counter.Count(res.Content), Timestamp: newest.UTC(), Replaces: p.EntryIDs, Provenance: p.Provenance,
		Summarizer: res.Summarizer,
		Usage:      events.Usage{Calls: res.Usage.Calls, InputTokens: res.Usage.InputTokens, OutputTokens: res.Usage.OutputTokens},
		Metadata: map[string]any{
			"language": res.Language, "pressure": p.Number, "map_calls": res.MapCalls, "reduce_calls": res.ReduceCalls,
			"first_seq": p.FirstSeq, "last_seq": p.LastSeq, "tokens_before": w.tokens(entries),
		},
	}
	// A session forgotten while the compression ran keeps nothing of it. (Ingest publishes a
	// pressure event before it commits the batch that named the range, so a session without a
	// header yet is not forgotten: the event is retried.)
	octx, cancel = op(ctx)
	h, _, err := w.sessions.Header(octx, session.Key{Tenant: tenant, Session: sess})
	cancel()
	switch {
	case errors.Is(err, session.ErrNotFound):
		return longterm.Summary{}, false, fmt.Errorf("%w: %s/%s", errNotCommitted, tenant, sess)
	case err != nil:
		return longterm.Summary{}, false, err
	case h.User != p.User:
		w.log.Info().Str("tenant", tenant).Str("session", sess).Msg("session forgotten during compression; summary dropped")
		return longterm.Summary{}, false, nil
	}
	octx, cancel = op(ctx)
	_, err = w.store.PutSummary(octx, sum)
	cancel()
	if err != nil {
		return longterm.Summary{}, false, err
	}
	if w.memo != nil && mode == "llm" {
		w.cfg.Metrics.SummaryCalls(int(memo.made.Load() + memo.reused.Load()))
		octx, cancel := op(ctx)
		err := w.memo.forget(octx, memo)
		cancel()
		if err != nil {
			w.log.Warn().Err(err).Msg("the memo bucket's TTL removes it instead")
		}
	}
	w.cfg.Metrics.Compression(mode, w.tokens(entries), sum.Tokens, time.Since(start), nil)
	w.log.Info().Str("tenant", tenant).Str("session", sess).Int("pressure", p.Number).Int("entries", len(entries)).
		Int("tokens_before", w.tokens(entries)).Int("tokens_after", sum.Tokens).Int("llm_calls", res.Usage.Calls).
		Dur("took", time.Since(start)).Msg("compressed")
	return sum, true, nil
}

// committed fails with errNotCommitted while ingest has not committed the session that asked
// for the compression; a session forgotten meanwhile is for Compress's check after the model.
func (w *Worker) committed(ctx context.Context, tenant string, p events.Pressure) error {
	ctx, cancel := op(ctx)
	defer cancel()
	_, _, err := w.sessions.Header(ctx, session.Key{Tenant: tenant, Session: p.Session})
	if errors.Is(err, session.ErrNotFound) {
		return fmt.Errorf("%w: %s/%s", errNotCommitted, tenant, p.Session)
	}
	return err
}

// tokens counts the tokens of es with the compressor's counter (Config.Tokenizer).
func (w *Worker) tokens(es []memory.Entry) int {
	n := 0
	for _, e := range es {
		n += w.cfg.Summarize.Counter.Count(e.Content)
	}
	return n
}

// entries reads the named entries: the previous summary from long-term memory, the turns from
// the turns stream (their text and roles), in the order the event names them.
func (w *Worker) entries(ctx context.Context, tenant, sess string, p events.Pressure) ([]memory.Entry, error) {
	byID := map[string]memory.Entry{}
	want := map[string]bool{}
	for _, id := range p.EntryIDs {
		if strings.HasPrefix(id, "sum_") {
			octx, cancel := op(ctx)
			s, err := w.store.Summary(octx, tenant, p.User, id)
			cancel()
			if errors.Is(err, longterm.ErrNotFound) {
				return nil, fmt.Errorf("%w: %s", errPreviousMissing, id)
			}
			if err != nil {
				return nil, err
			}
			byID[id] = memory.Entry{ID: id, Type: memory.Summary, Content: s.Content, Timestamp: s.Timestamp, Provenance: s.Provenance}
			continue
		}
		want[id] = true
	}
	if len(want) > 0 && p.FirstSeq > 0 {
		sctx, cancel := context.WithTimeout(ctx, 3*jsTimeout)
		defer cancel()
		err := w.reader.Scan(sctx, events.SessionFilter(tenant, sess), p.FirstSeq, p.LastSeq, func(m *jetstream.RawStreamMsg) error {
			// Agentmem's binary mode names the id in a header: other turns are passed over without
			// decoding. Structured mode (no ce-id header) and percent-encoded ids are decoded first.
			if id := m.Header.Get("ce-id"); id != "" && !strings.Contains(id, "%") && !want[id] {
				return nil
			}
			st, err := events.ReadStoredTurn(m)
			if err != nil || !want[st.ID] {
				return nil
			}
			// The summary derives from every turn it replaces: link to each turn's trace.
			if sc := trace.SpanContextFromContext(events.TraceContext(context.Background(), st.Event)); sc.IsValid() {
				trace.SpanFromContext(ctx).AddLink(trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{attribute.String("agentmem.turn_id", st.ID)}})
			}
			t := st.Turn
			md := map[string]any{}
			if t.Tool != "" {
				md["tool"] = t.Tool
			}
			byID[st.ID] = memory.Entry{ID: st.ID, Type: memory.TypeForRole(t.Role), Role: t.Role, Content: t.Content,
				Timestamp: st.Time, Seq: st.Seq, Metadata: md}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	out := make([]memory.Entry, 0, len(byID))
	for _, id := range p.EntryIDs {
		if e, ok := byID[id]; ok {
			out = append(out, e)
		}
	}
	return slices.Clip(out), nil
}

// Publish publishes the summary event of s, made for pressure event p (a consumer's handler, or a
// replay that publishes what the live pipeline does: package recovery's rebuild); its Nats-Msg-Id
// is the summary id, so a republish after a redelivery is stored once. It fails when the event
// cannot be built or is not stored.
func (w *Worker) Publish(ctx context.Context, tenant string, p events.Pressure, s longterm.Summary) error {
	lang, _ := s.Metadata["language"].(string)
	body := events.Summary{
		Session: p.Session, User: p.User, SummaryID: s.ID, Content: s.Content, Replaces: s.Replaces,
		Provenance: s.Provenance, Timestamp: s.Timestamp, Summarizer: s.Summarizer, Usage: s.Usage,
		Pressure: p.Number, FirstSeq: p.FirstSeq, LastSeq: p.LastSeq, Language: lang,
	}
	msg, err := events.NewMsg(ctx, tenant, p.Session, s.ID, events.TypeSummary, w.cfg.Source, s.Timestamp, body)
	if err != nil {
		return err
	}
	ctx, cancel := op(ctx)
	defer cancel()
	if _, err := w.js.PublishMsg(ctx, msg); err != nil {
		return fmt.Errorf("publishing summary %s: %w", s.ID, err)
	}
	return nil
}
