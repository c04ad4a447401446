// Package gateway is agentmem's HTTP API: a thin adapter over the NATS wire contract for agents
// that speak HTTP rather than NATS. It takes CloudEvents over HTTP (binary, structured and batch
// mode) and publishes them to the turns stream exactly as a NATS agent would, forwards retrieve
// and forget requests to the agentmem services over request-reply and passes their replies
// through, and reads a session's short-term state and a user's facts from the same buckets the
// workers write. Ending a session publishes its end event as an agent would; correcting or
// deleting a fact is a request to the forget service, as memctl and pkg/client make it. It
// decides nothing itself: validation is the wire contract's (package events), memory is the
// workers'.
//
// Routes (all under /v1/):
//
//	POST   /v1/tenants/{tenant}/events                  publish CloudEvents (202 once JetStream stored them)
//	POST   /v1/tenants/{tenant}/retrieve                memory.retrieve.<tenant>, reply passed through
//	GET    /v1/tenants/{tenant}/sessions/{session}      a session's short-term state
//	GET    /v1/tenants/{tenant}/sessions/{session}/events/{id}
//	                                                    an event's status: applied, pending or rejected
//	GET    /v1/tenants/{tenant}/dead-letters            the tenant's dead letters, newest first
//	POST   /v1/tenants/{tenant}/sessions/{session}/end  end the session now (its facts are extracted)
//	GET    /v1/tenants/{tenant}/users/{user}/facts      a user's facts (?history=true: every version)
//	GET    /v1/tenants/{tenant}/users/{user}/facts/{id} one fact, whatever its state
//	GET    /v1/tenants/{tenant}/users/{user}/graph      a user's entities and relations (?at=)
//	PUT|PATCH /v1/tenants/{tenant}/users/{user}/facts/{id}
//	                                                    correct it: a new fact supersedes it
//	DELETE /v1/tenants/{tenant}/users/{user}/facts/{id} delete it (kept in the history)
//	DELETE /v1/tenants/{tenant}/users/{user}            memory.forget.<tenant>: forget the user
//	POST|GET|DELETE /v1/tenants/{tenant}/users/{user}/sessions/{session}/mcp
//	                                                    MCP (streamable HTTP) on that user's session
//	GET    /v1/openapi.json                             the OpenAPI document of these routes
//
// Every error is an RFC 9457 problem (application/problem+json) that names the offending field.
// The tenant is the URL's; with bearer tokens configured, it must be the token's tenant. The
// gateway's own NATS connection reaches every tenant, so this check is what isolates tenants on
// the HTTP side (docs/http.md).
package gateway

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	stdlog "log"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/deadletter"
	"github.com/agentmem/agentmem/internal/integrity"
	"github.com/agentmem/agentmem/internal/limits"
	"github.com/agentmem/agentmem/internal/longterm"
	"github.com/agentmem/agentmem/internal/metrics"
	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/pkg/events"
)

// Defaults of a Config.
const (
	DefaultMaxBodyBytes      = 1 << 20
	DefaultMaxContentBytes   = 256 << 10
	DefaultTimeout           = 30 * time.Second
	DefaultReadHeaderTimeout = 5 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
)

// maxHeaderBytes bounds a request's headers (a CloudEvent in binary mode carries its attributes
// there).
const maxHeaderBytes = 64 << 10

// Config configures a Gateway.
type Config struct {
	// MaxBodyBytes is the largest request body accepted (1 MiB); a larger one gets 413.
	MaxBodyBytes int64
	// MaxContentBytes is the largest turn content accepted (256 KiB, ingest's default): set it to
	// ingest's, so that a turn ingest would dead-letter for its size gets 413 instead of 202. Limits,
	// when set, replaces it for a tenant with a max_turn_bytes limit, as in ingest.
	MaxContentBytes int
	// Limits holds the per-tenant limits; only max_turn_bytes is read. Nil: none.
	Limits *limits.Limiter
	// Timeout bounds the work of one request: the JetStream acknowledgement, the service's reply,
	// the bucket reads (30s). A retrieve waiting for a turn (wait_ms) gets that much longer. When
	// NATS does not answer in time the request gets 504.
	Timeout time.Duration
	// Tokens maps bearer tokens to their tenant. Empty: no authentication, the tenant is the
	// URL's alone (a laptop, a test, a gateway behind an authenticating proxy).
	Tokens map[string]string

	// MCPSessionsPerTenant bounds the open MCP sessions of one tenant (64): a tenant at the bound
	// that opens one more closes its own least recently used session. MCPSessions bounds the open
	// MCP sessions of all tenants (1024): when they are all open, a tenant that opens one more
	// closes its own least recently used session, and a tenant with none open gets 503. No
	// tenant's session is ever closed to make room for another tenant's.
	MCPSessionsPerTenant int
	MCPSessions          int
	// Metrics records every request (route, method, status, duration); nil records nothing.
	Metrics *metrics.Metrics

	// ReadHeaderTimeout bounds reading a request's headers (5s) and ReadTimeout reading the whole
	// request, body included (30s): a client that sends slowly or never finishes is cut off.
	// IdleTimeout bounds an idle keep-alive connection (2m). They apply to Server and Serve.
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	IdleTimeout       time.Duration
}

// withDefaults fills in the zero fields.
func (c Config) withDefaults() Config {
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.MaxContentBytes == 0 {
		c.MaxContentBytes = DefaultMaxContentBytes
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.ReadHeaderTimeout == 0 {
		c.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if c.ReadTimeout == 0 {
		c.ReadTimeout = DefaultReadTimeout
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.MCPSessions == 0 {
		c.MCPSessions = DefaultMCPSessions
	}
	if c.MCPSessionsPerTenant == 0 {
		c.MCPSessionsPerTenant = min(DefaultMCPSessionsPerTenant, c.MCPSessions)
	}
	return c
}

// Validate reports the first field that cannot work: a negative size (body or content),
// duration or MCP session limit, a per-tenant MCP session limit above the global one, an empty token, or a token's
// tenant that is not a valid tenant token.
func (c Config) Validate() error {
	switch {
	case c.MaxBodyBytes < 0:
		return fmt.Errorf("gateway: max body bytes %d must not be negative", c.MaxBodyBytes)
	case c.MaxContentBytes < 0:
		return fmt.Errorf("gateway: max content bytes %d must not be negative", c.MaxContentBytes)
	case c.Timeout < 0:
		return fmt.Errorf("gateway: timeout %s must not be negative", c.Timeout)
	case c.ReadHeaderTimeout < 0 || c.ReadTimeout < 0 || c.IdleTimeout < 0:
		return errors.New("gateway: read header, read and idle timeouts must not be negative")
	case c.MCPSessions < 0 || c.MCPSessionsPerTenant < 0:
		return fmt.Errorf("gateway: MCP sessions %d and MCP sessions per tenant %d must not be negative", c.MCPSessions, c.MCPSessionsPerTenant)
	case c.MCPSessionsPerTenant > c.MCPSessions:
		return fmt.Errorf("gateway: MCP sessions per tenant %d must not exceed MCP sessions %d", c.MCPSessionsPerTenant, c.MCPSessions)
	}
	for token, tenant := range c.Tokens {
		if token == "" {
			return errors.New("gateway: tokens: a token is empty")
		}
		if err := events.ValidateToken("tenant", tenant); err != nil {
			return fmt.Errorf("gateway: tokens: %w", err)
		}
	}
	return nil
}

// Gateway serves the HTTP API on one NATS connection. It is safe for concurrent use.
type Gateway struct {
	cfg    Config
	nc     *nats.Conn
	js     jetstream.JetStream
	topo   events.Topology
	log    zerolog.Logger
	tokens map[[sha256.Size]byte]string
	mux    *http.ServeMux
	dlq    *deadletter.Reader

	mu       sync.Mutex
	sessions *session.Store
	long     *longterm.Store
	turns    jetstream.Stream

	owners ownerCache   // the owners of sessions read by the owner check (admit.go)
	group  *groupCommit // writes batch requests that arrive together as one (group.go)

	mcp mcpServers
}

// New returns a gateway that publishes and requests on nc and reads the buckets of topo through
// js. The buckets are bound on first use, so the gateway may start before they exist. It fails
// when the config or the topology is not valid or a connection is missing.
func New(cfg Config, nc *nats.Conn, js jetstream.JetStream, topo events.Topology, log zerolog.Logger) (*Gateway, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := topo.Validate(); err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	if nc == nil || js == nil {
		return nil, errors.New("gateway: a NATS connection and its JetStream context are required")
	}
	g := &Gateway{
		cfg: cfg, nc: nc, js: js, topo: topo,
		log:    log.With().Str("component", "gateway").Logger(),
		tokens: make(map[[sha256.Size]byte]string, len(cfg.Tokens)),
		mux:    http.NewServeMux(),
		dlq:    deadletter.NewReader(js, topo),
		group:  &groupCommit{js: js, timeout: cfg.Timeout, metrics: cfg.Metrics},
	}
	g.mcp.max, g.mcp.perTenant = cfg.MCPSessions, cfg.MCPSessionsPerTenant
	// Tokens are looked up by their hash, so the lookup takes no time that depends on how much of
	// a guessed token is right.
	for token, tenant := range cfg.Tokens {
		g.tokens[sha256.Sum256([]byte(token))] = tenant
	}
	for _, rt := range g.routes() {
		g.mux.Handle(rt.Method+" "+rt.Pattern, rt.handler)
	}
	return g, nil
}

// mcpPattern is the streamable HTTP MCP endpoint of one user's session.
const mcpPattern = "/v1/tenants/{tenant}/users/{user}/sessions/{session}/mcp"

// factPattern is one fact of a user.
const factPattern = "/v1/tenants/{tenant}/users/{user}/facts/{id}"

// Route is one route of the API: an HTTP method and a net/http ServeMux path pattern.
type Route struct {
	Method  string
	Pattern string
	handler http.Handler
}

// routes lists every route; New registers them and the OpenAPI test checks the document
// against them.
func (g *Gateway) routes() []Route {
	return []Route{
		{http.MethodPost, "/v1/tenants/{tenant}/events", g.tenant(g.postEvents)},
		{http.MethodPost, "/v1/tenants/{tenant}/retrieve", g.tenant(g.postRetrieve)},
		{http.MethodGet, "/v1/tenants/{tenant}/sessions/{session}", g.tenant(g.getSession)},
		{http.MethodGet, "/v1/tenants/{tenant}/sessions/{session}/events/{id}", g.tenant(g.getEventStatus)},
		{http.MethodGet, "/v1/tenants/{tenant}/dead-letters", g.tenant(g.getDeadLetters)},
		{http.MethodGet, "/v1/tenants/{tenant}/users/{user}/facts", g.tenant(g.getFacts)},
		{http.MethodGet, "/v1/tenants/{tenant}/users/{user}/graph", g.tenant(g.getGraph)},
		{http.MethodPost, "/v1/tenants/{tenant}/sessions/{session}/end", g.tenant(g.postEnd)},
		{http.MethodGet, factPattern, g.tenant(g.getFact)},
		{http.MethodPut, factPattern, g.tenant(g.correctFact)},
		{http.MethodPatch, factPattern, g.tenant(g.correctFact)},
		{http.MethodDelete, factPattern, g.tenant(g.deleteFact)},
		{http.MethodDelete, "/v1/tenants/{tenant}/users/{user}", g.tenant(g.deleteUser)},
		{http.MethodPost, mcpPattern, g.tenant(g.serveMCP)},
		{http.MethodGet, mcpPattern, g.tenant(g.serveMCP)},
		{http.MethodDelete, mcpPattern, g.tenant(g.serveMCP)},
		{http.MethodGet, "/v1/openapi.json", http.HandlerFunc(serveOpenAPI)},
	}
}

// Routes lists the method and pattern of every route the gateway serves.
func (g *Gateway) Routes() []Route {
	rs := g.routes()
	for i := range rs {
		rs[i].handler = nil
	}
	return rs
}

// Handler returns the gateway's routes, all under /v1/. An unknown path gets a 404 problem, a
// known path with another method a 405 problem with Allow.
func (g *Gateway) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		_, pattern := g.mux.Handler(r)
		defer func() {
			took := time.Since(start)
			ev := g.log.Debug()
			if sw.status >= 500 {
				ev = g.log.Warn()
			}
			ev.Str("method", r.Method).Str("path", r.URL.Path).Int("status", sw.status).Dur("took", took).Msg("http request")
			route := pattern
			if route == "" {
				route = "unrouted"
			} else if _, p, ok := strings.Cut(route, " "); ok {
				route = p // "POST /v1/…" → "/v1/…"; the method is a label of its own
			}
			status := sw.status
			if status == 0 {
				status = http.StatusOK
			}
			g.cfg.Metrics.HTTP(route, r.Method, status, took)
		}()
		if pattern == "" {
			notRouted(sw, r, g.mux)
			return
		}
		g.mux.ServeHTTP(sw, r)
	})
}

// notRouted answers a request no route matches with a problem: 405 (with Allow) when the path
// exists with other methods, else 404.
func notRouted(w http.ResponseWriter, r *http.Request, mux *http.ServeMux) {
	h, _ := mux.Handler(r)
	rec := &headerRecorder{header: http.Header{}}
	h.ServeHTTP(rec, r)
	if allow := rec.header.Get("Allow"); allow != "" {
		w.Header().Set("Allow", allow)
	}
	status := rec.status
	if status == 0 || status < 400 {
		status = http.StatusNotFound
	}
	detail := "no route for " + r.URL.Path
	if status == http.StatusMethodNotAllowed {
		detail = fmt.Sprintf("%s is not allowed on %s (allowed: %s)", r.Method, r.URL.Path, rec.header.Get("Allow"))
	}
	writeProblem(w, r, problem(status, "", detail))
}

// headerRecorder keeps what the mux's own 404 or 405 handler would answer.
type headerRecorder struct {
	header http.Header
	status int
}

func (h *headerRecorder) Header() http.Header         { return h.header }
func (h *headerRecorder) Write(b []byte) (int, error) { return len(b), nil }
func (h *headerRecorder) WriteHeader(status int)      { h.status = status }

// statusWriter records the status of a response for the request log.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(status int) {
	if s.status == 0 {
		s.status = status
	}
	s.ResponseWriter.WriteHeader(status)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Server returns an http.Server for Handler with the configured timeouts: headers within
// ReadHeaderTimeout, the whole request within ReadTimeout, the response within the time the
// slowest request may take (a retrieve waiting its longest), idle connections closed after
// IdleTimeout. Set its Addr before ListenAndServe.
func (g *Gateway) Server() *http.Server {
	return &http.Server{
		Handler:           g.Handler(),
		ReadHeaderTimeout: g.cfg.ReadHeaderTimeout,
		ReadTimeout:       g.cfg.ReadTimeout,
		WriteTimeout:      g.cfg.ReadTimeout + g.cfg.Timeout + events.MaxWaitMS*time.Millisecond + 5*time.Second,
		IdleTimeout:       g.cfg.IdleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          stdlog.New(g.log, "", 0),
	}
}

// Serve serves the API on ln until ctx ends, then shuts down: it stops accepting, lets the
// requests in flight finish for up to Timeout, and returns. It returns nil after a shutdown
// asked for by ctx, else the error that stopped the server.
func (g *Gateway) Serve(ctx context.Context, ln net.Listener) error {
	srv := g.Server()
	srv.BaseContext = func(net.Listener) context.Context { return context.WithoutCancel(ctx) }
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	g.log.Info().Str("addr", ln.Addr().String()).Msg("http gateway listening")
	select {
	case err := <-errc:
		return fmt.Errorf("serving http on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), g.cfg.Timeout)
	defer cancel()
	err := srv.Shutdown(sctx)
	if err != nil {
		_ = srv.Close()
	}
	<-errc
	if err != nil {
		return fmt.Errorf("shutting down http: %w", err)
	}
	g.log.Info().Msg("http gateway stopped")
	return nil
}

// stores binds the session and long-term stores on first use and returns them.
func (g *Gateway) stores(ctx context.Context) (*session.Store, *longterm.Store, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.sessions == nil {
		st, err := session.NewStore(ctx, g.js, g.topo)
		if err != nil {
			return nil, nil, err
		}
		g.sessions = st.Instrument(integrity.NewReporter(g.cfg.Metrics, g.log))
	}
	if g.long == nil {
		lt, err := longterm.Open(ctx, g.js, g.topo)
		if err != nil {
			return nil, nil, err
		}
		g.long = lt.Instrument(integrity.NewReporter(g.cfg.Metrics, g.log))
	}
	return g.sessions, g.long, nil
}
