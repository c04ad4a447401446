package inspector

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

// SearchResult is the answer of GET /api/tenants/{tenant}/search: the request sent and the
// retriever's reply (entries best first, with their score parts, and the built context).
type SearchResult struct {
	Request events.RetrieveRequest  `json:"request"`
	Entries []events.RetrievedEntry `json:"entries"`
	// Context is the text the retriever built for a prompt, ContextTokens its token count.
	Context       string `json:"context"`
	ContextTokens int    `json:"context_tokens"`
}

// handleSearch sends a retrieve request through pkg/client, as an agent of the tenant would.
// Query parameters: q (required), session, user, limit, sources (comma-separated),
// types (comma-separated) and context_tokens.
func (i *Inspector) handleSearch(w http.ResponseWriter, r *http.Request) {
	tenant, ok := i.token(w, r, "tenant")
	if !ok {
		return
	}
	q := r.URL.Query()
	req := events.RetrieveRequest{Query: q.Get("q"), Session: q.Get("session"), User: q.Get("user")}
	for _, p := range []struct {
		name string
		dst  **int
	}{{"limit", &req.Limit}, {"context_tokens", &req.ContextTokens}} {
		if s := q.Get(p.name); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil {
				writeError(w, http.StatusBadRequest, p.name, "must be an integer, got "+strconv.Quote(s))
				return
			}
			*p.dst = &n
		}
	}
	req.Sources = list(q.Get("sources"))
	req.Types = list(q.Get("types"))
	if err := req.Validate(); err != nil {
		var fe *events.FieldError
		field := ""
		if errors.As(err, &fe) {
			field = fe.Field
		}
		if field == "query" {
			field = "q"
		}
		writeError(w, http.StatusBadRequest, field, err.Error())
		return
	}
	cl, err := client.New(i.nc, client.Options{Tenant: tenant, Timeout: i.cfg.RequestTimeout})
	if err != nil {
		writeError(w, http.StatusBadRequest, "tenant", err.Error())
		return
	}
	ctx, cancel := i.bound(r)
	defer cancel()
	reply, err := cl.Retrieve(ctx, req)
	var se *client.ServiceError
	if errors.As(err, &se) {
		code := se.Code
		if code < 400 || code > 599 {
			code = http.StatusBadGateway
		}
		writeError(w, code, se.Field, se.Message)
		return
	}
	if err != nil {
		i.fail(w, r, "retrieving", err)
		return
	}
	res := SearchResult{Request: req, Entries: reply.Entries, Context: reply.Context, ContextTokens: reply.ContextTokens}
	if res.Entries == nil {
		res.Entries = []events.RetrievedEntry{}
	}
	writeJSON(w, http.StatusOK, res)
}

// list splits a comma-separated parameter, dropping empty items.
func list(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
