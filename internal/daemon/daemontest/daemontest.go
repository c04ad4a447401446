// Package daemontest starts a real in-process memoryd (daemon.Start: embedded NATS with
// JetStream and every worker) for tests, with a connection of the test's own, and for runnable
// examples, which have no testing.T.
package daemontest

import (
	"context"
	"log"
	"os"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker"
	"github.com/agentmem/agentmem/internal/daemon"
	"github.com/agentmem/agentmem/internal/ingest"
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

// Run starts a daemon with the defaults of a test (embedded NATS on a free loopback port, data in
// a new temporary directory whose name starts with name, sessions never ended for idleness) for
// a runnable example. It returns the URL an agent connects to and a function that stops the
// daemon and removes its data. It exits the program when the daemon cannot start.
func Run(name string) (url string, stop func()) {
	dir, err := os.MkdirTemp("", name+"-")
	if err != nil {
		log.Fatal(err)
	}
	d, err := daemon.Start(context.Background(), daemon.Config{
		Broker: broker.Config{Listen: "127.0.0.1:-1", DataDir: dir},
		Ingest: ingest.Config{IdleTimeout: -1},
	}, zerolog.Nop())
	if err != nil {
		_ = os.RemoveAll(dir)
		log.Fatal(err)
	}
	return d.URL(), func() {
		if err := d.Stop(); err != nil {
			log.Print(err)
		}
		_ = os.RemoveAll(dir)
	}
}
