package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
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
	if want := []string{"end_session", "forget_user", "get_context", "list_entities", "list_facts", "recall", "remember"}; !slices.Equal(names, want) {
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

// TestMCPSessionsIsolatedPerTenant: tenant a opens more MCP sessions than its own limit and than
// the gateway's; tenant b's session, opened first, keeps working, a's excess closes a's own
// least recently used sessions only, and tenant c, with no session to give up, is refused with
// a 503 problem rather than close anyone's.
func TestMCPSessionsIsolatedPerTenant(t *testing.T) {
	const perTenant, global = 3, 4
	e := start(t, gateway.Config{MCPSessionsPerTenant: perTenant, MCPSessions: global,
		Tokens: map[string]string{"tok-a": "a", "tok-b": "b", "tok-c": "c"}})
	url := func(tenant, user string) string {
		return e.srv.URL + "/v1/tenants/" + tenant + "/users/" + user + "/sessions/s1/mcp"
	}
	b, err := mcpConnect(t, url("b", "bob"), "tok-b")
	if err != nil {
		t.Fatal(err)
	}
	mcpCall[mcpserver.RememberOutput](t, b, "remember", map[string]any{"content": "Bob keeps bees in Ghent"})

	var a []*mcp.ClientSession
	for i := range 2 * global {
		cs, err := mcpConnect(t, url("a", fmt.Sprintf("u%d", i)), "tok-a")
		if err != nil {
			t.Fatalf("tenant a's session %d: %v", i, err)
		}
		a = append(a, cs)
	}
	ctx := context.Background()
	for i, cs := range a {
		_, err := cs.ListTools(ctx, nil)
		if open := i >= len(a)-perTenant; open != (err == nil) {
			t.Errorf("tenant a's session %d: open %v, but ListTools: %v", i, open, err)
		}
	}

	// b's session is untouched: a real call through it finds what it remembered.
	got := mcpCall[mcpserver.RecallOutput](t, b, "recall", map[string]any{"query": "bees Ghent"})
	if len(got.Entries) == 0 || !strings.Contains(got.Entries[0].Content, "bees") {
		t.Fatalf("tenant b's recall after tenant a's sessions: %+v", got.Entries)
	}

	// The gateway is full (b's one and a's three): c has nothing of its own to give up.
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	r := e.do(t, request{method: "POST", path: strings.TrimPrefix(url("c", "carol"), e.srv.URL), body: init, header: map[string]string{
		"Authorization": "Bearer tok-c", "Content-Type": "application/json", "Accept": "application/json, text/event-stream"}})
	var p gateway.Problem
	_ = json.Unmarshal(r.body, &p)
	if r.status != http.StatusServiceUnavailable || !strings.HasPrefix(r.header.Get("Content-Type"), gateway.ContentTypeProblem) ||
		r.header.Get("Retry-After") == "" || !strings.Contains(p.Detail, fmt.Sprintf("limit of %d MCP sessions", global)) {
		t.Fatalf("tenant c in a full gateway: %d %q %s, want a 503 problem naming the limit", r.status, r.header.Get("Content-Type"), r.body)
	}
	if _, err := b.ListTools(ctx, nil); err != nil {
		t.Fatalf("tenant b's session after tenant c's refusal: %v", err)
	}
	// a, at its own limit in a full gateway, still opens sessions: each closes a's oldest.
	cs, err := mcpConnect(t, url("a", "late"), "tok-a")
	if err != nil {
		t.Fatalf("tenant a in a full gateway: %v", err)
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := a[len(a)-perTenant].ListTools(ctx, nil); err == nil {
		t.Error("tenant a's least recently used session is still open past its limit")
	}
	mcpCall[mcpserver.RecallOutput](t, b, "recall", map[string]any{"query": "bees"})
}
