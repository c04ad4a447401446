// Package metrics holds agentmem's Prometheus metrics: what the workers did (turns ingested,
// applied and dead-lettered, pressure events, compressions and the tokens they saved, facts
// added and superseded, LLM calls with their tokens and errors), how long retrieval took, and,
// read at scrape time, consumer lag, stream sizes and where the process's memory sits (package
// footprint).
//
// A *Metrics is made once per process by New and handed to every worker through its Config;
// every method is safe on a nil *Metrics and then does nothing, so a worker built without
// metrics (most tests) pays one nil check. Each Metrics has its own registry rather than
// Prometheus' global one, so several daemons in one test binary do not share counters.
//
// Labels are kept to bounded sets: no tenant, session or user label (a memory service has
// unbounded numbers of them; per-tenant numbers are in the usage report and memctl stats), and a
// dead letter's free-text reason is reduced to a short class. docs/operations.md lists every
// metric.
package metrics

import (
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/agentmem/agentmem/internal/footprint"
)

// Namespace prefixes every metric name.
const Namespace = "agentmem"

// Metrics is one process' set of metrics.
type Metrics struct {
	reg *prometheus.Registry

	ingestMessages   prometheus.Counter
	ingestFilled     prometheus.Counter
	applied          *prometheus.CounterVec
	duplicates       prometheus.Counter
	deadLetters      *prometheus.CounterVec
	pressures        prometheus.Counter
	summariesApplied prometheus.Counter
	sessionsEnded    *prometheus.CounterVec
	conflicts        prometheus.Counter
	failures         *prometheus.CounterVec
	ingestBatch      prometheus.Histogram

	compressions   *prometheus.CounterVec
	compressTokens *prometheus.CounterVec
	compressSaved  prometheus.Counter
	compressTime   *prometheus.HistogramVec
	compressCalls  *prometheus.CounterVec
	summaryCalls   prometheus.Histogram

	extractions *prometheus.CounterVec
	facts       *prometheus.CounterVec

	llmRequests *prometheus.CounterVec
	llmTokens   *prometheus.CounterVec
	llmErrors   *prometheus.CounterVec
	llmTime     *prometheus.HistogramVec

	retrieveRequests *prometheus.CounterVec
	retrieveTime     *prometheus.HistogramVec

	httpRequests *prometheus.CounterVec
	httpTime     *prometheus.HistogramVec
	batchGroups  prometheus.Histogram

	embedded      *prometheus.CounterVec
	vectorsStored *prometheus.CounterVec
	storedViews   *prometheus.CounterVec
	embedSkipped  *prometheus.CounterVec

	kvCorrupt *prometheus.CounterVec
	refused   *prometheus.CounterVec
	admitted  *prometheus.CounterVec

	mu       sync.Mutex
	sessions []func() Sessions

	footprint *footprint.Registry
}

// Sessions are the sessions an ingest worker holds in memory.
type Sessions struct {
	// Open have a turn and no end yet; Awaiting wait for the summary of a pressure event.
	Open, Awaiting int
	// Partitions is how many partitions of the turns stream the worker owns.
	Partitions int
}

// latencyBuckets spans 100µs to ~30s: retrieval sits at the low end, LLM calls at the high end.
var latencyBuckets = prometheus.ExponentialBuckets(0.0001, 2.5, 15)

// New returns a Metrics registered on a new registry together with the Go runtime and process
// collectors.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	f := factory{reg}
	m := &Metrics{reg: reg, footprint: footprint.New()}
	reg.MustRegister(memoryCollector{m.footprint})

	m.ingestMessages = f.counter("ingest_messages_total", "Messages the ingest worker took from the turns stream, redeliveries included.")
	m.ingestFilled = f.counter("ingest_gap_fills_total", "Earlier undecided messages ingest read back from the stream to keep a session in order.")
	m.applied = f.counterVec("turns_applied_total", "Events applied to short-term memory, by type (turn, session_end).", "type")
	m.duplicates = f.counter("turns_duplicate_total", "Turns whose id was seen before and were ignored.")
	m.deadLetters = f.counterVec("dead_letters_total", "Messages written to the dead-letter stream, by the component that wrote them and a reason class.", "component", "reason")
	m.pressures = f.counter("pressure_events_total", "memory.pressure events emitted.")
	m.summariesApplied = f.counter("summaries_applied_total", "Summaries applied to short-term memory.")
	m.sessionsEnded = f.counterVec("sessions_ended_total", "Sessions ended, by cause (event, idle).", "cause")
	m.conflicts = f.counter("ingest_commit_conflicts_total", "Session commits lost to another writer (retried).")
	m.failures = f.counterVec("worker_transient_failures_total", "Messages left for redelivery after a transient failure, by component.", "component")
	m.ingestBatch = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: Namespace, Name: "ingest_batch_seconds",
		Help: "Time to process one batch of turns of one partition.", Buckets: latencyBuckets})
	reg.MustRegister(m.ingestBatch)

	m.compressions = f.counterVec("compressions_total", "Compressions of a range of turns, by mode (llm, extractive) and outcome (ok, error).", "mode", "outcome")
	m.compressTokens = f.counterVec("compression_tokens_total", "Tokens of the turns compressed (direction=in) and of the summaries written (direction=out).", "direction")
	m.compressSaved = f.counter("compression_tokens_saved_total", "Tokens removed from short-term memory by compression (in minus out).")
	m.compressTime = f.histogramVec("compression_seconds", "Time to compress one range, by mode.", "mode")
	m.compressCalls = f.counterVec("compression_llm_calls_total", "LLM calls of compressions: made (sent to the model) or reused (answered from the memo of an interrupted attempt at the same summary).", "outcome")
	m.summaryCalls = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: Namespace, Name: "summary_llm_calls",
		Help: "LLM answers one stored summary used: made by its last attempt or reused from the memo of an earlier one (compare with llm_requests_total for repeats).", Buckets: []float64{1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 64}})
	reg.MustRegister(m.summaryCalls)

	m.extractions = f.counterVec("extractions_total", "Fact extraction runs, by mode (rules, llm) and outcome (ok, error).", "mode", "outcome")
	m.facts = f.counterVec("facts_total", "Changes to long-term facts, by change (added, superseded, reinforced, deleted, corrected).", "change")

	llm := []string{"provider", "model", "operation"}
	m.llmRequests = f.counterVec("llm_requests_total", "Calls to an OpenAI-compatible endpoint (after retries), by outcome (ok, error).", append(llm, "outcome")...)
	m.llmTokens = f.counterVec("llm_tokens_total", "Tokens of LLM calls, by type (input, output).", append(llm, "type")...)
	m.llmErrors = f.counterVec("llm_errors_total", "Failed attempts of LLM calls (each retry counts), by kind (rate_limited, server, timeout, connection, malformed, rejected, canceled).", append(llm, "kind")...)
	m.llmTime = f.histogramVec("llm_request_seconds", "Duration of LLM calls, retries included.", llm...)

	m.retrieveRequests = f.counterVec("retrieve_requests_total", "Retrieval requests, by outcome (ok, bad_request, not_found, rate_limited, timeout, error).", "outcome")
	m.retrieveTime = f.histogramVec("retrieve_seconds", "Retrieval time by source: embed (the query's embedding), short (a session's short-term memory), user (a user's long-term memory and archive) and total (the whole request).", "source")

	m.httpRequests = f.counterVec("http_requests_total", "Requests of the HTTP API, by route (its pattern, or \"unrouted\"), method and status code.", "route", "method", "code")
	m.httpTime = f.histogramVec("http_request_seconds", "Time to answer a request of the HTTP API, by route (an MCP event stream counts until it closes).", "route")
	m.batchGroups = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: Namespace, Name: "http_batch_group_requests",
		Help: "Batch requests of the HTTP API written together as one JetStream atomic batch (group commit), per batch written.", Buckets: []float64{1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 64}})
	reg.MustRegister(m.batchGroups)

	m.embedded = f.counterVec("embedder_texts_total", "Texts the embedding stage embedded (one per stored vector; a failed batch counts nothing), by model.", "model")
	m.vectorsStored = f.counterVec("vectors_stored_total", "Vectors the embedding stage stored, by kind of entry (turn, summary, fact).", "kind")
	m.storedViews = f.counterVec("retrieve_stored_view_sessions_total", "Sessions of cold loads by where the retriever read them: from the user's stored view (stored), from the turns stream with no stored view of the session (stream) or one out of date (stale); views stored (written), users whose view was too large to store (too_large, once each until a forget) or of another format than this version's (old_format); and users loaded by the warmer (warmed) to store their view.", "outcome")
	m.embedSkipped = f.counterVec("embedder_skipped_total", "Messages the embedding stage made no vector of, by reason (turn: not applied by ingest or empty; summary: no user or empty; stored: the vector exists).", "reason")

	m.kvCorrupt = f.counterVec("kv_corrupt_total", "Values read from a KV bucket that do not belong to their key (another tenant's, session's or user's, or not decodable) and were treated as absent, by bucket and reason (undecodable, tenant, session, user, id, chain).", "bucket", "reason")
	m.refused = f.counterVec("requests_refused_total", "Requests and turns a service neither served nor answered because their reply subject is not an inbox of the requesting tenant (package reply), by service.", "service")
	m.admitted = f.counterVec("admission_total", "Turns received on the intake (tenancy on) by outcome: stored, rejected (bad id, dead-lettered), refused (reply subject), failed (not stored; the agent retries).", "outcome")

	reg.MustRegister(
		GaugeFunc("sessions_open", "Sessions with turns and no end on the partitions this process' ingest workers own.",
			func() float64 { return float64(m.sessionTotals().Open) }),
		GaugeFunc("sessions_awaiting_summary", "Sessions waiting for the summary of a pressure event.",
			func() float64 { return float64(m.sessionTotals().Awaiting) }),
		GaugeFunc("ingest_partitions_owned", "Partitions of the turns stream this process' ingest workers own.",
			func() float64 { return float64(m.sessionTotals().Partitions) }),
	)
	return m
}

// AddSessions adds an ingest worker's session counts to the sessions gauges.
func (m *Metrics) AddSessions(f func() Sessions) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sessions = append(m.sessions, f)
}

func (m *Metrics) sessionTotals() Sessions {
	m.mu.Lock()
	fs := slices.Clone(m.sessions)
	m.mu.Unlock()
	var t Sessions
	for _, f := range fs {
		s := f()
		t.Open += s.Open
		t.Awaiting += s.Awaiting
		t.Partitions += s.Partitions
	}
	return t
}

type factory struct{ reg *prometheus.Registry }

func (f factory) counter(name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help})
	f.reg.MustRegister(c)
	return c
}

func (f factory) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help}, labels)
	f.reg.MustRegister(c)
	return c
}

func (f factory) histogramVec(name, help string, labels ...string) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: name, Help: help, Buckets: latencyBuckets}, labels)
	f.reg.MustRegister(h)
	return h
}

// Registry is the registry every metric is on, for a caller that adds its own collectors.
func (m *Metrics) Registry() *prometheus.Registry {
	if m == nil {
		return nil
	}
	return m.reg
}

// Register adds collectors (consumer lag, stream sizes, a worker's gauges). It does nothing on
// a nil Metrics.
func (m *Metrics) Register(cs ...prometheus.Collector) error {
	if m == nil {
		return nil
	}
	for _, c := range cs {
		if err := m.reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// Handler serves the metrics in the Prometheus text (or OpenMetrics) format; a nil Metrics
// answers 404.
func (m *Metrics) Handler() http.Handler {
	if m == nil {
		return http.NotFoundHandler()
	}
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg, EnableOpenMetrics: true})
}

// IngestBatch records one processed batch: n messages taken, filled read back, in d.
func (m *Metrics) IngestBatch(n, filled int, d time.Duration) {
	if m == nil {
		return
	}
	m.ingestMessages.Add(float64(n))
	if filled > 0 {
		m.ingestFilled.Add(float64(filled))
	}
	m.ingestBatch.Observe(d.Seconds())
}

// Applied counts events applied to short-term memory: turns and session ends.
func (m *Metrics) Applied(turns, ends int) {
	if m == nil {
		return
	}
	if turns > 0 {
		m.applied.WithLabelValues("turn").Add(float64(turns))
	}
	if ends > 0 {
		m.applied.WithLabelValues("session_end").Add(float64(ends))
	}
}

// Duplicates counts turns ignored as seen before.
func (m *Metrics) Duplicates(n int) {
	if m == nil || n == 0 {
		return
	}
	m.duplicates.Add(float64(n))
}

// DeadLetter counts one dead-lettered message.
func (m *Metrics) DeadLetter(component, reason string) {
	if m == nil {
		return
	}
	if reason == "" {
		reason = "other"
	}
	m.deadLetters.WithLabelValues(component, reason).Inc()
}

// Pressure counts pressure events emitted.
func (m *Metrics) Pressure(n int) {
	if m == nil || n == 0 {
		return
	}
	m.pressures.Add(float64(n))
}

// SummaryApplied counts one summary applied.
func (m *Metrics) SummaryApplied() {
	if m == nil {
		return
	}
	m.summariesApplied.Inc()
}

// SessionEnded counts one session ended by cause ("event" or "idle").
func (m *Metrics) SessionEnded(cause string) {
	if m == nil {
		return
	}
	m.sessionsEnded.WithLabelValues(cause).Inc()
}

// Conflict counts one lost session commit.
func (m *Metrics) Conflict() {
	if m == nil {
		return
	}
	m.conflicts.Inc()
}

// TransientFailure counts n messages left for redelivery by component.
func (m *Metrics) TransientFailure(component string, n int) {
	if m == nil || n == 0 {
		return
	}
	m.failures.WithLabelValues(component).Add(float64(n))
}

// Compression records one compression: mode "llm" or "extractive", the tokens of the turns it
// replaced and of the summary, or err when it failed.
func (m *Metrics) Compression(mode string, in, out int, d time.Duration, err error) {
	if m == nil {
		return
	}
	if err != nil {
		m.compressions.WithLabelValues(mode, "error").Inc()
		return
	}
	m.compressions.WithLabelValues(mode, "ok").Inc()
	m.compressTokens.WithLabelValues("in").Add(float64(in))
	m.compressTokens.WithLabelValues("out").Add(float64(out))
	if in > out {
		m.compressSaved.Add(float64(in - out))
	}
	m.compressTime.WithLabelValues(mode).Observe(d.Seconds())
}

// CompressionCall counts an LLM call of a compression: outcome "made" or "reused".
func (m *Metrics) CompressionCall(outcome string) {
	if m == nil {
		return
	}
	m.compressCalls.WithLabelValues(outcome).Inc()
}

// SummaryCalls records the LLM answers one stored summary used (made or reused).
func (m *Metrics) SummaryCalls(n int) {
	if m == nil {
		return
	}
	m.summaryCalls.Observe(float64(n))
}

// Embedded counts texts the embedding stage embedded with model.
func (m *Metrics) Embedded(model string, n int) {
	if m == nil || n == 0 {
		return
	}
	m.embedded.WithLabelValues(model).Add(float64(n))
}

// StoredView counts n sessions of cold loads by outcome (stored, stream, stale) or n views
// (written, too_large, old_format) (package retrieve, stored views).
func (m *Metrics) StoredView(outcome string, n int) {
	if m == nil || n == 0 {
		return
	}
	m.storedViews.WithLabelValues(outcome).Add(float64(n))
}

// VectorStored counts one vector stored for an entry of kind ("turn", "summary", "fact").
func (m *Metrics) VectorStored(kind string) {
	if m == nil {
		return
	}
	m.vectorsStored.WithLabelValues(kind).Inc()
}

// EmbedSkipped counts one message the embedding stage made no vector of, by reason.
func (m *Metrics) EmbedSkipped(reason string) {
	if m == nil {
		return
	}
	m.embedSkipped.WithLabelValues(reason).Inc()
}

// Extraction records one extraction run by mode ("rules" or "llm").
func (m *Metrics) Extraction(mode string, err error) {
	if m == nil {
		return
	}
	m.extractions.WithLabelValues(mode, outcome(err)).Inc()
}

// Facts counts changes to long-term facts ("added", "superseded", "reinforced", "deleted",
// "corrected").
func (m *Metrics) Facts(change string, n int) {
	if m == nil || n == 0 {
		return
	}
	m.facts.WithLabelValues(change).Add(float64(n))
}

// Retrieve records one retrieval request: its outcome ("ok", or the error class:
// "bad_request", "not_found", "rate_limited", "timeout", "error") and its whole time.
func (m *Metrics) Retrieve(outcome string, total time.Duration) {
	if m == nil {
		return
	}
	m.retrieveRequests.WithLabelValues(outcome).Inc()
	if outcome == "ok" {
		m.retrieveTime.WithLabelValues("total").Observe(total.Seconds())
	}
}

// HTTP records one request of the HTTP API: route is the matched pattern ("unrouted" when
// none matched), code the status answered.
func (m *Metrics) HTTP(route, method string, code int, d time.Duration) {
	if m == nil {
		return
	}
	m.httpRequests.WithLabelValues(route, method, strconv.Itoa(code)).Inc()
	m.httpTime.WithLabelValues(route).Observe(d.Seconds())
}

// BatchGroup records one atomic batch the HTTP API wrote for requests batch requests.
func (m *Metrics) BatchGroup(requests int) {
	if m == nil {
		return
	}
	m.batchGroups.Observe(float64(requests))
}

// KVCorrupt counts one value of bucket that a reader treated as corrupt, by reason (see
// internal/integrity).
func (m *Metrics) KVCorrupt(bucket, reason string) {
	if m == nil {
		return
	}
	m.kvCorrupt.WithLabelValues(bucket, reason).Inc()
}

// Refused counts one request of service (retrieve, forget, admission) refused for its reply
// subject.
func (m *Metrics) Refused(service string) {
	if m == nil {
		return
	}
	m.refused.WithLabelValues(service).Inc()
}

// Admission counts one turn received on the intake by outcome.
func (m *Metrics) Admission(outcome string) {
	if m == nil {
		return
	}
	m.admitted.WithLabelValues(outcome).Inc()
}

// RetrieveSource records the time one request spent on a source: "embed" (the query's
// embedding), "short" (the session's short-term memory) or "user" (the user's long-term memory
// and archive).
func (m *Metrics) RetrieveSource(source string, d time.Duration) {
	if m == nil {
		return
	}
	m.retrieveTime.WithLabelValues(source).Observe(d.Seconds())
}

// LLM returns the recorder of one endpoint's calls: provider (the base URL's host), model and
// operation ("complete", "embed"). The result is safe to use when m is nil.
func (m *Metrics) LLM(provider, model, operation string) LLM {
	if m == nil {
		return LLM{}
	}
	l := prometheus.Labels{"provider": provider, "model": model, "operation": operation}
	return LLM{
		m:      m,
		labels: l,
		ok:     m.llmRequests.MustCurryWith(l).WithLabelValues("ok"),
		failed: m.llmRequests.MustCurryWith(l).WithLabelValues("error"),
		input:  m.llmTokens.MustCurryWith(l).WithLabelValues("input"),
		output: m.llmTokens.MustCurryWith(l).WithLabelValues("output"),
		time:   m.llmTime.With(l),
	}
}

// LLM records the calls of one provider, model and operation.
type LLM struct {
	m             *Metrics
	labels        prometheus.Labels
	ok, failed    prometheus.Counter
	input, output prometheus.Counter
	time          prometheus.Observer
}

// AttemptFailed counts one failed attempt by kind (see llm.ErrorKind).
func (l LLM) AttemptFailed(kind string) {
	if l.m == nil {
		return
	}
	l.m.llmErrors.MustCurryWith(l.labels).WithLabelValues(kind).Inc()
}

// Call records one call (retries included): its duration, the tokens it used, and err when
// every attempt failed.
func (l LLM) Call(d time.Duration, input, output int, err error) {
	if l.m == nil {
		return
	}
	l.time.Observe(d.Seconds())
	if err != nil {
		l.failed.Inc()
		return
	}
	l.ok.Inc()
	l.input.Add(float64(input))
	l.output.Add(float64(output))
}

func outcome(err error) string {
	if err != nil {
		return "error"
	}
	return "ok"
}
