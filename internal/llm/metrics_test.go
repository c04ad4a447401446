package llm_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/llm"
	"github.com/agentmem/agentmem/internal/llm/llmtest"
	"github.com/agentmem/agentmem/internal/metrics"
	"github.com/agentmem/agentmem/internal/metrics/metricstest"
)

// TestMetricsCountAttemptsByKind scripts one failure of every kind before a success and checks
// what the client recorded, scraped over HTTP.
func TestMetricsCountAttemptsByKind(t *testing.T) {
	srv := llmtest.NewServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		switch n {
		case 1:
			llmtest.WriteError(w, http.StatusTooManyRequests, "rate_limit_error", "", "slow down")
		case 2:
			llmtest.WriteError(w, http.StatusInternalServerError, "server_error", "", "boom")
		case 3:
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"choices": [`))
		case 4:
			<-r.Context().Done() // the attempt's timeout ends it
		default:
			llmtest.WriteCompletion(w, testModel, "ok", 7, 3)
		}
	})
	m := metrics.New()
	c, _ := newClient(t, srv.URL, func(cfg *llm.Config) {
		cfg.MaxAttempts, cfg.Timeout, cfg.Metrics = 5, 300*time.Millisecond, m
	})
	if _, err := c.Complete(context.Background(), request()); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	// A permanent refusal: one failed call.
	rejecting := llmtest.NewServer(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
		llmtest.WriteError(w, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "no")
	})
	r, _ := newClient(t, rejecting.URL, func(cfg *llm.Config) { cfg.Metrics = m })
	if _, err := r.Complete(context.Background(), request()); err == nil {
		t.Fatal("a 401 succeeded")
	}

	web := httptest.NewServer(m.Handler())
	defer web.Close()
	got := metricstest.Scrape(t, web.URL)
	host := func(raw string) string { u, _ := url.Parse(raw); return u.Host }
	okLabels := []string{"provider", host(srv.URL), "model", testModel, "operation", "complete"}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"agentmem_llm_errors_total", append(okLabels, "kind", "rate_limited"), 1},
		{"agentmem_llm_errors_total", append(okLabels, "kind", "server"), 1},
		{"agentmem_llm_errors_total", append(okLabels, "kind", "malformed"), 1},
		{"agentmem_llm_errors_total", append(okLabels, "kind", "timeout"), 1},
		{"agentmem_llm_requests_total", append(okLabels, "outcome", "ok"), 1},
		{"agentmem_llm_requests_total", append(okLabels, "outcome", "error"), 0},
		{"agentmem_llm_tokens_total", append(okLabels, "type", "input"), 7},
		{"agentmem_llm_tokens_total", append(okLabels, "type", "output"), 3},
		{"agentmem_llm_request_seconds", okLabels, 1},
		{"agentmem_llm_errors_total", []string{"provider", host(rejecting.URL), "kind", "rejected"}, 1},
		{"agentmem_llm_requests_total", []string{"provider", host(rejecting.URL), "outcome", "error"}, 1},
	} {
		if v := got.Value(c.name, c.labels...); v != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, v, c.want)
		}
	}
}
