package metrics_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/footprint"
	"github.com/agentmem/agentmem/internal/metrics"
)

func TestNilMetricsRecordNothingAndDoNotPanic(t *testing.T) {
	var m *metrics.Metrics
	m.Applied(1, 1)
	m.DeadLetter("ingest", "malformed")
	m.Compression("llm", 10, 2, time.Second, nil)
	m.LLM("p", "m", "complete").Call(time.Second, 1, 1, nil)
	m.LLM("p", "m", "complete").AttemptFailed("server")
	m.Retrieve("ok", time.Millisecond)
	m.KVCorrupt("AGENTMEM_SESSIONS", "tenant")
	if err := m.Register(nil); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusNotFound {
		t.Fatalf("a nil Metrics answered %d", rec.Code)
	}
}

// A structure's source is read at each scrape, beside the heap by component and the process's
// memory.
func TestMemoryOnMetrics(t *testing.T) {
	m := metrics.New()
	var turns atomic.Int64
	m.Footprint().Add("retrieve_user_turns", "turns held by user views", "turns", func() footprint.Usage {
		return footprint.Usage{Bytes: turns.Load() * 100, Items: turns.Load()}
	})
	scrape := func() string {
		rec := httptest.NewRecorder()
		m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		return rec.Body.String()
	}
	turns.Store(3)
	body := scrape()
	for _, want := range []string{
		`agentmem_memory_bytes{structure="retrieve_user_turns"} 300`,
		`agentmem_memory_items{structure="retrieve_user_turns"} 3`,
		`agentmem_memory_process_bytes{kind="heap_live"}`,
		`agentmem_memory_heap_bytes{component="other"}`,
	} {
		if !strings.Contains(body, want) {
			t.Fatalf("no %q in\n%s", want, grepLines(body, "agentmem_memory"))
		}
	}
	turns.Store(5)
	if body := scrape(); !strings.Contains(body, `agentmem_memory_items{structure="retrieve_user_turns"} 5`) {
		t.Fatalf("the second scrape did not read the source again:\n%s", grepLines(body, "agentmem_memory_items"))
	}
	if var0 := (*metrics.Metrics)(nil).Footprint(); var0 != nil {
		t.Fatal("a nil Metrics has a footprint registry")
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
