package eino_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/daemon"
	"github.com/agentmem/agentmem/internal/daemon/daemontest"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

// runMemoryd starts an in-process memoryd (embedded NATS on a free loopback port, data in a
// temporary directory, the offline summariser and fact extractor) and returns the URL an agent
// connects to and a function that stops it and removes its data. This module is in agentmem's
// repository, so it may import agentmem's internal packages; an application runs memoryd instead.
func runMemoryd() (url string, stop func()) { return daemontest.Run("agentmem-eino") }

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

// waitForFact polls agentmem until user has a live fact containing substr and returns it.
func waitForFact(ctx context.Context, c *client.Client, user, substr string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	req := events.RetrieveRequest{Query: substr, User: user, Sources: []string{events.SourceLong}}
	for {
		reply, err := c.Retrieve(ctx, req)
		if err == nil {
			for _, e := range append(reply.Entries, reply.Profile...) {
				if e.Type == "FACT" && strings.Contains(e.Content, substr) {
					return e.Content, nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("no fact of %s with %q: %w", user, substr, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
