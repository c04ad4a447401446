package daemon_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker"
	"github.com/agentmem/agentmem/internal/daemon"
	"github.com/agentmem/agentmem/internal/embed/wordvec"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/internal/llm"
	"github.com/agentmem/agentmem/internal/llm/llmtest"
	"github.com/agentmem/agentmem/internal/retrieve"
	"github.com/agentmem/agentmem/internal/tracing"
	"github.com/agentmem/agentmem/internal/tracing/tracingtest"
	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
	"github.com/agentmem/agentmem/pkg/memory"
)

// TestOneTraceFollowsATurn publishes a session from an agent that traces (its own tracer
// provider, as an agent's would be) into a memoryd that exports to an in-process OTLP/HTTP
// collector, and follows the trace context across every hop: publish → ingest → pressure →
// compression (with its LLM calls, linked to the turns it summarises) → the summary applied →
// extraction; and a retrieval whose span carries the score parts.
func TestOneTraceFollowsATurn(t *testing.T) {
	col := tracingtest.New(t)
	srv := llmtest.NewServer(t, llmtest.Answer(func(req llmtest.ChatRequest) string {
		if req.ResponseFormat != nil && req.ResponseFormat.Type == "json_object" {
			return `{"facts":[{"content":"The user keeps zebras","category":"preference","key":"user.pet","confidence":0.9,"turns":["t1"]}]}`
		}
		return "The user talked at length about zebras and their stripes."
	}))
	ctx := context.Background()
	provider := func(service string) *tracing.Provider {
		p, err := tracing.New(ctx, tracing.Config{Endpoint: col.URL, SampleRatio: 1, Service: service, BatchTimeout: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
		return p
	}
	server, agent := provider("memoryd"), provider("agent")

	budget := memory.DefaultBudget()
	budget.ContextWindow, budget.System, budget.Tools, budget.Response = 1000, 0, 0, 0
	local, err := wordvec.New()
	if err != nil {
		t.Fatal(err)
	}
	d, err := daemon.Start(ctx, daemon.Config{
		Broker:   broker.Config{Listen: freePort(t), DataDir: t.TempDir()},
		Ingest:   ingest.Config{Budget: budget, SummaryTokens: 100, IdleTimeout: -1},
		Retrieve: retrieve.Config{Embedder: local},
		LLM:      llm.Config{Endpoint: llm.Endpoint{BaseURL: srv.URL, Model: "test-model", Timeout: 5 * time.Second}},
		Tracer:   server,
	}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Stop() })
	nc, err := nats.Connect(d.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	cl, err := client.New(nc, client.Options{Tenant: "acme", TracerProvider: agent})
	if err != nil {
		t.Fatal(err)
	}
	const turns = 20
	for i := range turns {
		role := []string{"user", "assistant"}[i%2]
		content := fmt.Sprintf("turn %d: %s", i, strings.Repeat("zebras have black and white stripes ", 12))
		if _, err := cl.Publish(ctx, client.Turn{ID: fmt.Sprintf("t%d", i+1), Session: "s1", User: "u1", Role: role, Content: content}); err != nil {
			t.Fatal(err)
		}
	}
	end, err := cl.EndSession(ctx, "s1", "u1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Retrieve(ctx, events.RetrieveRequest{Query: "zebras stripes", Session: "s1", User: "u1", After: end.ID, WaitMS: 5000}); err != nil {
		t.Fatal(err)
	}

	count := func(spans []tracingtest.Span, name string) int {
		n := 0
		for _, s := range spans {
			if s.Name == name {
				n++
			}
		}
		return n
	}
	spans := col.Await(t, 30*time.Second, "every hop exported", func(s []tracingtest.Span) bool {
		return count(s, "agentmem.ingest.turn") >= turns && count(s, "agentmem.ingest.session_end") >= 1 &&
			count(s, "agentmem.ingest.summary") >= 1 && count(s, "agentmem.retrieve") >= 1 && count(s, "memory.retrieve") >= 1 &&
			count(s, "agentmem.extract") >= 2 && count(s, "agentmem.compress") >= 1 && count(s, "agentmem.embed") >= 2
	})
	byID := map[string]tracingtest.Span{}
	for _, s := range spans {
		byID[s.SpanID] = s
	}
	childOf := func(s tracingtest.Span, parentName string) bool {
		p, ok := byID[s.Parent]
		return ok && p.Name == parentName && p.TraceID == s.TraceID
	}

	// Every turn applied by ingest is a child of the agent's publish span, in the agent's trace.
	turnTraces := map[string]bool{}
	for _, s := range spans {
		if s.Name != "agentmem.ingest.turn" {
			continue
		}
		if !childOf(s, "memory.turns publish") || byID[s.Parent].Service != "agent" || s.Service != "memoryd" {
			t.Errorf("ingest span %v is not the child of the agent's publish span", s.Attrs)
		}
		turnTraces[s.TraceID] = true
	}
	if len(turnTraces) != turns {
		t.Fatalf("%d turn traces, want one per turn (%d)", len(turnTraces), turns)
	}
	for _, s := range col.Named("agentmem.ingest.session_end") {
		if !childOf(s, "memory.turns publish") {
			t.Error("the session end's ingest span is not the child of its publish span")
		}
	}

	// Pressure starts inside the trace of the turn that crossed the threshold, and the
	// compression it asks for continues that trace, calls the LLM as its children and links to
	// the trace of every turn it summarises.
	pressures := col.Named("agentmem.ingest.pressure")
	if len(pressures) == 0 {
		t.Fatal("no pressure span")
	}
	for _, p := range pressures {
		if !childOf(p, "agentmem.ingest.turn") {
			t.Errorf("pressure span %v is not a child of the turn that caused it", p.Attrs)
		}
	}
	// Every compression continues a pressure span's trace; each links to the trace of every
	// turn it read (a previous summary it folds in is no turn).
	compressions := col.Named("agentmem.compress")
	for _, c := range compressions {
		if !childOf(c, "agentmem.ingest.pressure") {
			t.Errorf("compression %v is not a child of the pressure event's span", c.Attrs)
		}
		for _, l := range c.Links {
			if !turnTraces[l.TraceID] || l.Attrs["agentmem.turn_id"] == nil {
				t.Errorf("compression link %+v names no turn's trace", l)
			}
		}
	}
	complete := false
	for _, c := range compressions {
		complete = complete || (len(c.Links) > 0 && len(c.Links) == int(c.Attrs["agentmem.entries"].(int64)))
	}
	if !complete {
		t.Error("no compression links the trace of every turn it summarises")
	}
	chats := 0
	for _, s := range spans {
		if s.Name == "chat test-model" && childOf(s, "agentmem.compress") {
			chats++
			if s.Attrs["gen_ai.request.model"] != "test-model" || s.Attrs["gen_ai.usage.input_tokens"] == nil {
				t.Errorf("LLM span attributes: %v", s.Attrs)
			}
		}
	}
	if chats == 0 {
		t.Error("no LLM call span under the compression")
	}

	// The summary event carries the compression's context to ingest and to the extractor.
	var sumApplied, extractSummary, extractEnd bool
	for _, s := range spans {
		switch {
		case s.Name == "agentmem.ingest.summary" && childOf(s, "agentmem.compress"):
			sumApplied = true
		case s.Name == "agentmem.extract" && s.Attrs["agentmem.trigger"] == "summary" && childOf(s, "agentmem.compress"):
			extractSummary = true
		// The extraction continues the trace of ingest applying the end (which is the child of
		// the agent's publish): ingest's announcement of the end carries it.
		case s.Name == "agentmem.extract" && s.Attrs["agentmem.trigger"] == "session end" && childOf(s, "agentmem.ingest.session_end") &&
			childOf(byID[s.Parent], "memory.turns publish"):
			extractEnd = true
			if len(s.Links) == 0 && s.Attrs["agentmem.turns"].(int64) > 0 {
				t.Error("the extraction links no turn it read")
			}
		}
	}
	// The embedding stage embeds the summary and the fact in their events' traces.
	var embedSummary, embedFact bool
	for _, s := range col.Named("agentmem.embed") {
		embedSummary = embedSummary || childOf(s, "agentmem.compress")
		embedFact = embedFact || childOf(s, "agentmem.extract")
	}
	if !embedSummary || !embedFact {
		t.Errorf("embedding in the summary's trace: %v; in the fact's: %v", embedSummary, embedFact)
	}
	if !sumApplied || !extractSummary || !extractEnd {
		t.Errorf("summary applied in the compression's trace: %v; extraction on the summary: %v; on the session end: %v",
			sumApplied, extractSummary, extractEnd)
	}

	// The retrieval: the server span is the child of the agent's request span and carries the
	// score parts of every entry returned.
	r := col.Named("agentmem.retrieve")[0]
	if !childOf(r, "memory.retrieve") {
		t.Fatal("the retriever's span is not the child of the agent's request span")
	}
	ids, _ := r.Attrs["agentmem.entry.ids"].([]any)
	if len(ids) == 0 {
		t.Fatalf("retrieve span without entries: %v", r.Attrs)
	}
	for _, k := range []string{"agentmem.entry.sources", "agentmem.entry.types", "agentmem.entry.scores", "agentmem.entry.scores.keyword",
		"agentmem.entry.scores.vector", "agentmem.entry.scores.decay", "agentmem.entry.scores.weight"} {
		if v, _ := r.Attrs[k].([]any); len(v) != len(ids) {
			t.Errorf("%s has %d values for %d entries", k, len(v), len(ids))
		}
	}
	for _, s := range r.Attrs["agentmem.entry.scores.keyword"].([]any) {
		if s.(float64) <= 0 {
			t.Errorf("an entry matched %q with keyword score %v", "zebras stripes", s)
		}
	}
}

// TestTracingConfig: bad settings are refused with what is wrong, and tracing off records nothing.
func TestTracingConfig(t *testing.T) {
	for _, c := range []tracing.Config{{Endpoint: "localhost:4318"}, {Endpoint: "http://x", SampleRatio: 2}} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
	p, err := tracing.New(context.Background(), tracing.Config{})
	if err != nil {
		t.Fatal(err)
	}
	_, span := tracing.Tracer(p).Start(context.Background(), "x")
	if span.SpanContext().IsValid() {
		t.Error("tracing off made a recording span")
	}
}
