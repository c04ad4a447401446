package metrics_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
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

// A directory's files are counted at each scrape: those with the suffix, regular ones only.
func TestFilesCollector(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("a.view", "abc")
	write("b.view", "hello")
	write("tmp-123", "ignored")
	if err := os.Mkdir(filepath.Join(dir, "c.view"), 0o700); err != nil {
		t.Fatal(err)
	}
	m := metrics.New()
	if err := m.Register(metrics.FilesCollector(dir, ".view", "stored_view", "stored views")); err != nil {
		t.Fatal(err)
	}
	scrape := func() string {
		rec := httptest.NewRecorder()
		m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		return rec.Body.String()
	}
	body := scrape()
	for _, want := range []string{"agentmem_stored_view_files 2\n", "agentmem_stored_view_bytes 8\n"} {
		if !strings.Contains(body, want) {
			t.Fatalf("no %q in\n%s", want, body)
		}
	}
	if err := os.Remove(filepath.Join(dir, "a.view")); err != nil {
		t.Fatal(err)
	}
	if body := scrape(); !strings.Contains(body, "agentmem_stored_view_files 1\n") || !strings.Contains(body, "agentmem_stored_view_bytes 5\n") {
		t.Fatalf("after a removal:\n%s", body)
	}
}
