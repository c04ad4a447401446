package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/daemon"
	"github.com/agentmem/agentmem/internal/gateway"
	"github.com/agentmem/agentmem/internal/health"
	"github.com/agentmem/agentmem/internal/inspector"
	"github.com/agentmem/agentmem/internal/limits"
	"github.com/agentmem/agentmem/internal/metrics"
	"github.com/agentmem/agentmem/pkg/events"
	"github.com/agentmem/agentmem/pkg/memory"
)

// httpConfig is what memoryd's HTTP server serves.
type httpConfig struct {
	Addr         string            // "" : no HTTP server
	Topology     events.Topology   // the daemon's
	Tokens       map[string]string // gateway bearer tokens → tenant (none: no authentication)
	InspectorKey string            // bearer token of the inspector's API, every tenant ("" : none)
	// InspectorTenantKeys are bearer tokens of the inspector's API scoped to one tenant each.
	InspectorTenantKeys map[string]string
	Budget              memory.Budget // ingest's: the inspector's gauge draws its pressure threshold
	// MCPSessions and MCPSessionsPerTenant bound the open MCP sessions (gateway.Config).
	MCPSessions, MCPSessionsPerTenant int
	// MaxContentBytes and Limits are ingest's: the gateway refuses a turn ingest would refuse
	// for its size.
	MaxContentBytes int
	Limits          *limits.Limiter
}

// validate refuses, before anything starts, an inspector that would hand every tenant's memory
// to whoever reaches a non-loopback --http without a token.
func (c httpConfig) validate() error {
	if c.Addr == "" {
		return nil
	}
	key := c.InspectorKey
	for k := range c.InspectorTenantKeys {
		key = k
	}
	if err := inspector.CheckExposure(c.Addr, key); err != nil {
		return fmt.Errorf("--inspector-token is required when --http listens on a non-loopback address (%s): "+
			"the inspector shows every tenant's memory; set one, or bind --http to 127.0.0.1", c.Addr)
	}
	return nil
}

// listenHTTP takes --http's address (nil for none), so that memoryd fails at once, naming it,
// when another process listens there.
func listenHTTP(addr string) (net.Listener, error) {
	if addr == "" {
		return nil, nil
	}
	l, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("--http: %s is already in use by another process (another memoryd?)", addr)
	}
	if err != nil {
		return nil, fmt.Errorf("--http: %w", err)
	}
	return l, nil
}

// serveHTTP serves memoryd's HTTP server on l in the background until ctx ends: the HTTP API and
// MCP endpoints (package gateway) under /v1/, the memory inspector under /inspector/, the
// health endpoints and /metrics. It closes l when it fails.
func serveHTTP(ctx context.Context, cfg httpConfig, l net.Listener, dm *daemon.Daemon, m *metrics.Metrics, log zerolog.Logger) (err error) {
	if l == nil {
		return nil
	}
	defer func() {
		if err != nil {
			_ = l.Close()
		}
	}()
	js, err := jetstream.New(dm.Conn())
	if err != nil {
		return err
	}
	gw, err := gateway.New(gateway.Config{Tokens: cfg.Tokens, Metrics: m, MCPSessions: cfg.MCPSessions, MCPSessionsPerTenant: cfg.MCPSessionsPerTenant,
		MaxContentBytes: cfg.MaxContentBytes, Limits: cfg.Limits},
		dm.Conn(), js, cfg.Topology, log)
	if err != nil {
		return err
	}
	// With tenants of its own (HTTP tokens, or a NATS server that requires authentication) the
	// inspector needs a token of its own, on loopback too.
	multi := len(cfg.Tokens) > 0 || dm.Conn().AuthRequired()
	ins, err := inspector.New(inspector.Config{Topology: cfg.Topology, Token: cfg.InspectorKey, TenantTokens: cfg.InspectorTenantKeys,
		MultiTenant: multi, Listen: cfg.Addr, Budget: cfg.Budget, Memory: m.Footprint().Report}, dm.Conn(), js, log)
	if err != nil {
		return err
	}
	hs := health.New(log)
	hs.Add("nats", health.NATS(dm.Conn()))
	hs.Handle("GET /metrics", m.Handler())
	hs.Handle("/v1/", bodyDeadline(gw.Handler(), gateway.DefaultReadTimeout))
	hs.Handle("/inspector/", http.StripPrefix("/inspector", ins.Handler()))
	hs.Handle("GET /{$}", http.RedirectHandler("/inspector/", http.StatusFound))
	// No server-wide read or write timeout: the inspector's live feed and MCP's event streams
	// stay open. Request bodies of the API get their own deadline (bodyDeadline), NATS work its
	// own (gateway.Config.Timeout).
	srv := &http.Server{Handler: hs.Handler(), ReadHeaderTimeout: gateway.DefaultReadHeaderTimeout,
		IdleTimeout: gateway.DefaultIdleTimeout, MaxHeaderBytes: 64 << 10}
	go func() {
		<-ctx.Done()
		ins.Close() // ends the live feeds, so that Shutdown does not wait for them
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()
	go func() {
		log.Info().Str("addr", l.Addr().String()).Str("api", "/v1/").Str("inspector", "/inspector/").Msg("HTTP server")
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error().Err(err).Msg("HTTP server failed")
		}
	}()
	return nil
}

// bodyDeadline gives a client d to send a request's body (a slow or stalled client is cut
// off), except on an MCP event stream (GET …/mcp), which stays open.
func bodyDeadline(h http.Handler, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !(r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/mcp")) {
			if err := http.NewResponseController(w).SetReadDeadline(time.Now().Add(d)); err != nil && !errors.Is(err, http.ErrNotSupported) {
				http.Error(w, fmt.Sprintf("setting the read deadline: %v", err), http.StatusInternalServerError)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}
