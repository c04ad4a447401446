package daemon_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker"
	"github.com/agentmem/agentmem/internal/daemon"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/internal/llm"
	"github.com/agentmem/agentmem/internal/llm/llmtest"
	"github.com/agentmem/agentmem/internal/metrics"
	"github.com/agentmem/agentmem/internal/metrics/metricstest"
	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
	"github.com/agentmem/agentmem/pkg/memory"
)

// TestMetricsAfterAScriptedSession runs a session through every worker (turns past the pressure
// threshold, an LLM that answers 429 once, a bad turn, a session end, a retrieval) and checks,
// scraping /metrics over HTTP like Prometheus, that every counter moved by what happened.
func TestMetricsAfterAScriptedSession(t *testing.T) {
	var first atomic.Bool
	srv := llmtest.NewServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if first.CompareAndSwap(false, true) {
			llmtest.WriteError(w, http.StatusTooManyRequests, "rate_limit_error", "rate_limited", "slow down")
			return
		}
		llmtest.Answer(func(req llmtest.ChatRequest) string {
			if req.ResponseFormat != nil && req.ResponseFormat.Type == "json_object" {
				return `{"facts":[{"content":"The user keeps zebras","category":"preference","key":"user.pet","confidence":0.9,"turns":["t1"]}]}`
			}
			return "The user talked at length about zebras and their stripes."
		})(w, r, n)
	})
	m := metrics.New()
	budget := memory.DefaultBudget()
	budget.ContextWindow, budget.System, budget.Tools, budget.Response = 1000, 0, 0, 0
	d, err := daemon.Start(context.Background(), daemon.Config{
		Broker:  broker.Config{Listen: freePort(t), DataDir: t.TempDir()},
		Ingest:  ingest.Config{Budget: budget, SummaryTokens: 100, IdleTimeout: -1},
		LLM:     llm.Config{Endpoint: llm.Endpoint{BaseURL: srv.URL, Model: "test-model", MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond, Timeout: 5 * time.Second}},
		Metrics: m,
	}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Stop() })
	web := httptest.NewServer(m.Handler())
	t.Cleanup(web.Close)

	before := metricstest.Scrape(t, web.URL)
	for _, name := range []string{"agentmem_sessions_open", "agentmem_consumer_pending_messages", "agentmem_stream_messages", "go_goroutines"} {
		if !before.Has(name) {
			t.Fatalf("%s is not exposed", name)
		}
	}
	if v := before.Value("agentmem_turns_applied_total"); v != 0 {
		t.Fatalf("%v turns applied before any was published", v)
	}

	nc, err := nats.Connect(d.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	cl, _ := client.New(nc, client.Options{Tenant: "acme"})
	ctx := context.Background()
	const turns = 20
	for i := range turns {
		role := []string{"user", "assistant"}[i%2]
		content := fmt.Sprintf("turn %d: %s", i, strings.Repeat("zebras have black and white stripes ", 12))
		if _, err := cl.Publish(ctx, client.Turn{ID: fmt.Sprintf("t%d", i+1), Session: "s1", User: "u1", Role: role, Content: content}); err != nil {
			t.Fatal(err)
		}
	}
	// A bad turn: not a CloudEvent.
	bad := nats.NewMsg("memory.turns.acme.s1")
	bad.Data = []byte("not json")
	if _, err := nc.Request(bad.Subject, bad.Data, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	end, err := cl.EndSession(ctx, "s1", "u1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Retrieve(ctx, events.RetrieveRequest{Query: "zebras", Session: "s1", After: end.ID, WaitMS: 5000}); err != nil {
		t.Fatal(err)
	}

	// Compression and extraction run asynchronously: poll the endpoint until they are counted.
	var got metricstest.Families
	deadline := time.Now().Add(30 * time.Second)
	for {
		got = metricstest.Scrape(t, web.URL)
		if got.Value("agentmem_summaries_applied_total") >= 1 && got.Value("agentmem_facts_total", "change", "added") >= 1 &&
			got.Value("agentmem_dead_letters_total") >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("compression, extraction or the dead letter not counted within 30s: summaries %v, facts %v, dead letters %v",
				got.Value("agentmem_summaries_applied_total"), got.Value("agentmem_facts_total", "change", "added"), got.Value("agentmem_dead_letters_total"))
		}
		poll := time.NewTimer(50 * time.Millisecond)
		<-poll.C
	}
	checks := []struct {
		what string
		v    float64
		ok   func(float64) bool
	}{
		{"turns applied", got.Value("agentmem_turns_applied_total", "type", "turn"), eq(turns)},
		{"session ends applied", got.Value("agentmem_turns_applied_total", "type", "session_end"), eq(1)},
		{"sessions ended by an event", got.Value("agentmem_sessions_ended_total", "cause", "event"), eq(1)},
		{"malformed turns dead-lettered by ingest", got.Value("agentmem_dead_letters_total", "component", "ingest", "reason", "malformed"), eq(1)},
		{"pressure events", got.Value("agentmem_pressure_events_total"), atLeast(1)},
		{"LLM compressions", got.Value("agentmem_compressions_total", "mode", "llm", "outcome", "ok"), atLeast(1)},
		{"tokens saved", got.Value("agentmem_compression_tokens_saved_total"), atLeast(1)},
		{"summaries applied", got.Value("agentmem_summaries_applied_total"), atLeast(1)},
		{"LLM calls answered", got.Value("agentmem_llm_requests_total", "provider", strings.TrimPrefix(strings.TrimSuffix(srv.URL, "/v1"), "http://"), "model", "test-model", "outcome", "ok"), atLeast(2)},
		{"LLM 429s", got.Value("agentmem_llm_errors_total", "kind", "rate_limited"), eq(1)},
		{"LLM input tokens", got.Value("agentmem_llm_tokens_total", "type", "input"), atLeast(1)},
		{"LLM extraction runs", got.Value("agentmem_extractions_total", "mode", "llm", "outcome", "ok"), atLeast(1)},
		{"facts added", got.Value("agentmem_facts_total", "change", "added"), eq(1)},
		{"retrievals answered", got.Value("agentmem_retrieve_requests_total", "outcome", "ok"), eq(1)},
		{"retrieval latency samples (total)", got.Value("agentmem_retrieve_seconds", "source", "total"), eq(1)},
		{"retrieval latency samples (short)", got.Value("agentmem_retrieve_seconds", "source", "short"), eq(1)},
		{"ingest batches timed", got.Value("agentmem_ingest_batch_seconds"), atLeast(1)},
		// The turns, the bad message and the session end, and ingest's announcement of the end.
		{"messages in the turns stream", got.Value("agentmem_stream_messages", "stream", "AGENTMEM_TURNS"), eq(turns + 3)},
	}
	for _, c := range checks {
		if !c.ok(c.v) {
			t.Errorf("%s: %v", c.what, c.v)
		}
	}
	// Every turn was delivered: no ingest consumer lags once the session is applied.
	deadline = time.Now().Add(10 * time.Second)
	for {
		got = metricstest.Scrape(t, web.URL)
		if got.Value("agentmem_consumer_pending_messages", "stream", "AGENTMEM_TURNS") == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("turns consumers still lag by %v", got.Value("agentmem_consumer_pending_messages", "stream", "AGENTMEM_TURNS"))
		}
		poll := time.NewTimer(50 * time.Millisecond)
		<-poll.C
	}
}

func eq(want float64) func(float64) bool      { return func(v float64) bool { return v == want } }
func atLeast(want float64) func(float64) bool { return func(v float64) bool { return v >= want } }
