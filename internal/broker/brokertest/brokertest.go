// Package brokertest starts a real in-process NATS server with JetStream for tests: a free port,
// storage in t.TempDir(), and cleanup that closes clients before shutting the server down.
package brokertest

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker"
)

// Env is a running test server with one client connection.
type Env struct {
	Broker *broker.Broker
	URL    string
	Dir    string
	NC     *nats.Conn
	JS     jetstream.JetStream
}

// Start starts a server on a free port with its store in a fresh temporary directory.
func Start(t testing.TB) *Env {
	t.Helper()
	return StartIn(t, t.TempDir(), "127.0.0.1:-1")
}

// StartIn starts a server with its store in dir, listening on listen (use "127.0.0.1:-1" for a
// free port, or the port of an earlier server to restart it on the same data).
func StartIn(t testing.TB, dir, listen string) *Env {
	t.Helper()
	b, err := broker.Start(broker.Config{Listen: listen, DataDir: dir, ReadyTimeout: 20 * time.Second}, zerolog.Nop())
	if err != nil {
		t.Fatalf("starting nats server: %v", err)
	}
	nc, err := nats.Connect(b.ClientURL(), nats.MaxReconnects(-1))
	if err != nil {
		b.Shutdown()
		t.Fatalf("connecting: %v", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		b.Shutdown()
		t.Fatalf("jetstream: %v", err)
	}
	env := &Env{Broker: b, URL: b.ClientURL(), Dir: dir, NC: nc, JS: js}
	t.Cleanup(env.Stop)
	return env
}

// Connect opens another client connection, with opts besides unlimited reconnects, that is
// closed at cleanup, before the server stops.
func (e *Env) Connect(t testing.TB, opts ...nats.Option) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(e.URL, append([]nats.Option{nats.MaxReconnects(-1)}, opts...)...)
	if err != nil {
		t.Fatalf("connecting: %v", err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// Stop closes the client and shuts the server down; it is safe to call twice.
func (e *Env) Stop() {
	if e.NC != nil && !e.NC.IsClosed() {
		e.NC.Close()
	}
	if e.Broker != nil {
		e.Broker.Shutdown()
		e.Broker = nil
	}
}

// CheckFor polls fn every interval until it returns nil or timeout passes, then fails the test
// with fn's last error.
func CheckFor(t testing.TB, timeout, interval time.Duration, fn func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var err error
	for {
		if err = fn(); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met after %s: %v", timeout, err)
		}
		timer := time.NewTimer(interval)
		<-timer.C
	}
}
