package inspector

import (
	"fmt"
	"net/http"
	"time"

	"github.com/agentmem/agentmem/internal/graph"
)

// UserGraph is the answer of GET /api/tenants/{tenant}/users/{user}/graph: the user's entities
// and relations at a time (?at=, RFC 3339; default now), with the history of every edge stated
// by then (package graph).
type UserGraph struct {
	Tenant string `json:"tenant"`
	User   string `json:"user"`
	graph.Snapshot
}

func (i *Inspector) handleGraph(w http.ResponseWriter, r *http.Request) {
	tenant, ok := i.token(w, r, "tenant")
	if !ok {
		return
	}
	user, ok := i.token(w, r, "user")
	if !ok {
		return
	}
	at := time.Now().UTC()
	if v := r.URL.Query().Get("at"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			writeError(w, http.StatusBadRequest, "at", fmt.Sprintf("at %q: want an RFC 3339 time such as 2026-11-30T10:00:00Z", v))
			return
		}
		at = t
	}
	ctx, cancel := i.bound(r)
	defer cancel()
	recs, err := i.longterm.User(ctx, tenant, user)
	if err != nil {
		i.fail(w, r, "reading the graph", err)
		return
	}
	writeJSON(w, http.StatusOK, UserGraph{Tenant: tenant, User: user, Snapshot: graph.Build(recs).At(at)})
}
