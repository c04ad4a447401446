package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmem/agentmem/internal/gateway"
	"github.com/agentmem/agentmem/internal/mcpserver"
)

// bearer adds a bearer token to every request of the MCP client.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// mcpConnect connects the SDK's own client over streamable HTTP to the gateway's MCP endpoint.
func mcpConnect(t *testing.T, url, token string) (*mcp.ClientSession, error) {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1, HTTPClient: &http.Client{Transport: bearer{token}}}, nil)
	if err == nil {
		t.Cleanup(func() { _ = cs.Close() })
	}
	return cs, err
}

func mcpCall[T any](t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) T {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil || res.IsError {
		t.Fatalf("%s: %v %+v", name, err, res)
	}
	var out T
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return out
}

// TestMCPOverTheGateway mounts MCP on the gateway: the tenant, user and session are the URL's;
// the bearer token must be the tenant's; two users' endpoints do not share memory.
func TestMCPOverTheGateway(t *testing.T) {
	e := start(t, gateway.Config{Tokens: map[string]string{"tok-acme": "acme", "tok-beta": "beta"}})
	alice := e.srv.URL + "/v1/tenants/acme/users/alice/sessions/s1/mcp"
	cs, err := mcpConnect(t, alice, "tok-acme")
	if err != nil {
		t.Fatal(err)
	}
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	if want := []string{"forget_user", "get_context", "list_facts", "recall", "remember"}; !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}
	rem := mcpCall[mcpserver.RememberOutput](t, cs, "remember", map[string]any{"content": "I moved to Lyon last spring"})
	got := mcpCall[mcpserver.RecallOutput](t, cs, "recall", map[string]any{"query": "Lyon"})
	if len(got.Entries) == 0 || got.Entries[0].ID != rem.ID {
		t.Fatalf("recall %+v does not find %s first", got.Entries, rem.ID)
	}
	// The turn went to acme/s1 as alice's, like any published turn.
	r := e.do(t, request{method: "GET", path: "/v1/tenants/acme/sessions/s1", header: map[string]string{"Authorization": "Bearer tok-acme"}})
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `"user":"alice"`) || !strings.Contains(string(r.body), rem.ID) {
		t.Fatalf("session after remember: %d %s", r.status, r.body)
	}

	// Another user of the tenant sees nothing of alice's.
	bob, err := mcpConnect(t, e.srv.URL+"/v1/tenants/acme/users/bob/sessions/s2/mcp", "tok-acme")
	if err != nil {
		t.Fatal(err)
	}
	if got := mcpCall[mcpserver.RecallOutput](t, bob, "recall", map[string]any{"query": "Lyon"}); len(got.Entries) != 0 {
		t.Fatalf("bob recalls alice's memory: %+v", got.Entries)
	}

	// Another tenant's token, no token, a bad user: refused before MCP sees the request.
	for _, c := range []struct {
		url, token string
		status     int
	}{
		{alice, "tok-beta", http.StatusForbidden},
		{alice, "", http.StatusUnauthorized},
		{e.srv.URL + "/v1/tenants/acme/users/al%20ice/sessions/s1/mcp", "tok-acme", http.StatusBadRequest},
	} {
		h := map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
		if c.token != "" {
			h["Authorization"] = "Bearer " + c.token
		}
		r := e.do(t, request{method: "POST", path: strings.TrimPrefix(c.url, e.srv.URL), header: h,
			body: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`})
		if r.status != c.status || !strings.HasPrefix(r.header.Get("Content-Type"), "application/problem+json") {
			t.Errorf("%s with token %q: %d %s, want a %d problem", c.url, c.token, r.status, r.body, c.status)
		}
	}
}
