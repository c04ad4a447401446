// Package inspector is the memory inspector: a web page, served from embedded static assets, and
// the JSON API under /api/ that it reads, for looking into agentmem while it runs. It shows the
// tenants and their sessions; a session's short-term entries, pending entries, budget gauge
// (with the pressure threshold) and summaries with the turns each one replaced; a user's facts
// with their history and provenance; a live feed of pressure, summary and fact events (Server-Sent
// Events from a NATS subscription); a search box that sends a retrieve request and shows the
// ranked entries with their score parts and the built context; the LLM usage report; and, for an
// operator of every tenant, where the process's memory sits (package footprint).
//
// The inspector reads what the workers wrote (session headers and chunks, the turns stream, the
// long-term, usage and event streams) and asks the retriever over NATS like any agent; it writes
// nothing. It needs a connection that may read every stream and bucket: memoryd's own. When
// authentication is on, that connection is the worker's or the admin's, so the HTTP endpoint
// itself must be protected: Config.Token adds a bearer token to every API call, and without one
// the inspector refuses to be served on anything but a loopback address (Config.Listen) and
// answers loopback callers only.
package inspector

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/footprint"
	"github.com/agentmem/agentmem/internal/integrity"
	"github.com/agentmem/agentmem/internal/longterm"
	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/internal/usage"
	"github.com/agentmem/agentmem/pkg/events"
	"github.com/agentmem/agentmem/pkg/memory"
)

//go:embed static
var static embed.FS

// Config configures the inspector.
type Config struct {
	// Topology names the streams and buckets to read (default events.DefaultTopology()).
	Topology events.Topology
	// Tenants, when set, is the allow-list of tenants the inspector shows; every other tenant is
	// not found. Empty shows every tenant.
	Tenants []string
	// Token, when set, is required as "Authorization: Bearer <token>" on every API call (the
	// event stream also takes it as the access_token query parameter, since a browser's
	// EventSource cannot set headers). The page itself holds no data and is served without it.
	// Without a token, Listen must be a loopback address and the API answers loopback callers
	// only (403 for any other remote address).
	Token string
	// TenantTokens maps more bearer tokens to the one tenant each may see (an operator of tenant
	// acme sees acme only: every other tenant is not found, and the lists, the usage report and
	// the live feed hold acme alone). They count as a token for the rules of Token.
	TenantTokens map[string]string
	// MultiTenant says that the service has tenants of its own (HTTP bearer tokens, or NATS
	// authentication): the inspector then serves nobody without a token, loopback callers
	// included (403 saying which flag sets one), since a local reverse proxy or sidecar would
	// otherwise hand every tenant's memory to whoever reaches it.
	MultiTenant bool
	// Listen is the host:port of the HTTP server that serves the inspector. Without a Token it
	// must be loopback (127.0.0.0/8, ::1, "localhost"); see CheckExposure.
	Listen string
	// Budget is ingest's token budget (ingest.Config.Budget): the gauge draws its Threshold(),
	// the tokens at which ingest raises pressure (default memory.DefaultBudget(), 80 % of
	// 196,700). Pass ingest's own.
	Budget memory.Budget
	// RequestTimeout bounds the reads and the retrieve request of one API call (default 10s).
	RequestTimeout time.Duration
	// Memory, when set, reports where the serving process's memory sits (the footprint
	// registry of its metrics): the overview shows it to a caller that may see every tenant.
	// Nil: GET /api/memory answers 404 and the overview has no memory panel.
	Memory func() footprint.Report
}

func (c Config) withDefaults() Config {
	if c.Topology.Prefix == "" {
		c.Topology = events.DefaultTopology()
	}
	if c.Budget == (memory.Budget{}) {
		c.Budget = memory.DefaultBudget()
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 10 * time.Second
	}
	return c
}

// Validate names the first bad field: the topology, no Token with a Listen that is not loopback
// (wrapping ErrTokenRequired), a tenant of the allow-list that is not a valid token, or a
// budget memory.Budget.Validate refuses.
func (c Config) Validate() error {
	if err := c.Topology.Validate(); err != nil {
		return fmt.Errorf("inspector: %w", err)
	}
	if err := CheckExposure(c.Listen, c.anyToken()); err != nil {
		return err
	}
	for tok, t := range c.TenantTokens {
		if tok == "" {
			return fmt.Errorf("inspector: TenantTokens: an empty token (of tenant %q)", t)
		}
		if tok == c.Token {
			return fmt.Errorf("inspector: TenantTokens: the token of tenant %q is also the token of every tenant", t)
		}
		if err := events.ValidateToken("tenant", t); err != nil {
			return fmt.Errorf("inspector: TenantTokens: %w", err)
		}
	}
	for _, t := range c.Tenants {
		if err := events.ValidateToken("tenant", t); err != nil {
			return fmt.Errorf("inspector: Tenants: %w", err)
		}
	}
	if err := c.Budget.Validate(); err != nil {
		return fmt.Errorf("inspector: Budget: %w", err)
	}
	return nil
}

// anyToken is a token the API requires, "" when it requires none.
func (c Config) anyToken() string {
	if c.Token != "" {
		return c.Token
	}
	for tok := range c.TenantTokens {
		return tok
	}
	return ""
}

// Inspector serves the memory inspector. It is safe for concurrent use.
type Inspector struct {
	cfg      Config
	nc       *nats.Conn
	js       jetstream.JetStream
	sessions *session.Store
	longterm *longterm.Store
	usage    *usage.Store
	allowed  map[string]bool
	log      zerolog.Logger

	closeOnce sync.Once
	closed    chan struct{}
}

// New binds the inspector to the session, long-term and usage buckets of cfg.Topology, which
// must exist (events.Topology.Ensure, done by memoryd at start-up). It fails on an invalid
// Config (no Token on a Listen that is not loopback: ErrTokenRequired) or a missing bucket. It
// logs whether the API requires the token or answers loopback callers only.
func New(cfg Config, nc *nats.Conn, js jetstream.JetStream, log zerolog.Logger) (*Inspector, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if nc == nil || js == nil {
		return nil, errors.New("inspector: a NATS connection and its JetStream context are required")
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.RequestTimeout)
	defer cancel()
	ss, err := session.NewStore(ctx, js, cfg.Topology)
	if err != nil {
		return nil, fmt.Errorf("inspector: %w", err)
	}
	lt, err := longterm.Open(ctx, js, cfg.Topology)
	if err != nil {
		return nil, fmt.Errorf("inspector: %w", err)
	}
	us, err := usage.Open(ctx, js, cfg.Topology)
	if err != nil {
		return nil, fmt.Errorf("inspector: %w", err)
	}
	// Corrupt values read as absent and are logged (package integrity).
	rep := integrity.NewReporter(nil, log.With().Str("component", "inspector").Logger())
	i := &Inspector{
		cfg: cfg, nc: nc, js: js, sessions: ss.Instrument(rep), longterm: lt.Instrument(rep), usage: us.Instrument(rep),
		log:    log.With().Str("component", "inspector").Logger(),
		closed: make(chan struct{}),
	}
	if len(cfg.Tenants) > 0 {
		i.allowed = make(map[string]bool, len(cfg.Tenants))
		for _, t := range cfg.Tenants {
			i.allowed[t] = true
		}
	}
	switch {
	case cfg.anyToken() != "":
		i.log.Info().Str("listen", cfg.Listen).Str("mode", "token").Int("tenant_tokens", len(cfg.TenantTokens)).
			Msg("inspector API requires a bearer token")
	case cfg.MultiTenant:
		i.log.Warn().Str("listen", cfg.Listen).Str("mode", "closed").
			Msg("inspector is closed: this service has tenants and the inspector has no token of its own (" + tokenFlags + ")")
	default:
		i.log.Warn().Str("listen", cfg.Listen).Str("mode", "loopback-only").Msg("inspector API has no token: it answers loopback callers only")
	}
	return i, nil
}

// Close ends every open event stream, so that an HTTP server's Shutdown does not wait for them.
// The handler keeps answering other requests.
func (i *Inspector) Close() {
	i.closeOnce.Do(func() { close(i.closed) })
}

// Handler serves the page at / (with its assets) and the JSON API under /api/. Mount it under
// a prefix with http.StripPrefix: the page uses relative URLs.
//
//	GET /api/tenants                                  tenants with their session and user counts
//	GET /api/tenants/{tenant}/sessions                every session header of the tenant
//	GET /api/tenants/{tenant}/sessions/{session}      entries, pending, budget, summaries, pressure
//	GET /api/tenants/{tenant}/users/{user}/facts      facts with history, summaries, provenance turns
//	GET /api/tenants/{tenant}/users/{user}/graph      entities and relations at ?at=, with their history
//	GET /api/usage                                    LLM usage of every tenant shown
//	GET /api/memory                                   where the process's memory sits (Config.Memory)
//	GET /api/tenants/{tenant}/usage                   LLM usage of one tenant
//	GET /api/tenants/{tenant}/search?q=…&session=…&user=…&limit=…&sources=…&context_tokens=…
//	GET /api/tenants/{tenant}/events                  Server-Sent Events: pressure, summary, fact
func (i *Inspector) Handler() http.Handler {
	api := http.NewServeMux()
	api.HandleFunc("GET /api/tenants", i.handleTenants)
	api.HandleFunc("GET /api/tenants/{tenant}/sessions", i.handleSessions)
	api.HandleFunc("GET /api/tenants/{tenant}/sessions/{session}", i.handleSession)
	api.HandleFunc("GET /api/tenants/{tenant}/users/{user}/facts", i.handleFacts)
	api.HandleFunc("GET /api/tenants/{tenant}/users/{user}/graph", i.handleGraph)
	api.HandleFunc("GET /api/usage", i.handleUsage)
	api.HandleFunc("GET /api/memory", i.handleMemory)
	api.HandleFunc("GET /api/tenants/{tenant}/usage", i.handleTenantUsage)
	api.HandleFunc("GET /api/tenants/{tenant}/search", i.handleSearch)
	api.HandleFunc("GET /api/tenants/{tenant}/events", i.handleEvents)
	api.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "", "no such API route: "+r.Method+" "+r.URL.Path)
	})

	assets, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded directory is part of the binary
	}
	files := http.FileServerFS(assets)

	mux := http.NewServeMux()
	mux.Handle("/api/", i.authorize(api))
	mux.Handle("/", files)
	return securityHeaders(mux)
}

// securityHeaders keeps the page to its own assets (no CDN, no inline script) and the answers
// uncached.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

// tokenFlags names the memoryd flags that give the inspector a token.
const tokenFlags = "set --inspector-token, or --inspector-tokens for tokens scoped to one tenant"

// authorize requires a token of the Config, when there is one, on every API call, and scopes the
// call to the token's tenant when it has one; without a token it lets loopback callers only
// through, or nobody when the service has tenants (Config.MultiTenant).
func (i *Inspector) authorize(next http.Handler) http.Handler {
	if i.cfg.anyToken() == "" {
		if i.cfg.MultiTenant {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				writeProblem(w, r, http.StatusForbidden,
					"this service has tenants, and the inspector shows every tenant's memory: it needs a token of its own, "+
						"on loopback too ("+tokenFlags+")")
			})
		}
		return i.loopbackOnly(next)
	}
	type grant struct {
		digest [sha256.Size]byte
		tenant string // "" for every tenant
	}
	var grants []grant
	if i.cfg.Token != "" {
		grants = append(grants, grant{digest: sha256.Sum256([]byte(i.cfg.Token))})
	}
	for tok, tenant := range i.cfg.TenantTokens {
		grants = append(grants, grant{digest: sha256.Sum256([]byte(tok)), tenant: tenant})
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok && isEventStream(r.URL.Path) {
			got, ok = r.URL.Query().Get("access_token"), true
		}
		var match *grant
		if ok {
			d := sha256.Sum256([]byte(got))
			for k := range grants {
				// Every grant is compared, in constant time, whichever matches.
				if subtle.ConstantTimeCompare(d[:], grants[k].digest[:]) == 1 {
					match = &grants[k]
				}
			}
		}
		if match == nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="agentmem inspector"`)
			writeError(w, http.StatusUnauthorized, "", "a bearer token is required")
			return
		}
		if match.tenant != "" {
			r = r.WithContext(context.WithValue(r.Context(), scopeKey{}, match.tenant))
		}
		next.ServeHTTP(w, r)
	})
}

// scopeKey is the context key of the one tenant a call's token may see.
type scopeKey struct{}

// scope is the one tenant the call's token may see, "" when it may see every tenant shown.
func scope(ctx context.Context) string {
	t, _ := ctx.Value(scopeKey{}).(string)
	return t
}

// isEventStream reports whether path is /api/tenants/{tenant}/events, the one route that takes
// the token from the query string.
func isEventStream(path string) bool {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	return len(parts) == 4 && parts[0] == "api" && parts[1] == "tenants" && parts[3] == "events"
}

// token reads and validates the path token name; it writes a 400 (or a 404 for a tenant outside
// the allow-list) and reports false when it is bad.
func (i *Inspector) token(w http.ResponseWriter, r *http.Request, name string) (string, bool) {
	v := r.PathValue(name)
	if err := events.ValidateToken(name, v); err != nil {
		writeError(w, http.StatusBadRequest, name, err.Error())
		return "", false
	}
	if name == "tenant" && !i.shows(r.Context(), v) {
		writeError(w, http.StatusNotFound, name, fmt.Sprintf("tenant %q is not inspected here", v))
		return "", false
	}
	return v, true
}

// shows reports whether the allow-list and the call's token (ctx) let the inspector show a
// tenant.
func (i *Inspector) shows(ctx context.Context, tenant string) bool {
	if s := scope(ctx); s != "" && s != tenant {
		return false
	}
	return i.allowed == nil || i.allowed[tenant]
}

// tenants returns the tenants the call may see, sorted, or nil when it may see every tenant.
func (i *Inspector) tenants(ctx context.Context) []string {
	if s := scope(ctx); s != "" {
		if !i.shows(ctx, s) {
			return []string{}
		}
		return []string{s}
	}
	if i.allowed == nil {
		return nil
	}
	out := make([]string, 0, len(i.allowed))
	for t := range i.allowed {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// bound is the context of one API call.
func (i *Inspector) bound(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), i.cfg.RequestTimeout)
}

// apiError is the body of every error answer, shaped like the services' error bodies.
type apiError struct {
	Error events.ErrorDetail `json:"error"`
}

func writeError(w http.ResponseWriter, code int, field, msg string) {
	writeJSON(w, code, apiError{Error: events.ErrorDetail{Code: code, Field: field, Message: msg}})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	writeJSONBody(w, code, v)
}

// writeJSONBody writes v as JSON with the Content-Type already set.
func writeJSONBody(w http.ResponseWriter, code int, v any) {
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// fail answers a failed read: 504 when the call ran out of time, 500 otherwise.
func (i *Inspector) fail(w http.ResponseWriter, r *http.Request, what string, err error) {
	code := http.StatusInternalServerError
	if errors.Is(err, context.DeadlineExceeded) {
		code = http.StatusGatewayTimeout
	}
	i.log.Warn().Err(err).Str("path", r.URL.Path).Msg(what)
	writeError(w, code, "", what+": "+err.Error())
}
