package mcpserver_test

import (
	"context"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmem/agentmem/internal/mcpserver"
)

func TestStreamableHTTP(t *testing.T) {
	_, nc := startDaemon(t)
	s := newServer(t, nc, "acme", "alice", "s1")
	hs := httptest.NewServer(s.HTTPHandler())
	t.Cleanup(hs.Close)

	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() }) // before hs.Close: ends the session's event stream

	checkToolList(t, cs)
	rem := callOK[mcpserver.RememberOutput](t, cs, "remember", map[string]any{"content": "I moved to Lyon last spring"})
	got := callOK[mcpserver.RecallOutput](t, cs, "recall", map[string]any{"query": "where does the user live? Lyon"})
	if !slices.Contains(ids(got), rem.ID) {
		t.Fatalf("recall over HTTP %+v does not find %s", got.Entries, rem.ID)
	}
}
