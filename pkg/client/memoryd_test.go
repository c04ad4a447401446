package client_test

import (
	"context"
	"log"
	"os"

	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker"
	"github.com/agentmem/agentmem/internal/daemon"
	"github.com/agentmem/agentmem/internal/ingest"
)

// runMemoryd starts an in-process memoryd (embedded NATS on a free loopback port, data in a
// temporary directory, offline extractor) for the examples. It returns the URL an agent would
// connect to and a function that stops memoryd and removes its data.
func runMemoryd() (url string, stop func()) {
	dir, err := os.MkdirTemp("", "agentmem-example-")
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
