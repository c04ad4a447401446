package retrieve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentmem/agentmem/internal/archive"
	"github.com/agentmem/agentmem/internal/deadletter"
	"github.com/agentmem/agentmem/internal/integrity"
	"github.com/agentmem/agentmem/internal/longterm"
	"github.com/agentmem/agentmem/internal/rank"
	"github.com/agentmem/agentmem/internal/reply"
	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/internal/tracing"
	"github.com/agentmem/agentmem/internal/vectors"
	"github.com/agentmem/agentmem/internal/when"
	"github.com/agentmem/agentmem/pkg/events"
	"github.com/agentmem/agentmem/pkg/memory"
)

// Error is a failed request: a NATS service error code and what is wrong.
type Error struct {
	Code    int
	Field   string
	Message string
}

// readError is the error of a request whose reading of JetStream failed: 503 when JetStream
// did not answer for a passing reason (no responders or a timeout, as while a stream's leader is
// elected: agentmem's clients ask again), 500 otherwise.
func readError(what string, err error) *Error {
	var apiErr *jetstream.APIError
	if errors.Is(err, nats.ErrNoResponders) || errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrConnectionReconnecting) ||
		(errors.As(err, &apiErr) && apiErr.Code == 503) {
		return &Error{Code: 503, Message: what + ": JetStream did not answer (try again): " + err.Error()}
	}
	return &Error{Code: 500, Message: what + ": " + err.Error()}
}

func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%d %s: %s", e.Code, e.Field, e.Message)
	}
	return fmt.Sprintf("%d %s", e.Code, e.Message)
}

// Service is the retriever.
type Service struct {
	cfg     Config
	nc      *nats.Conn
	store   *session.Store
	reader  *archive.Reader
	dlq     *deadletter.Reader
	views   *viewCache
	users   *userCache
	long    *longterm.Store
	vectors *vectors.Store
	rep     *integrity.Reporter
	// ready is set when the query embedder's model is the one to answer with: always without a
	// PreviousEmbedder, else once the vector bucket marks the model complete.
	ready   atomic.Bool
	js      jetstream.JetStream
	counter memory.Counter
	log     zerolog.Logger
	sem     chan struct{}
	svc     micro.Service
	tracer  trace.Tracer
	// forgets drops the views of forgotten users; nil until Start.
	forgets *forgetFeed
	// stored reads and writes users' stored views (snapshot.go); nil with Config.NoStoredViews
	// or without the view bucket.
	stored *viewStore
	// warm stores the views of users whose sessions went quiet (warm.go); nil without stored
	// views or with a negative Config.WarmAfter.
	warm *warmer
}

// New returns a retriever. The topology must exist (events.Topology.Ensure).
func New(ctx context.Context, cfg Config, nc *nats.Conn, js jetstream.JetStream, log zerolog.Logger) (*Service, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	counter, err := memory.NewCounter(cfg.Tokenizer)
	if err != nil {
		return nil, err
	}
	store, err := session.NewStore(ctx, js, cfg.Topology)
	if err != nil {
		return nil, err
	}
	long, err := longterm.Open(ctx, js, cfg.Topology)
	if err != nil {
		return nil, err
	}
	vs, err := vectors.Open(ctx, js, cfg.Topology)
	if err != nil {
		return nil, err
	}
	s := &Service{
		vectors: vs,
		users:   newUserCache(cfg.MaxUserBytes, cfg.Rank).underLimit(cfg.MemoryLimit, readHeap),
		long:    long,
		js:      js,
		cfg:     cfg,
		nc:      nc,
		store:   store,
		reader:  archive.NewReader(js, cfg.Topology.TurnsStream()),
		dlq:     deadletter.NewReader(js, cfg.Topology),
		views:   newViewCache(cfg.CachedSessions, cfg.Rank),
		counter: counter,
		log:     log.With().Str("component", "retriever").Logger(),
		sem:     make(chan struct{}, cfg.Concurrency),
		tracer:  tracing.Tracer(cfg.Tracer),
	}
	if !cfg.NoStoredViews {
		// A topology made before the view bucket existed has none until a process ensures it:
		// cold loads then read the stream only.
		var back viewBackend
		if cfg.ViewDir != "" {
			files, err := openViewFiles(cfg.ViewDir)
			if err != nil {
				return nil, err
			}
			back = files
		} else if kv, err := js.KeyValue(ctx, cfg.Topology.ViewBucket()); err == nil {
			back = viewBucket{kv}
		}
		if back != nil {
			s.stored = newViewStore(back, int(nc.MaxPayload())-4096, s.log, cfg.Metrics)
			if cfg.WarmAfter >= 0 {
				s.warm = newWarmer(cfg.WarmAfter)
			}
		}
	}
	s.reportFootprint(cfg.Metrics.Footprint())
	return s, nil
}

// Start registers the micro service; requests are answered from when it returns until Run's
// context is cancelled. ctx bounds the requests in flight.
func (s *Service) Start(ctx context.Context) error {
	if err := s.watch(ctx, s.js); err != nil {
		return fmt.Errorf("watching memory changes: %w", err)
	}
	// A forgotten user's cached memory goes before the next request reads it (forget.go).
	forget := func(k userKey) {
		s.stored.forget(k) // before the view goes: a cold load that follows reads no stored view
		s.users.drop(k)
	}
	// A lost announcement may have named anyone: every cached view goes, and no view whose load
	// began before it is stored.
	forgetAll := func() {
		s.stored.forgotSomeone()
		s.users.dropAll()
	}
	forgets, err := subscribeForgets(ctx, s.nc, forgetBuffer, forgetSweep, forget, forgetAll)
	if err != nil {
		return err
	}
	s.forgets = forgets
	go s.dropIdleViews(ctx)
	if s.warm != nil {
		go s.warmViews(ctx)
	}
	svc, err := micro.AddService(s.nc, micro.Config{
		Name:        ServiceName,
		Version:     Version,
		Description: "agentmem retrieval: hybrid search over short-term, long-term and archived memory",
	})
	if err != nil {
		return fmt.Errorf("registering %s: %w", ServiceName, err)
	}
	err = svc.AddEndpoint("retrieve", micro.HandlerFunc(func(req micro.Request) {
		r := reply.From(req)
		// Answer only where an answer can do no harm, and spend nothing on a request that
		// cannot be answered (package reply).
		tenant, _ := events.ParseRetrieveSubject(r.Subject)
		if err := reply.Check(tenant, r.Reply); err != nil {
			s.cfg.Metrics.Refused("retrieve")
			s.log.Debug().Err(err).Str("subject", r.Subject).Msg("request refused")
			return
		}
		// Served from a goroutine, not inside the handler: the server hands each request to a
		// random instance of an endpoint, busy or not, so instances answering synchronously
		// leave a request behind one that waits for its turn (after, wait_ms), which measurably
		// stretched the tail (BenchmarkWarmRequest/beside-waiters). So micro's stats count the
		// requests but neither their time nor their errors: the metrics do
		// (docs/operations.md).
		s.sem <- struct{}{}
		go func() {
			defer func() { <-s.sem }()
			s.handle(ctx, r)
		}()
	}), micro.WithEndpointSubject("memory.retrieve.*"))
	if err != nil {
		_ = svc.Stop()
		return fmt.Errorf("adding endpoint retrieve: %w", err)
	}
	if err := s.addSessionEndpoint(ctx, svc); err != nil {
		_ = svc.Stop()
		return err
	}
	// Make sure the server knows the subscription before anyone is told the service is up.
	if err := s.nc.Flush(); err != nil {
		_ = svc.Stop()
		return fmt.Errorf("registering %s: %w", ServiceName, err)
	}
	s.svc = svc
	s.log.Info().Str("service", ServiceName).Msg("retriever started")
	return nil
}

// Run serves until ctx is cancelled (calling Start first unless it was called); then it stops
// the service (draining its subscriptions) and waits for the requests in flight.
func (s *Service) Run(ctx context.Context) error {
	if s.svc == nil {
		if err := s.Start(ctx); err != nil {
			return err
		}
	}
	<-ctx.Done()
	err := s.svc.Stop()
	for range cap(s.sem) {
		s.sem <- struct{}{}
	}
	s.log.Info().Msg("retriever stopped")
	return err
}

func (s *Service) handle(ctx context.Context, req reply.Request) {
	start := time.Now()
	ctx, span := s.tracer.Start(events.ExtractHeader(ctx, req.Header), "agentmem.retrieve", trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("messaging.destination.name", req.Subject)))
	res, rerr := s.serve(ctx, req.Subject, req.Data)
	s.cfg.Metrics.Retrieve(outcome(rerr), time.Since(start))
	traceReply(span, res, rerr)
	if req.Reply == "" {
		return
	}
	var err error
	if rerr != nil {
		err = reply.ErrorTo(s.nc, req.Reply, rerr.Code, rerr.Field, rerr.Message)
	} else {
		err = reply.JSON(s.nc, req.Reply, res)
	}
	if err != nil {
		s.log.Debug().Err(err).Msg("responding")
	}
}

func (s *Service) serve(ctx context.Context, subject string, body []byte) (events.RetrieveReply, *Error) {
	tenant, err := events.ParseRetrieveSubject(subject)
	if err != nil {
		return events.RetrieveReply{}, &Error{Code: 400, Field: "subject", Message: err.Error()}
	}
	trace.SpanFromContext(ctx).SetAttributes(attribute.String("agentmem.tenant", tenant))
	if named, ok := bodyTenant(body); ok && named != tenant {
		return events.RetrieveReply{}, &Error{Code: 400, Field: "tenant", Message: fmt.Sprintf("the request names tenant %q on the subject of tenant %q: the tenant is the subject's", named, tenant)}
	}
	if !s.cfg.Limits.AllowRetrieve(tenant, time.Now()) {
		l := s.cfg.Limits.For(tenant)
		return events.RetrieveReply{}, &Error{Code: 429, Message: fmt.Sprintf("rate limit: tenant %q makes more than %g retrieves/s (burst %d)", tenant, l.RetrievesPerSecond, max(l.RetrieveBurst, 1))}
	}
	req, err := events.ParseRetrieveRequest(body)
	if err != nil {
		var fe *events.FieldError
		if errors.As(err, &fe) {
			return events.RetrieveReply{}, &Error{Code: 400, Field: fe.Field, Message: fe.Message}
		}
		return events.RetrieveReply{}, &Error{Code: 400, Message: err.Error()}
	}
	return s.Retrieve(ctx, tenant, req)
}

// traceReply ends a retrieval's span with what it answered: the entries' ids, sources and
// score parts as parallel arrays (the score is relevance × decay × weight, where relevance is
// the keyword score, or its fusion with the vector score when an embedder is in use, fusion.go).
func traceReply(span trace.Span, res events.RetrieveReply, rerr *Error) {
	defer span.End()
	if rerr != nil {
		span.SetAttributes(attribute.Int("agentmem.error.code", rerr.Code))
		span.SetStatus(codes.Error, rerr.Error())
		return
	}
	if !span.IsRecording() {
		return
	}
	n := len(res.Entries)
	ids, sources, types := make([]string, n), make([]string, n), make([]string, n)
	score, keyword, vector, decay, weight := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	for i, e := range res.Entries {
		ids[i], sources[i], types[i] = e.ID, e.Source, e.Type
		score[i], keyword[i], decay[i], weight[i] = e.Score, e.Scores.Keyword, e.Scores.Decay, e.Scores.Weight
		vector[i] = -1 // no vector score
		if e.Scores.Vector != nil {
			vector[i] = *e.Scores.Vector
		}
	}
	span.SetAttributes(
		attribute.Int("agentmem.entries", n), attribute.Int("agentmem.context_tokens", res.ContextTokens),
		attribute.StringSlice("agentmem.entry.ids", ids), attribute.StringSlice("agentmem.entry.sources", sources),
		attribute.StringSlice("agentmem.entry.types", types), attribute.Float64Slice("agentmem.entry.scores", score),
		attribute.Float64Slice("agentmem.entry.scores.keyword", keyword), attribute.Float64Slice("agentmem.entry.scores.vector", vector),
		attribute.Float64Slice("agentmem.entry.scores.decay", decay), attribute.Float64Slice("agentmem.entry.scores.weight", weight),
	)
}

// outcome classes a request's error for the metrics.
func outcome(e *Error) string {
	switch {
	case e == nil:
		return "ok"
	case e.Code == 400:
		return "bad_request"
	case e.Code == 404:
		return "not_found"
	case e.Code == 429:
		return "rate_limited"
	case e.Code == 408 || e.Code == 504:
		return "timeout"
	}
	return "error"
}

// candidate is an entry that may answer the query.
type candidate struct {
	entry     memory.Entry
	source    string
	session   string
	keyword   float64  // keyword relevance in [0,1]
	relevance float64  // keyword relevance with the session-diversity factor (= keyword without one)
	vector    *float64 // vector relevance in [0,1], nil without an embedder
	score     float64  // the relevance it is ranked by (fuse, fusion.go), graph's included
	graph     float64  // the relevance the user's graph added to score (graph.go)
}

// merge combines keyword hits and vector hits of one source into candidates. hasVector, nil when
// the query has no vector, tells the entries that have a stored vector (their vector relevance is
// reported, 0 when they are not among the nearest) from those the embedding stage has not reached
// (no vector relevance).
func merge(kw []rank.Hit, vec map[string]float64, hasVector func(id string) bool, entry func(id string) (memory.Entry, bool), source string, session func(memory.Entry) string) []candidate {
	var out []candidate
	seen := map[string]bool{}
	add := func(id string, keyword, relevance float64) {
		e, ok := entry(id)
		if !ok || seen[id] {
			return
		}
		seen[id] = true
		c := candidate{entry: e, source: source, session: session(e), keyword: keyword, relevance: relevance}
		if hasVector != nil && hasVector(id) {
			v := vec[id]
			c.vector = &v
		}
		out = append(out, c)
	}
	for _, h := range kw {
		add(h.ID, h.Keyword, h.Relevance)
	}
	for id := range vec {
		add(id, 0, 0)
	}
	return out
}

// perSource is how many hits each source contributes before decay, weights and the merge rank
// them together: enough that an entry decay lifts above others is among them.
func perSource(limit int) int { return max(4*limit, 50) }

// Retrieve answers one request of tenant. The request must be valid (events.ParseRetrieveRequest).
func (s *Service) Retrieve(ctx context.Context, tenant string, req events.RetrieveRequest) (events.RetrieveReply, *Error) {
	if s.forgets != nil {
		s.forgets.apply() // no view of a user forgotten before this request is read
	}
	now := s.cfg.Now()
	at := now
	if req.At != nil {
		at = *req.At
	}
	reply := events.RetrieveReply{Entries: []events.RetrievedEntry{}}

	var sv *view
	user := req.User
	if req.Session != "" {
		key := session.Key{Tenant: tenant, Session: req.Session}
		sv = s.views.get(key)
		exists, rerr := s.refreshView(ctx, sv, req)
		if rerr != nil {
			return reply, rerr
		}
		if !exists {
			sv = nil
		} else if owner := sv.state.Header.User; owner != "" {
			if user != "" && user != owner {
				// The session belongs to someone else: nothing of it is this user's memory.
				sv = nil
			} else {
				user = owner
			}
		}
	}
	sources := req.Sources
	if len(sources) == 0 {
		if req.Session != "" {
			sources = append(sources, memory.SourceShort)
		}
		if user != "" {
			// What the user said in other sessions is theirs to recall too: a new session
			// reaches it without naming the archive (an id in short-term memory is reported
			// from there).
			sources = append(sources, memory.SourceLong, memory.SourceArchive)
		}
	}
	types := map[memory.Type]bool{}
	for _, t := range req.Types {
		types[memory.Type(t)] = true
	}

	k := perSource(req.LimitOrDefault())
	var qv []float32
	var model string
	if emb := s.queryEmbedder(); emb != nil {
		model = emb.Name()
		start := time.Now()
		// The embedder reads what was said: the query without its lines' role markers.
		vs, err := emb.Embed(ctx, []string{rank.QueryText(req.Query)})
		s.cfg.Metrics.RetrieveSource("embed", time.Since(start))
		if err == nil && len(vs) == 1 {
			qv = vs[0]
		} else if err != nil {
			s.log.Warn().Err(err).Msg("embedding the query; ranking by keywords")
		}
	}
	var cands []candidate
	// Short first: an id that is in short-term memory is reported from there.
	if slices.Contains(sources, memory.SourceShort) && sv != nil {
		start := time.Now()
		cands = append(cands, s.shortCandidates(ctx, sv, req.Query, qv, model, user, req.Session, at, k)...)
		s.cfg.Metrics.RetrieveSource("short", time.Since(start))
	}
	wantLong, wantArchive := slices.Contains(sources, memory.SourceLong), slices.Contains(sources, memory.SourceArchive)
	// The user's live facts are their profile: a share of the context whatever the query.
	wantProfile := user != "" && wantLong && (len(types) == 0 || types[memory.Fact]) && req.ContextTokensOrDefault() > 0
	var facts []memory.Entry
	var changes map[string]change
	var related graphRelated
	if user != "" && (wantLong || wantArchive) {
		start := time.Now()
		more, live, changed, rel, rerr := s.userCandidates(ctx, userKey{tenant, user}, req.Query, qv, model, at, k, wantLong, wantArchive, wantProfile)
		s.cfg.Metrics.RetrieveSource("user", time.Since(start))
		if rerr != nil {
			return reply, rerr
		}
		cands, facts, changes, related = append(cands, more...), live, changed, rel
	}

	fuse(s.cfg.Fusion, cands)
	// What belongs to the entities the query names, and to their neighbours, gains relevance
	// (graph.go).
	reply.Entities = related.apply(cands, s.cfg.graphWeight(), s.cfg.diversity())
	// A question about a period ("last Saturday", "四周前") raises what was said in it, as a soft
	// prior that reorders near-ties (period.go; internal/when finds the period). A dialogue (a
	// query of several lines, rank.ParseQuery) is not a question: its time words tell of the
	// conversation, not of what to recall.
	var period when.Period
	hasPeriod := false
	if !s.cfg.IgnorePeriods && !strings.Contains(strings.TrimSpace(req.Query), "\n") {
		period, hasPeriod = when.Find(req.Query, at)
	}
	seen := map[string]bool{}
	for _, c := range cands {
		e := c.entry
		if seen[e.ID] || c.fused() <= 0 || e.Timestamp.After(at) {
			continue
		}
		if len(types) > 0 && !types[e.Type] {
			continue
		}
		seen[e.ID] = true
		decay := s.cfg.decay(e.Type).Factor(at.Sub(e.Timestamp))
		weight := memory.SourceWeight(c.source)
		sc := events.Scores{Keyword: round(c.keyword), Decay: round(decay), Weight: weight}
		if c.vector != nil {
			v := round(*c.vector)
			sc.Vector = &v
		}
		if c.fused() != c.keyword {
			sc.Relevance = round(c.fused())
		}
		if c.graph > 0 {
			sc.Graph = round(c.graph)
		}
		reply.Entries = append(reply.Entries, events.RetrievedEntry{
			ID: e.ID, Type: string(e.Type), Content: e.Content, Timestamp: e.Timestamp.UTC(),
			Source: c.source, Session: c.session, Score: round(c.fused() * decay * weight),
			Scores: sc, Provenance: e.Provenance, Metadata: e.Metadata,
		})
	}
	slices.SortStableFunc(reply.Entries, func(a, b events.RetrievedEntry) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		case a.Timestamp.After(b.Timestamp):
			return -1
		case a.Timestamp.Before(b.Timestamp):
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
	if hasPeriod {
		applyPeriod(reply.Entries, period, s.cfg.PeriodWeight)
	}
	if limit := req.LimitOrDefault(); len(reply.Entries) > limit {
		reply.Entries = reply.Entries[:limit]
	}
	var profile []events.RetrievedEntry
	if wantProfile {
		rel := map[string]float64{}
		for _, c := range cands {
			if c.entry.Type == memory.Fact {
				rel[c.entry.ID] = max(rel[c.entry.ID], c.fused())
			}
		}
		profile = profileEntries(byRelevance(facts, rel), reply.Entries)
	}
	// What a turn said that has since changed is marked, and shown as such (changed.go).
	notes := markChanged(reply.Entries, changes, at)
	markChanged(profile, nil, at)
	reply.Context, reply.ContextTokens, reply.Profile = buildContext(reply.Entries, profile, notes, req.Query, req.ContextTokensOrDefault(), s.counter)
	return reply, nil
}

// refreshView brings a session view up to date and, for a read-your-writes request, waits until
// the turn "after" is applied.
func (s *Service) refreshView(ctx context.Context, v *view, req events.RetrieveRequest) (bool, *Error) {
	var watcher jetstream.KeyWatcher
	var deadline time.Time
	if req.After != "" {
		deadline = time.Now().Add(time.Duration(req.WaitMS) * time.Millisecond)
		if req.WaitMS > 0 {
			wctx, cancel := context.WithDeadline(ctx, deadline)
			defer cancel()
			w, err := s.store.WatchHeader(wctx, v.state.Key)
			if err != nil {
				return false, readError("watching the session", err)
			}
			defer func() { _ = w.Stop() }()
			watcher = w
		}
	}
	checked := -1 // the session's count of rejected messages when its dead letters were last read
	for {
		v.mu.Lock()
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		exists, err := v.refresh(rctx, s.store, s.reader)
		cancel()
		applied := req.After == "" || v.state.Seen(req.After)
		rejected, key := v.state.Header.Rejected, v.state.Key
		v.mu.Unlock()
		if err != nil {
			return false, readError("reading session", err)
		}
		if applied {
			return exists, nil
		}
		// Not applied: perhaps never to be. The dead letters are read when the session has
		// rejected messages (ingest counts them in its header) and their count moved since the
		// last read, and before giving up; never for a turn already applied, nor while a
		// session without rejections waits for its turn.
		expired := watcher == nil || !time.Now().Before(deadline)
		if (rejected != checked && rejected > 0) || expired {
			checked = rejected
			if rerr := s.rejectedAfter(ctx, key, req.After); rerr != nil {
				return false, rerr
			}
		}
		if expired {
			return false, &Error{Code: 503, Field: "after", Message: fmt.Sprintf("turn %q of session %q is not applied yet (waited %d ms)", req.After, req.Session, req.WaitMS)}
		}
		timer := time.NewTimer(time.Until(deadline))
		select {
		case <-watcher.Updates():
		case <-timer.C:
		case <-ctx.Done():
		}
		timer.Stop()
	}
}

// rejectedAfter answers 400 when the turn after of the session was dead-lettered: it will never
// be applied, so waiting for it is pointless. A failure to read the dead letters is logged and
// leaves the request to wait as before.
func (s *Service) rejectedAfter(ctx context.Context, key session.Key, after string) *Error {
	fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	l, err := s.dlq.Find(fctx, key.Tenant, key.Session, after)
	if err != nil {
		s.log.Debug().Err(err).Str("tenant", key.Tenant).Str("session", key.Session).Msg("reading dead letters for after")
		return nil
	}
	if l == nil {
		return nil
	}
	return &Error{Code: 400, Field: "after", Message: fmt.Sprintf("turn %q of session %q was rejected: %s", after, key.Session, l.Reason)}
}

func (s *Service) shortCandidates(ctx context.Context, v *view, query string, qv []float32, model, user, sessionID string, at time.Time, k int) []candidate {
	var stored *storedVectors
	if qv != nil && user != "" {
		stored = s.userVectors(ctx, userKey{v.state.Key.Tenant, user}, model)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	byID := make(map[string]*memory.Entry, len(v.entries))
	ids := make([]string, 0, len(v.entries))
	for i := range v.entries {
		byID[v.entries[i].ID] = &v.entries[i]
		ids = append(ids, v.entries[i].ID)
	}
	var vec map[string]float64
	var hasVector func(string) bool
	if stored != nil {
		v.vecs.sync(stored, ids, s.log)
		vec, hasVector = v.vecs.search(qv, k), v.vecs.has
	}
	entry := func(id string) (memory.Entry, bool) {
		e, ok := byID[id]
		if !ok || e.Timestamp.After(at) {
			return memory.Entry{}, false
		}
		return *e, true
	}
	return merge(v.index.Search(query, k), vec, hasVector, entry, memory.SourceShort, func(memory.Entry) string { return sessionID })
}

// userVectors returns a user's stored vectors of model, read from the vector bucket the first
// time the user's view needs them.
func (s *Service) userVectors(ctx context.Context, key userKey, model string) *storedVectors {
	uv := s.users.get(key)
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	uv.addVectors(uv.vecs.load(lctx, s.vectors, key.tenant, key.user, model, s.log))
	return uv.vecs
}

// queryEmbedder is the embedder queries are embedded with, and whose stored vectors they are
// compared with: Embedder, or PreviousEmbedder while Embedder's model is not complete yet (a
// model change backfills while the old vectors serve). Nil without an vectors.
func (s *Service) queryEmbedder() Embedder {
	if s.cfg.PreviousEmbedder != nil && !s.ready.Load() {
		return s.cfg.PreviousEmbedder
	}
	return s.cfg.Embedder
}

// userCandidates scores a user's long-term memory and archive and, with profile, returns the
// user's facts live at `at` from the same view (see liveFacts), and the turns that stated what
// has changed by `at` (changesAt).
func (s *Service) userCandidates(ctx context.Context, key userKey, query string, qv []float32, model string, at time.Time, k int, long, arch, profile bool) ([]candidate, []memory.Entry, map[string]change, graphRelated, *Error) {
	// A cold user's vectors are read while the long-term memory and the archive are, not
	// before them: the first request waits for the longest of the reads, not their sum.
	var storedc chan *storedVectors
	if qv != nil {
		storedc = make(chan *storedVectors, 1)
		go func() { storedc <- s.userVectors(ctx, key, model) }()
	}
	stored := func() *storedVectors {
		if storedc == nil {
			return nil
		}
		st := <-storedc
		storedc <- st
		return st
	}
	defer stored() // no read outlives the request
	uv := s.users.get(key)
	uv.mu.Lock()
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// A cold user's stored view is read while the long-term memory is.
	var prefetched func() *storedView
	if arch && s.stored != nil && !uv.archTried {
		ch := make(chan *storedView, 1)
		go func() { ch <- s.stored.read(rctx, key) }()
		prefetched = sync.OnceValue(func() *storedView { return <-ch })
		defer prefetched() // no read outlives the request
	}
	if err := uv.refreshLong(rctx, s.long); err != nil {
		uv.mu.Unlock()
		return nil, nil, nil, graphRelated{}, readError("reading long-term memory", err)
	}
	if arch {
		if err := uv.refreshArchive(rctx, s.store, s.reader, s.stored, prefetched); err != nil {
			uv.mu.Unlock()
			return nil, nil, nil, graphRelated{}, readError("reading the archive", err)
		}
	}
	sessionOf := func(e memory.Entry) string {
		sess, _ := e.Metadata["session"].(string)
		return sess
	}
	var out []candidate
	var facts []memory.Entry
	if profile {
		facts = uv.liveFacts(at)
	}
	changes := uv.changesAt(at)
	if long {
		var vec map[string]float64
		var hasVector func(string) bool
		if st := stored(); st != nil {
			ids := make([]string, 0, len(uv.long))
			for id := range uv.long {
				ids = append(ids, id)
			}
			uv.longVecs.sync(st, ids, s.log)
			vec, hasVector = uv.longVecs.search(qv, k), uv.longVecs.has
		}
		entry := func(id string) (memory.Entry, bool) {
			e, ok := uv.long[id]
			return e, ok && uv.visibleAt(id, at)
		}
		out = append(out, merge(uv.longIdx.Search(query, k), vec, hasVector, entry, memory.SourceLong, sessionOf)...)
	}
	if arch {
		var vec map[string]float64
		var hasVector func(string) bool
		if st := stored(); st != nil {
			ids := make([]string, 0, len(uv.archive))
			for id := range uv.archive {
				ids = append(ids, id)
			}
			uv.archVecs.sync(st, ids, s.log)
			vec, hasVector = uv.archVecs.search(qv, k), uv.archVecs.has
		}
		entry := func(id string) (memory.Entry, bool) {
			e, ok := uv.archive[id]
			return e, ok && !e.Timestamp.After(at)
		}
		out = append(out, merge(uv.archIdx.Search(query, k), vec, hasVector, entry, memory.SourceArchive, sessionOf)...)
	}
	var related graphRelated
	if s.cfg.graphWeight() > 0 {
		related, out = uv.related(query, at, long, arch, k, out)
	}
	sessions := make([]string, 0, len(uv.sessions))
	for name := range uv.sessions {
		sessions = append(sessions, name)
	}
	uv.mu.Unlock()
	s.users.noteSessions(uv, sessions)
	return out, facts, changes, related, nil
}

// bodyTenant returns the tenant a JSON request body names itself, if it has a "tenant" field.
func bodyTenant(body []byte) (string, bool) {
	var b struct {
		Tenant *string `json:"tenant"`
	}
	if json.Unmarshal(body, &b) != nil || b.Tenant == nil {
		return "", false
	}
	return *b.Tenant, true
}

func round(f float64) float64 {
	return float64(int64(f*1e6+0.5)) / 1e6
}
