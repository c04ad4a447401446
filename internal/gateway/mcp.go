package gateway

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmem/agentmem/internal/mcpserver"
	"github.com/agentmem/agentmem/pkg/events"
)

// Defaults of the MCP session limits of a Config.
const (
	// DefaultMCPSessions bounds the MCP sessions of all tenants a gateway keeps open.
	DefaultMCPSessions = 1024
	// DefaultMCPSessionsPerTenant bounds the MCP sessions of one tenant.
	DefaultMCPSessionsPerTenant = 64
)

// mcpSessionHeader is the streamable HTTP transport's session id header.
const mcpSessionHeader = "Mcp-Session-Id"

// mcpRetryAfter is what a client refused for lack of room is told to wait, in seconds.
const mcpRetryAfter = 5

// mcpKey names the memory an MCP endpoint works on.
type mcpKey struct{ tenant, user, session string }

// mcpServers holds the MCP endpoints in use, one per (tenant, user, session), each with the MCP
// sessions its clients opened (a client opens one with an initialize POST that carries no
// Mcp-Session-Id). The tenant, user and session are the URL's, that is the MCP client's
// configuration, never a model's tool arguments; the tenant is checked against the bearer token
// like every tenant route.
//
// Open sessions are bounded per tenant (perTenant) and in all (max), and one tenant never
// disturbs another's: a tenant at its bound that opens one more session closes its own least
// recently used one; when every session the gateway may keep is open, a tenant with sessions of
// its own closes its least recently used one, and a tenant without gets 503 rather than close
// another tenant's. A closed session's client gets 404 for its session id and initialises again,
// as the MCP specification asks. An endpoint with no session left is dropped.
type mcpServers struct {
	mu        sync.Mutex
	max       int
	perTenant int
	byKey     map[mcpKey]*mcpEndpoint
	opening   map[string]int // tenant → sessions being opened (initialize in flight)
}

// mcpEndpoint is the MCP server of one (tenant, user, session) and the sessions opened on it.
type mcpEndpoint struct {
	srv      *mcpserver.Server
	h        http.Handler
	inflight int                  // requests being served
	used     map[string]time.Time // id of every session opened here → its last request
}

// mcpRefusal is a session a tenant may not open: its status (429 or 503) and why.
type mcpRefusal struct {
	status int
	detail string
}

func (e *mcpRefusal) Error() string { return e.detail }

// errNoMCPSession answers a request naming a session on an endpoint that has none.
var errNoMCPSession = errors.New("gateway: no such MCP session")

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
	id := r.Header.Get(mcpSessionHeader)
	opens := false
	if r.Method == http.MethodPost && id == "" {
		var ok bool
		if opens, ok = g.opensSession(w, r); !ok {
			return
		}
	}
	ep, err := g.mcpAcquire(k, r.Method, id, opens)
	if err != nil {
		var ref *mcpRefusal
		switch {
		case errors.As(err, &ref):
			g.log.Warn().Str("tenant", k.tenant).Int("status", ref.status).Msg(ref.detail)
			w.Header().Set("Retry-After", strconv.Itoa(mcpRetryAfter))
			writeProblem(w, r, problem(ref.status, "", ref.detail))
		case errors.Is(err, errNoMCPSession) && id != "":
			writeProblem(w, r, problem(http.StatusNotFound, "", fmt.Sprintf("no MCP session %q on this endpoint (closed or expired): initialise a new one", id)))
		case errors.Is(err, errNoMCPSession):
			writeProblem(w, r, problem(http.StatusBadRequest, "", r.Method+" needs the "+mcpSessionHeader+" header of an open MCP session"))
		default:
			writeProblem(w, r, problem(http.StatusInternalServerError, "", err.Error()))
		}
		return
	}
	defer func() { g.mcpRelease(k, ep, opens, w.Header().Get(mcpSessionHeader)) }()
	ep.h.ServeHTTP(w, r)
}

// opensSession reports whether r, a POST without Mcp-Session-Id, may open an MCP session: only an
// initialize request does; any other call (a client's server/discover probe, a ping) the SDK
// serves on a session it closes when the call ends. It reads the body, bounded by
// MaxBodyBytes, and puts it back; on a body too large or unreadable it writes a problem and
// reports false in ok.
func (g *Gateway) opensSession(w http.ResponseWriter, r *http.Request) (opens, ok bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, g.cfg.MaxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writeProblem(w, r, problem(http.StatusRequestEntityTooLarge, "body", fmt.Sprintf("body exceeds %d bytes", tooLarge.Limit)))
		} else {
			writeProblem(w, r, problem(http.StatusBadRequest, "body", "reading the body: "+err.Error()))
		}
		return false, false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	// Not a JSON decode: however the SDK reads the message (duplicate or differently cased
	// keys, a batch), a body that can initialise a session names the method somewhere. A body
	// that mentions it otherwise only takes room until its call ends.
	return bytes.Contains(body, []byte(`"initialize"`)), true
}

// mcpAcquire returns the endpoint of k for a request on session id, counted in flight until
// mcpRelease. A request that opens a session (opens) makes the endpoint on first use and takes
// room for the session, closing the tenant's own least recently used session when needed, or is
// refused (*mcpRefusal); any other request needs the endpoint to exist (errNoMCPSession).
func (g *Gateway) mcpAcquire(k mcpKey, method, id string, opens bool) (*mcpEndpoint, error) {
	s := &g.mcp
	s.mu.Lock()
	ep := s.byKey[k]
	if !opens {
		defer s.mu.Unlock()
		if ep == nil && id == "" && method == http.MethodPost {
			// A call that opens no session (see opensSession): served by an endpoint that is
			// dropped again when the call ends, unless a session was opened on it meanwhile.
			srv, err := mcpserver.New(mcpserver.Config{Tenant: k.tenant, User: k.user, Session: k.session}, nil, g.nc, g.js, g.topo, g.log)
			if err != nil {
				return nil, err
			}
			if s.byKey == nil {
				s.byKey, s.opening = map[mcpKey]*mcpEndpoint{}, map[string]int{}
			}
			ep = &mcpEndpoint{srv: srv, h: srv.HTTPHandler(), used: map[string]time.Time{}}
			s.byKey[k] = ep
		}
		if ep == nil {
			return nil, errNoMCPSession
		}
		ep.inflight++
		if _, ok := ep.used[id]; ok {
			ep.used[id] = time.Now()
		}
		return ep, nil
	}
	victims, err := s.makeRoom(k.tenant)
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	if ep = s.byKey[k]; ep == nil { // (makeRoom may have dropped it, idle)
		srv, err := mcpserver.New(mcpserver.Config{Tenant: k.tenant, User: k.user, Session: k.session}, nil, g.nc, g.js, g.topo, g.log)
		if err != nil {
			s.mu.Unlock()
			g.mcpClose(victims)
			return nil, err
		}
		ep = &mcpEndpoint{srv: srv, h: srv.HTTPHandler(), used: map[string]time.Time{}}
		s.byKey[k] = ep
	}
	ep.inflight++
	s.opening[k.tenant]++
	s.mu.Unlock()
	g.mcpClose(victims)
	return ep, nil
}

// mcpRelease ends a request acquired on ep: a session it opened (id, from the response) is
// recorded, and an endpoint left without sessions or requests is dropped. A session the SDK
// opened for a request that was not counted as opening one is closed by the SDK itself when the
// request ends (it never initialised), so it needs no room.
func (g *Gateway) mcpRelease(k mcpKey, ep *mcpEndpoint, opened bool, id string) {
	s := &g.mcp
	s.mu.Lock()
	defer s.mu.Unlock()
	ep.inflight--
	if opened {
		if s.opening[k.tenant]--; s.opening[k.tenant] <= 0 {
			delete(s.opening, k.tenant)
		}
		if id != "" && ep.live(id) != nil {
			ep.used[id] = time.Now()
		}
	}
	s.dropIfIdle(k, ep)
}

// mcpClose closes the sessions evicted to make room (outside the lock: closing ends their
// streams).
func (g *Gateway) mcpClose(victims []openSession) {
	for _, v := range victims {
		g.log.Info().Str("tenant", v.tenant).Str("mcp_session", v.id).Msg("closing the tenant's least recently used MCP session to make room for a new one of the same tenant")
		_ = v.ss.Close()
	}
}

// openSession is a recorded, live MCP session.
type openSession struct {
	ss     *mcp.ServerSession
	ep     *mcpEndpoint
	tenant string
	id     string
	used   time.Time
}

// makeRoom takes room for one more session of tenant, under s.mu: it returns the tenant's own
// least recently used sessions to close (no longer counted from now on), or a refusal when room
// could only be made by closing another tenant's session. Sessions being opened count.
func (s *mcpServers) makeRoom(tenant string) ([]openSession, error) {
	if s.byKey == nil {
		s.byKey, s.opening = map[mcpKey]*mcpEndpoint{}, map[string]int{}
	}
	own, total := s.sweep(tenant)
	for _, n := range s.opening {
		total += n
	}
	mine := len(own) + s.opening[tenant]
	slices.SortFunc(own, func(a, b openSession) int { return a.used.Compare(b.used) })
	var victims []openSession
	evict := func() bool {
		if len(own) == 0 {
			return false
		}
		victims, own = append(victims, own[0]), own[1:]
		delete(victims[len(victims)-1].ep.used, victims[len(victims)-1].id)
		mine--
		total--
		return true
	}
	refuse := func(status int, detail string) ([]openSession, error) {
		for _, v := range victims { // none was closed: they stay
			v.ep.used[v.id] = v.used
		}
		return nil, &mcpRefusal{status: status, detail: detail}
	}
	for mine >= s.perTenant {
		if !evict() {
			return refuse(http.StatusTooManyRequests, fmt.Sprintf("tenant %q is at its limit of %d MCP sessions per tenant, "+
				"all of them being opened: try again later", tenant, s.perTenant))
		}
	}
	for total >= s.max {
		if !evict() {
			return refuse(http.StatusServiceUnavailable, fmt.Sprintf("the gateway holds its limit of %d MCP sessions, "+
				"none of them tenant %q's to close: try again later", s.max, tenant))
		}
	}
	return victims, nil
}

// sweep forgets the sessions that closed (idle timeout, DELETE, evicted), drops the endpoints
// left without any, and returns tenant's open sessions and how many sessions are open in all.
func (s *mcpServers) sweep(tenant string) (own []openSession, total int) {
	for k, ep := range s.byKey {
		live := make(map[string]*mcp.ServerSession, len(ep.used))
		for ss := range ep.srv.MCP().Sessions() {
			live[ss.ID()] = ss
		}
		for id, used := range ep.used {
			ss := live[id]
			if ss == nil {
				delete(ep.used, id)
				continue
			}
			total++
			if k.tenant == tenant {
				own = append(own, openSession{ss: ss, ep: ep, tenant: tenant, id: id, used: used})
			}
		}
		s.dropIfIdle(k, ep)
	}
	return own, total
}

// dropIfIdle drops ep, the endpoint of k, when it has neither sessions nor requests.
func (s *mcpServers) dropIfIdle(k mcpKey, ep *mcpEndpoint) {
	if ep.inflight == 0 && len(ep.used) == 0 && s.byKey[k] == ep {
		delete(s.byKey, k)
	}
}

// live returns the open session id of the endpoint, or nil.
func (ep *mcpEndpoint) live(id string) *mcp.ServerSession {
	for ss := range ep.srv.MCP().Sessions() {
		if ss.ID() == id {
			return ss
		}
	}
	return nil
}
