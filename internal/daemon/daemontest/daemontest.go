// Package daemontest starts a real in-process memoryd (daemon.Start: embedded NATS with
// JetStream and every worker) for tests, with a connection of the test's own.
package daemontest

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/daemon"
)

// Start starts a daemon with cfg (on a random loopback port and a temporary data directory
// unless cfg names them) and connects to it; both are stopped when the test ends.
func Start(t testing.TB, cfg daemon.Config) (*daemon.Daemon, *nats.Conn, jetstream.JetStream) {
	t.Helper()
	if cfg.Broker.Listen == "" {
		cfg.Broker.Listen = "127.0.0.1:-1"
	}
	if cfg.Broker.DataDir == "" {
		cfg.Broker.DataDir = t.TempDir()
	}
	d, err := daemon.Start(context.Background(), cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(d.URL())
	if err != nil {
		_ = d.Stop()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		nc.Close()
		if err := d.Stop(); err != nil {
			t.Errorf("stopping the daemon: %v", err)
		}
	})
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return d, nc, js
}
