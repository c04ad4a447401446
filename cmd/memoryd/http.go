package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/daemon"
	"github.com/agentmem/agentmem/internal/health"
	"github.com/agentmem/agentmem/internal/metrics"
)

// serveHTTP starts memoryd's HTTP server on addr ("" : none) in the background until ctx ends:
// the health endpoints and /metrics.
func serveHTTP(ctx context.Context, addr string, dm *daemon.Daemon, m *metrics.Metrics, log zerolog.Logger) error {
	if addr == "" {
		return nil
	}
	hs := health.New(log)
	hs.Add("nats", health.NATS(dm.Conn()))
	hs.Handle("GET /metrics", m.Handler())
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: hs.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()
	go func() {
		log.Info().Str("addr", l.Addr().String()).Msg("HTTP server")
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error().Err(err).Msg("HTTP server failed")
		}
	}()
	return nil
}
