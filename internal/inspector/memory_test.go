package inspector_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/footprint"
	"github.com/agentmem/agentmem/internal/inspector"
	"github.com/agentmem/agentmem/pkg/events"
)

// The memory report shows the retriever's views as a query loads them, beside the process's
// figures; a token scoped to one tenant does not see it.
func TestMemoryReport(t *testing.T) {
	e := start(t, inspector.Config{Token: "all", TenantTokens: map[string]string{"acme-only": "acme"}})
	at := time.Now().Add(-time.Minute)
	e.turn(t, "acme", "s1", "alice", "t1", "user", "I keep my bicycle in the garden shed", at)
	e.turn(t, "acme", "s1", "alice", "t2", "assistant", "The shed it is.", at.Add(time.Second))

	views := func() footprint.Structure {
		var rep footprint.Report
		if code := e.get(t, "/api/memory", &rep, "Authorization", "Bearer all"); code != http.StatusOK {
			t.Fatalf("memory: %d", code)
		}
		if rep.Process.HeapLive <= 0 || rep.Process.Mapped <= 0 {
			t.Fatalf("process %+v", rep.Process)
		}
		for _, s := range rep.Structures {
			if s.Name == "retrieve_user_views" {
				return s
			}
		}
		t.Fatalf("no retrieve_user_views among %+v", rep.Structures)
		return footprint.Structure{}
	}
	var r inspector.SearchResult
	if code := e.get(t, "/api/tenants/acme/search?q="+url.QueryEscape("where is the bicycle?")+"&user=alice", &r, "Authorization", "Bearer all"); code != http.StatusOK || len(r.Entries) == 0 {
		t.Fatalf("search: %d %+v", code, r.Entries)
	}
	// Two turns' texts, ids and records, and an index of their terms.
	if v := views(); v.Items != 1 || v.Bytes < 200 {
		t.Fatalf("views after a query for alice: %+v, want one view holding her turns", v)
	}
	var er struct{ Error events.ErrorDetail }
	if code := e.get(t, "/api/memory", &er, "Authorization", "Bearer acme-only"); code != http.StatusForbidden {
		t.Fatalf("a tenant's token got %d %+v", code, er)
	}
}
