package metrics_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

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
