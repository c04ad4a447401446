package langchaingo_test

import (
	"testing"

	"github.com/agentmem/agentmem/internal/daemon"
	"github.com/agentmem/agentmem/internal/daemon/daemontest"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/pkg/client"
)

// runMemoryd starts an in-process memoryd (embedded NATS on a free loopback port, data in a
// temporary directory, the offline summariser and fact extractor) and returns the URL an agent
// connects to and a function that stops it and removes its data. This module is in agentmem's
// repository, so it may import agentmem's internal packages; an application runs memoryd instead.
func runMemoryd() (url string, stop func()) { return daemontest.Run("agentmem-langchaingo") }

// newClient starts a memoryd for the test and returns a client of tenant acme on it.
func newClient(t *testing.T) *client.Client {
	t.Helper()
	_, nc, _ := daemontest.Start(t, daemon.Config{Ingest: ingest.Config{IdleTimeout: -1}})
	c, err := client.New(nc, client.Options{Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
