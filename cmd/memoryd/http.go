package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
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
	InspectorKey string            // bearer token of the inspector's API ("" : none)
	Budget       memory.Budget     // ingest's: the inspector's gauge draws its pressure threshold
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
	if err := inspector.CheckExposure(c.Addr, c.InspectorKey); err != nil {
		return fmt.Errorf("--inspector-token is required when --http listens on a non-loopback address (%s): "+
			"the inspector shows every tenant's memory; set one, or bind --http to 127.0.0.1", c.Addr)
	}
	return nil
}

// serveHTTP starts memoryd's HTTP server in the background until ctx ends: the HTTP API and
// MCP endpoints (package gateway) under /v1/, the memory inspector under /inspector/, the
// health endpoints and /metrics.
func serveHTTP(ctx context.Context, cfg httpConfig, dm *daemon.Daemon, m *metrics.Metrics, log zerolog.Logger) error {
	if cfg.Addr == "" {
		return nil
	}
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
	ins, err := inspector.New(inspector.Config{Topology: cfg.Topology, Token: cfg.InspectorKey, Listen: cfg.Addr, Budget: cfg.Budget}, dm.Conn(), js, log)
	if err != nil {
		return err
	}
	hs := health.New(log)
	hs.Add("nats", health.NATS(dm.Conn()))
	hs.Handle("GET /metrics", m.Handler())
	hs.Handle("/v1/", bodyDeadline(gw.Handler(), gateway.DefaultReadTimeout))
	hs.Handle("/inspector/", http.StripPrefix("/inspector", ins.Handler()))
	hs.Handle("GET /{$}", http.RedirectHandler("/inspector/", http.StatusFound))
	l, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
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
