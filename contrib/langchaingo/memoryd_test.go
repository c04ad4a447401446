package langchaingo_test

import (
	"context"
	"log"
	"os"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker"
	"github.com/agentmem/agentmem/internal/daemon"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/pkg/client"
)

// runMemoryd starts an in-process memoryd (embedded NATS on a free loopback port, data in a
// temporary directory, the offline summariser and fact extractor) and returns the URL an agent
// connects to and a function that stops it and removes its data. This module is in agentmem's
// repository, so it may import agentmem's internal packages; an application runs memoryd instead.
func runMemoryd() (url string, stop func()) {
	dir, err := os.MkdirTemp("", "agentmem-langchaingo-")
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

// newClient starts a memoryd for the test and returns a client of tenant acme on it.
func newClient(t *testing.T) *client.Client {
	t.Helper()
	url, stop := runMemoryd()
	t.Cleanup(stop)
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	c, err := client.New(nc, client.Options{Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
