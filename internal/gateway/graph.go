package gateway

import (
	"fmt"
	"net/http"
	"time"

	"github.com/agentmem/agentmem/internal/graph"
	"github.com/agentmem/agentmem/pkg/events"
)

// Graph is the 200 body of GET /v1/tenants/{tenant}/users/{user}/graph: the user's entities
// and relations at a time (package graph). Entities are those first named by then (the
// user's own node first, then by name), relations those that held then, history every edge
// stated by then, ended or not, oldest first (an edge that ended after `at` shows no end).
type Graph struct {
	User string `json:"user"`
	graph.Snapshot
}

// getGraph lists a user's graph at ?at= (RFC 3339; default now). An unknown user has an empty
// graph.
func (g *Gateway) getGraph(w http.ResponseWriter, r *http.Request, tenant string) {
	user := r.PathValue("user")
	if err := events.ValidateToken("user", user); err != nil {
		writeProblem(w, r, invalid(err))
		return
	}
	at := time.Now().UTC()
	if v := r.URL.Query().Get("at"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			writeProblem(w, r, problem(http.StatusBadRequest, "at", fmt.Sprintf("at %q: want an RFC 3339 time such as 2026-11-30T10:00:00Z", v)))
			return
		}
		at = t
	}
	recs, ok := g.userRecords(w, r, tenant, user)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, Graph{User: user, Snapshot: graph.Build(recs).At(at)})
}
