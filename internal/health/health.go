// Package health serves the liveness and readiness endpoints of a process over HTTP: /healthz
// answers 200 while the process runs; /readyz answers 200 once every registered check passes
// (the NATS connection is up, the workers started) and 503 with the failing checks otherwise.
package health

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
)

// Check reports nil when its part is ready.
type Check func() error

// Server is a health endpoint.
type Server struct {
	mu     sync.Mutex
	checks map[string]Check
	extra  map[string]http.Handler
	log    zerolog.Logger
}

// New returns a server with no checks (ready at once).
func New(log zerolog.Logger) *Server {
	return &Server{checks: map[string]Check{}, extra: map[string]http.Handler{}, log: log.With().Str("component", "health").Logger()}
}

// Handle serves h on pattern (a net/http ServeMux pattern such as "GET /metrics") next to the
// health endpoints. Call it before Handler or Serve.
func (s *Server) Handle(pattern string, h http.Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.extra[pattern] = h
}

// Add registers a readiness check under a name.
func (s *Server) Add(name string, c Check) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checks[name] = c
}

// NATS is a check that the connection is connected.
func NATS(nc *nats.Conn) Check {
	return func() error {
		if !nc.IsConnected() {
			return errors.New("nats: " + nc.Status().String())
		}
		return nil
	}
}

// Ready is a check that passes once ready is closed.
func Ready(ready <-chan struct{}) Check {
	return func() error {
		select {
		case <-ready:
			return nil
		default:
			return errors.New("starting")
		}
	}
}

// Handler serves /healthz and /readyz.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}`))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		failing := s.failing()
		w.Header().Set("Content-Type", "application/json")
		if len(failing) > 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			_ = json.NewEncoder(w).Encode(map[string]any{"status": "not ready", "failing": failing})
			return
		}
		_, _ = w.Write([]byte(`{"status":"ready"}`))
	})
	s.mu.Lock()
	for p, h := range s.extra {
		mux.Handle(p, h)
	}
	s.mu.Unlock()
	return mux
}

func (s *Server) failing() map[string]string {
	s.mu.Lock()
	names := make([]string, 0, len(s.checks))
	for n := range s.checks {
		names = append(names, n)
	}
	checks := s.checks
	s.mu.Unlock()
	sort.Strings(names)
	out := map[string]string{}
	for _, n := range names {
		if err := checks[n](); err != nil {
			out[n] = err.Error()
		}
	}
	return out
}

// Serve listens on addr until ctx is cancelled; "" disables it.
func (s *Server) Serve(ctx context.Context, addr string) error {
	if addr == "" {
		<-ctx.Done()
		return nil
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()
	s.log.Info().Str("addr", l.Addr().String()).Msg("health endpoint")
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
