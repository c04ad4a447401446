package integrity_test

import (
	"bytes"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/integrity"
	"github.com/agentmem/agentmem/internal/metrics"
	"github.com/agentmem/agentmem/internal/metrics/metricstest"
)

func TestReporterLogsAndCounts(t *testing.T) {
	m := metrics.New()
	srv := httptest.NewServer(m.Handler())
	t.Cleanup(srv.Close)
	var buf bytes.Buffer
	r := integrity.NewReporter(m, zerolog.New(&buf).With().Str("component", "retriever").Logger())

	cerr := integrity.Mismatch("AGENTMEM_SESSIONS", "beta.s1", integrity.Tenant, "alpha", "beta")
	if cerr == nil || !errors.Is(cerr, integrity.ErrCorrupt) {
		t.Fatalf("Mismatch: %v", cerr)
	}
	r.Report(cerr)
	r.Report(integrity.Undecoded("AGENTMEM_SESSIONS", "beta.s2", errors.New("bad json")))
	r.Report(nil)

	fams := metricstest.Scrape(t, srv.URL+"/metrics")
	if got := fams.Value("agentmem_kv_corrupt_total", "bucket", "AGENTMEM_SESSIONS", "reason", "tenant"); got != 1 {
		t.Fatalf("tenant mismatches counted %v, want 1", got)
	}
	if got := fams.Value("agentmem_kv_corrupt_total", "reason", "undecodable"); got != 1 {
		t.Fatalf("undecodable values counted %v, want 1", got)
	}
	log := buf.String()
	for _, want := range []string{`"level":"warn"`, `"component":"retriever"`, `"bucket":"AGENTMEM_SESSIONS"`, `"key":"beta.s1"`, `"reason":"tenant"`, `value names tenant \"alpha\"`} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %s:\n%s", want, log)
		}
	}
}

func TestMatchingFieldsAndNilReportersAreQuiet(t *testing.T) {
	if cerr := integrity.Mismatch("B", "k", integrity.User, "alice", "alice"); cerr != nil {
		t.Fatalf("equal fields reported: %v", cerr)
	}
	var r *integrity.Reporter
	r.Report(integrity.Undecoded("B", "k", errors.New("x")))
	(&integrity.Reporter{}).Report(integrity.Undecoded("B", "k", errors.New("x")))
}
