package usage_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/integrity"
	"github.com/agentmem/agentmem/internal/metrics"
	"github.com/agentmem/agentmem/internal/metrics/metricstest"
	"github.com/agentmem/agentmem/internal/usage"
	"github.com/agentmem/agentmem/pkg/events"
	"github.com/agentmem/agentmem/pkg/memory"
)

func TestCorruptCountersAreLeftOutAndStartedAgain(t *testing.T) {
	env := brokertest.Start(t)
	topo := events.DefaultTopology()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := topo.Ensure(ctx, env.JS); err != nil {
		t.Fatal(err)
	}
	raw, err := usage.Open(ctx, env.JS, topo)
	if err != nil {
		t.Fatal(err)
	}
	m := metrics.New()
	srv := httptest.NewServer(m.Handler())
	t.Cleanup(srv.Close)
	st := raw.Instrument(integrity.NewReporter(m, zerolog.Nop()))
	kv, err := env.JS.KeyValue(ctx, topo.UsageBucket())
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Add(ctx, "beta", "s1", memory.Usage{Calls: 1, InputTokens: 10, OutputTokens: 2}); err != nil {
		t.Fatal(err)
	}
	// A counter written before counters named their session is still counted.
	if _, err := kv.Put(ctx, "beta.s2", []byte(`{"calls":2,"input_tokens":20,"output_tokens":4}`)); err != nil {
		t.Fatal(err)
	}
	// Another tenant's counter and garbage under beta's keys.
	if _, err := kv.Put(ctx, "beta.s3", []byte(`{"tenant":"alpha","session":"s3","calls":1000,"input_tokens":1000000}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "beta.s4", []byte("garbage")); err != nil {
		t.Fatal(err)
	}
	rep, err := st.Report(ctx, "beta")
	if err != nil {
		t.Fatalf("Report: %v", err)
	}
	if want := (memory.Usage{Calls: 3, InputTokens: 30, OutputTokens: 6}); rep.Total != want {
		t.Fatalf("beta's total %+v, want %+v (the genuine counters only)", rep.Total, want)
	}
	fams := metricstest.Scrape(t, srv.URL+"/metrics")
	if fams.Value("agentmem_kv_corrupt_total", "reason", "tenant") != 1 || fams.Value("agentmem_kv_corrupt_total", "reason", "undecodable") != 1 {
		t.Fatalf("corrupt counters not reported")
	}
	// The next call of the session starts its counter again instead of failing.
	if err := st.Add(ctx, "beta", "s4", memory.Usage{Calls: 1}); err != nil {
		t.Fatalf("Add over a corrupt counter: %v", err)
	}
	rep, err = st.Report(ctx, "beta")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Total.Calls != 4 {
		t.Fatalf("beta's calls %d after the restart, want 4", rep.Total.Calls)
	}
}
