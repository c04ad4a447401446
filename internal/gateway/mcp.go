package gateway

import (
	"container/list"
	"net/http"
	"sync"

	"github.com/agentmem/agentmem/internal/mcpserver"
	"github.com/agentmem/agentmem/pkg/events"
)

// DefaultMCPServers bounds the MCP servers (one per tenant, user and session) a gateway keeps.
const DefaultMCPServers = 1024

// mcpKey names the memory an MCP endpoint works on.
type mcpKey struct{ tenant, user, session string }

// mcpServers holds the streamable HTTP handler of every (tenant, user, session) in use, the least
// recently used dropped beyond max. The tenant, user and session are the URL's, that is the MCP
// client's configuration, never a model's tool arguments; the tenant is checked against the
// bearer token like every tenant route. A dropped handler loses its MCP sessions: a client then
// gets 404 for its session id and initialises again, as the MCP specification asks.
type mcpServers struct {
	mu    sync.Mutex
	max   int
	order *list.List // of mcpKey, most recent first
	byKey map[mcpKey]*mcpEntry
}

type mcpEntry struct {
	h    http.Handler
	elem *list.Element
}

// serveMCP is the streamable HTTP MCP endpoint of one user's session:
// /v1/tenants/{tenant}/users/{user}/sessions/{session}/mcp.
func (g *Gateway) serveMCP(w http.ResponseWriter, r *http.Request, tenant string) {
	k := mcpKey{tenant: tenant, user: r.PathValue("user"), session: r.PathValue("session")}
	for _, f := range []struct{ name, value string }{{"user", k.user}, {"session", k.session}} {
		if err := events.ValidateToken(f.name, f.value); err != nil {
			writeProblem(w, r, invalid(err))
			return
		}
	}
	h, err := g.mcpHandler(k)
	if err != nil {
		writeProblem(w, r, problem(http.StatusInternalServerError, "", err.Error()))
		return
	}
	h.ServeHTTP(w, r)
}

// mcpHandler returns the handler of k, making it on first use.
func (g *Gateway) mcpHandler(k mcpKey) (http.Handler, error) {
	s := &g.mcp
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.byKey[k]; ok {
		s.order.MoveToFront(e.elem)
		return e.h, nil
	}
	srv, err := mcpserver.New(mcpserver.Config{Tenant: k.tenant, User: k.user, Session: k.session}, nil, g.nc, g.js, g.topo, g.log)
	if err != nil {
		return nil, err
	}
	if s.byKey == nil {
		s.byKey, s.order = map[mcpKey]*mcpEntry{}, list.New()
	}
	e := &mcpEntry{h: srv.HTTPHandler(), elem: s.order.PushFront(k)}
	s.byKey[k] = e
	for s.order.Len() > s.max {
		old := s.order.Remove(s.order.Back()).(mcpKey)
		delete(s.byKey, old)
	}
	return e.h, nil
}
