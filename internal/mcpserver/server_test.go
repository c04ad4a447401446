package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker"
	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/daemon"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/internal/mcpserver"
	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

// startDaemon runs agentmem in-process (embedded NATS and every worker) and returns it with a
// client connection; both are closed at cleanup, the connection first.
func startDaemon(t *testing.T) (*daemon.Daemon, *nats.Conn) {
	t.Helper()
	cfg := daemon.Config{
		Broker: broker.Config{Listen: "127.0.0.1:-1", DataDir: t.TempDir()},
		Ingest: ingest.Config{IdleTimeout: -1},
	}
	d, err := daemon.Start(context.Background(), cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Stop() })
	nc, err := nats.Connect(d.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return d, nc
}

// newServer builds an MCP server of tenant/user/session on nc.
func newServer(t *testing.T, nc *nats.Conn, tenant, user, session string) *mcpserver.Server {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := mcpserver.New(mcpserver.Config{Tenant: tenant, User: user, Session: session, Version: "test"},
		nil, nc, js, events.Topology{}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// connect connects the SDK's own client to s over in-memory transports.
func connect(t *testing.T, s *mcpserver.Server) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.MCP().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		_ = ss.Wait()
	})
	return cs
}

// call calls a tool; a protocol error fails the test, a tool error is returned in the result.
func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", name, err)
	}
	return res
}

// callOK calls a tool that must succeed and decodes its structured result into out.
func callOK[T any](t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) T {
	t.Helper()
	res := call(t, cs, name, args)
	if res.IsError {
		t.Fatalf("%s(%v): tool error: %s", name, args, text(res))
	}
	var out T
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: decoding %s: %v", name, b, err)
	}
	return out
}

// callErr calls a tool that must fail with a tool error (not a protocol error) and returns its
// message.
func callErr(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) string {
	t.Helper()
	res := call(t, cs, name, args)
	if !res.IsError {
		t.Fatalf("%s(%v) succeeded, want a tool error: %s", name, args, text(res))
	}
	return text(res)
}

func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func ids(out mcpserver.RecallOutput) []string {
	var s []string
	for _, e := range out.Entries {
		s = append(s, e.ID)
	}
	return s
}

// checkToolList checks that the seven tools are listed with schemas that name none of tenant,
// user or session and allow no other properties.
func checkToolList(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	required := map[string][]string{
		"remember": {"content"}, "recall": {"query"}, "get_context": {"query"}, "list_facts": nil, "forget_user": nil, "end_session": nil,
		"list_entities": nil,
	}
	props := map[string][]string{
		"remember":      {"content", "role", "tool"},
		"recall":        {"query", "limit", "sources", "types"},
		"get_context":   {"query", "tokens"},
		"list_facts":    {"history"},
		"list_entities": {"at", "history"},
		"forget_user":   {"confirm"},
		"end_session":   nil,
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		if tool.Description == "" {
			t.Errorf("%s has no description", tool.Name)
		}
		b, _ := json.Marshal(tool.InputSchema)
		var schema struct {
			Type                 string                     `json:"type"`
			Properties           map[string]json.RawMessage `json:"properties"`
			Required             []string                   `json:"required"`
			AdditionalProperties *bool                      `json:"additionalProperties"`
		}
		if err := json.Unmarshal(b, &schema); err != nil {
			t.Fatalf("%s: schema %s: %v", tool.Name, b, err)
		}
		if schema.Type != "object" || schema.AdditionalProperties == nil || *schema.AdditionalProperties {
			t.Errorf("%s: schema %s: want an object without additional properties", tool.Name, b)
		}
		var got []string
		for p, ps := range schema.Properties {
			got = append(got, p)
			if !strings.Contains(string(ps), `"description"`) {
				t.Errorf("%s.%s has no description", tool.Name, p)
			}
		}
		slices.Sort(got)
		want := slices.Sorted(slices.Values(props[tool.Name]))
		if !slices.Equal(got, want) {
			t.Errorf("%s: properties %v, want %v", tool.Name, got, want)
		}
		slices.Sort(schema.Required)
		if !slices.Equal(schema.Required, required[tool.Name]) {
			t.Errorf("%s: required %v, want %v", tool.Name, schema.Required, required[tool.Name])
		}
		if tool.OutputSchema == nil {
			t.Errorf("%s has no output schema", tool.Name)
		}
	}
	slices.Sort(names)
	if want := []string{"end_session", "forget_user", "get_context", "list_entities", "list_facts", "recall", "remember"}; !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}
	for _, tool := range res.Tools {
		if tool.Name == "recall" {
			b, _ := json.Marshal(tool.InputSchema)
			for _, want := range []string{`"enum":["short","long","archive"]`, `"enum":["FACT","SUMMARY","CONVERSATION","TOOL_RESULT"]`, `"maximum":200`} {
				if !strings.Contains(string(b), want) {
					t.Errorf("recall schema %s lacks %s", b, want)
				}
			}
		}
	}
}

func TestToolsListWithSchemas(t *testing.T) {
	_, nc := startDaemon(t)
	checkToolList(t, connect(t, newServer(t, nc, "acme", "alice", "s1")))
}

func TestEveryToolEndToEnd(t *testing.T) {
	_, nc := startDaemon(t)
	cs := connect(t, newServer(t, nc, "acme", "alice", "s1"))

	rem := callOK[mcpserver.RememberOutput](t, cs, "remember", map[string]any{"content": "I prefer tea over coffee"})
	if rem.ID == "" || !rem.Stored || rem.Duplicate {
		t.Fatalf("remember: %+v", rem)
	}
	callOK[mcpserver.RememberOutput](t, cs, "remember", map[string]any{"content": "Noted, tea it is.", "role": "assistant"})

	// recall waits for the last remembered turn (read-your-writes): no polling needed.
	got := callOK[mcpserver.RecallOutput](t, cs, "recall", map[string]any{"query": "tea or coffee?"})
	if !slices.Contains(ids(got), rem.ID) {
		t.Fatalf("recall %+v does not find %s", got.Entries, rem.ID)
	}
	for _, e := range got.Entries {
		if e.ID == rem.ID && (e.Type != "CONVERSATION" || e.Source != "short" || e.Content != "I prefer tea over coffee" || e.Timestamp.IsZero() || e.Score <= 0) {
			t.Fatalf("entry %+v", e)
		}
	}
	limited := callOK[mcpserver.RecallOutput](t, cs, "recall", map[string]any{"query": "tea", "limit": 1, "types": []string{"CONVERSATION"}, "sources": []string{"short"}})
	if len(limited.Entries) != 1 {
		t.Fatalf("limit 1: %+v", limited.Entries)
	}

	res := call(t, cs, "get_context", map[string]any{"query": "does the user prefer tea or coffee?", "tokens": 500})
	if res.IsError || !strings.Contains(text(res), "I prefer tea over coffee") {
		t.Fatalf("get_context: %s", text(res))
	}
	ctxOut := callOK[mcpserver.ContextOutput](t, cs, "get_context", map[string]any{"query": "tea"})
	if !strings.Contains(ctxOut.Context, "tea over coffee") || ctxOut.Tokens <= 0 {
		t.Fatalf("get_context: %+v", ctxOut)
	}

	// Facts are extracted when the session ends (offline rules); wait for the fact event.
	cl, err := client.New(nc, client.Options{Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	added := make(chan string, 16)
	stop, err := cl.Watch(func(e client.Event) {
		if e.Subject != "memory.facts.acme.alice" {
			return
		}
		if fe, err := events.DecodeData[events.FactEvent](e.Event); err == nil && fe.Op == events.FactAdded {
			select {
			case added <- fe.Fact.Content:
			default:
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stop() }()
	if end := callOK[mcpserver.EndSessionOutput](t, cs, "end_session", nil); !end.Ended || end.ID == "" {
		t.Fatalf("end_session: %+v", end)
	}
	select {
	case content := <-added:
		t.Logf("fact added: %s", content)
	case <-time.After(30 * time.Second):
		t.Fatal("no fact within 30s of the session end")
	}
	facts := callOK[mcpserver.ListFactsOutput](t, cs, "list_facts", nil)
	if facts.Total == 0 || len(facts.Facts) != facts.Total || !strings.Contains(strings.ToLower(facts.Facts[0].Content), "tea over coffee") ||
		facts.Facts[0].State != "live" || facts.Facts[0].ID == "" {
		t.Fatalf("list_facts: %+v", facts)
	}
	history := callOK[mcpserver.ListFactsOutput](t, cs, "list_facts", map[string]any{"history": true})
	if history.Total < facts.Total {
		t.Fatalf("history %+v has fewer facts than live %+v", history, facts)
	}

	// forget_user refuses without confirm, and nothing is forgotten.
	for _, args := range []map[string]any{nil, {"confirm": false}} {
		if msg := callErr(t, cs, "forget_user", args); !strings.Contains(msg, "confirm: true") {
			t.Fatalf("refusal %q does not say how to confirm", msg)
		}
	}
	if again := callOK[mcpserver.ListFactsOutput](t, cs, "list_facts", nil); again.Total != facts.Total {
		t.Fatalf("an unconfirmed forget changed the facts: %+v", again)
	}

	fo := callOK[mcpserver.ForgetOutput](t, cs, "forget_user", map[string]any{"confirm": true})
	if fo.Forgotten["turns"] == 0 && fo.Forgotten["facts"] == 0 {
		t.Fatalf("forget_user: %+v", fo)
	}
	if after := callOK[mcpserver.ListFactsOutput](t, cs, "list_facts", map[string]any{"history": true}); after.Total != 0 {
		t.Fatalf("facts after forget_user: %+v", after)
	}
	// Retrievers drop their caches on the forget announcement, asynchronously: bounded poll.
	brokertest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		for _, src := range [][]string{nil, {"short", "long", "archive"}} {
			args := map[string]any{"query": "tea coffee"}
			if src != nil {
				args["sources"] = src
			}
			if out := callOK[mcpserver.RecallOutput](t, cs, "recall", args); len(out.Entries) != 0 {
				return fmt.Errorf("recall %v after forget_user: %+v", src, out.Entries)
			}
		}
		return nil
	})
}

func TestToolsCannotReachAnotherTenantOrUser(t *testing.T) {
	_, nc := startDaemon(t)
	alice := connect(t, newServer(t, nc, "acme", "alice", "s1"))
	bob := connect(t, newServer(t, nc, "acme", "bob", "s2"))
	otherTenant := connect(t, newServer(t, nc, "other", "alice", "s1"))

	secret := callOK[mcpserver.RememberOutput](t, alice, "remember", map[string]any{"content": "My locker code is 4711"})

	// Arguments naming a tenant, user or session are not part of any schema: the call is refused
	// before it reaches agentmem, and nothing is stored anywhere.
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"remember", map[string]any{"content": "Bob's locker code is 1234", "user": "bob"}},
		{"remember", map[string]any{"content": "Other tenant's locker code is 99", "tenant": "other", "session": "s1"}},
		{"recall", map[string]any{"query": "locker code", "user": "bob"}},
		{"recall", map[string]any{"query": "locker code", "tenant": "other", "user": "alice", "session": "s1"}},
		{"get_context", map[string]any{"query": "locker code", "session": "s2"}},
		{"list_facts", map[string]any{"user": "bob"}},
		{"list_entities", map[string]any{"user": "bob"}},
		{"forget_user", map[string]any{"confirm": true, "user": "bob", "tenant": "other"}},
		{"end_session", map[string]any{"session": "s2"}},
	} {
		msg := callErr(t, alice, tc.tool, tc.args)
		if !strings.Contains(msg, "validating") {
			t.Errorf("%s(%v): %s", tc.tool, tc.args, msg)
		}
	}

	// Alice's memory holds only what she stored, and the refused forget removed nothing.
	got := callOK[mcpserver.RecallOutput](t, alice, "recall", map[string]any{"query": "locker code", "sources": []string{"short", "archive"}})
	if !slices.Equal(ids(got), []string{secret.ID}) {
		t.Fatalf("alice recalls %+v, want only %s", got.Entries, secret.ID)
	}
	// Bob (same tenant) and alice of another tenant see none of it, through any source.
	for name, cs := range map[string]*mcp.ClientSession{"acme/bob": bob, "other/alice": otherTenant} {
		out := callOK[mcpserver.RecallOutput](t, cs, "recall", map[string]any{"query": "locker code", "sources": []string{"short", "long", "archive"}})
		if len(out.Entries) != 0 {
			t.Fatalf("%s recalls %+v", name, out.Entries)
		}
		if c := callOK[mcpserver.ContextOutput](t, cs, "get_context", map[string]any{"query": "locker code"}); strings.Contains(c.Context, "4711") {
			t.Fatalf("%s gets context %q", name, c.Context)
		}
	}
	// And through the contract directly: nothing was stored for bob or for tenant other.
	for _, tc := range []struct{ tenant, session, user string }{{"acme", "s2", "bob"}, {"other", "s1", "alice"}} {
		cl, err := client.New(nc, client.Options{Tenant: tc.tenant})
		if err != nil {
			t.Fatal(err)
		}
		r, err := cl.Retrieve(context.Background(), events.RetrieveRequest{Query: "locker code", Session: tc.session, User: tc.user,
			Sources: []string{"short", "long", "archive"}})
		if err != nil || len(r.Entries) != 0 {
			t.Fatalf("%s/%s: %+v %v", tc.tenant, tc.user, r.Entries, err)
		}
	}
	// Bob's confirmed forget forgets bob, not alice.
	callOK[mcpserver.ForgetOutput](t, bob, "forget_user", map[string]any{"confirm": true})
	if got := callOK[mcpserver.RecallOutput](t, alice, "recall", map[string]any{"query": "locker code"}); !slices.Contains(ids(got), secret.ID) {
		t.Fatalf("bob's forget removed alice's memory: %+v", got.Entries)
	}
}

func TestInvalidArgumentsAreToolErrors(t *testing.T) {
	_, nc := startDaemon(t)
	cs := connect(t, newServer(t, nc, "acme", "alice", "s1"))
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"remember", map[string]any{}, "content"},
		{"remember", map[string]any{"content": ""}, "content"},
		{"remember", map[string]any{"content": "x", "role": "robot"}, "role"},
		{"recall", map[string]any{"query": "x", "limit": 500}, "limit"},
		{"recall", map[string]any{"query": "x", "sources": []string{"everywhere"}}, "sources"},
		{"recall", map[string]any{"query": "x", "types": []string{"GOSSIP"}}, "types"},
		{"recall", map[string]any{"query": "   "}, "query"},
		{"get_context", map[string]any{"query": "x", "tokens": -1}, "tokens"},
	} {
		msg := callErr(t, cs, tc.tool, tc.args)
		if !strings.Contains(msg, tc.want) {
			t.Errorf("%s(%v): %q does not name %s", tc.tool, tc.args, msg, tc.want)
		}
		t.Logf("%s(%v): %s", tc.tool, tc.args, msg)
	}
}

func TestUnavailableServiceIsAToolError(t *testing.T) {
	env := brokertest.Start(t) // NATS and JetStream, but no streams and no agentmem workers
	// One attempt each: with the default client a tool keeps trying for client.DefaultRetry
	// before it says so (TestToolsRideThroughAMomentWithoutService).
	cl, err := client.New(env.NC, client.Options{Tenant: "acme", Source: "agentmem/mcp", Retry: -1})
	if err != nil {
		t.Fatal(err)
	}
	s, err := mcpserver.New(mcpserver.Config{Tenant: "acme", User: "alice", Session: "s1", Version: "test"}, cl, env.NC, env.JS, events.Topology{}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	cs := connect(t, s)
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"remember", map[string]any{"content": "hello"}},
		{"recall", map[string]any{"query": "hello"}},
		{"get_context", map[string]any{"query": "hello"}},
		{"list_facts", nil},
		{"list_entities", nil},
		{"forget_user", map[string]any{"confirm": true}},
		{"end_session", nil},
	} {
		msg := callErr(t, cs, tc.tool, tc.args)
		if !strings.Contains(msg, "unavailable") || !strings.HasPrefix(msg, tc.tool+":") {
			t.Errorf("%s: %q", tc.tool, msg)
		}
		t.Logf("%s: %s", tc.tool, msg)
	}
}

// The tools' client is agentmem's Go client with its defaults: a moment without a stream leader
// or a retriever (a leader election, a retriever moving to another server) costs a tool call
// latency, not an error.
func TestToolsRideThroughAMomentWithoutService(t *testing.T) {
	env := brokertest.Start(t)
	cs := connect(t, newServer(t, env.NC, "acme", "alice", "s1"))
	nc := env.Connect(t)
	// remember: the first three attempts find no stream (the reply nats.go takes for "no
	// responders"), then the turns stream appears.
	var attempts atomic.Int32
	created := make(chan error, 1)
	var spy *nats.Subscription
	spy, err := nc.Subscribe("memory.turns.acme.s1", func(m *nats.Msg) {
		_ = nc.PublishMsg(&nats.Msg{Subject: m.Reply, Header: nats.Header{"Status": []string{"503"}}})
		if attempts.Add(1) == 3 {
			_ = spy.Unsubscribe()
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_, err := env.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"memory.turns.>"}})
				created <- err
			}()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	out := callOK[mcpserver.RememberOutput](t, cs, "remember", map[string]any{"content": "I live in Porto."})
	if err := <-created; err != nil {
		t.Fatal(err)
	}
	if !out.Stored || attempts.Load() < 3 {
		t.Fatalf("remember: %+v after %d attempts", out, attempts.Load())
	}
	// recall: the first two requests find no retriever (the reply nats.go takes for "no
	// responders"), the third one is answered.
	attempts.Store(0)
	sub, err := nc.Subscribe("memory.retrieve.acme", func(m *nats.Msg) {
		r := &nats.Msg{Subject: m.Reply, Header: nats.Header{"Status": []string{"503"}}}
		if attempts.Add(1) == 3 {
			r = &nats.Msg{Subject: m.Reply, Data: []byte(`{"entries":[{"id":"t1","type":"CONVERSATION","content":"I live in Porto.","timestamp":"2026-11-30T10:00:00Z","source":"short","score":1}]}`)}
		}
		_ = nc.PublishMsg(r)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	got := callOK[mcpserver.RecallOutput](t, cs, "recall", map[string]any{"query": "Porto"})
	if len(got.Entries) != 1 || got.Entries[0].ID != "t1" || attempts.Load() != 3 {
		t.Fatalf("recall: %+v after %d attempts", got, attempts.Load())
	}
}

func TestNewValidatesConfig(t *testing.T) {
	env := brokertest.Start(t)
	for _, tc := range []struct {
		cfg  mcpserver.Config
		want string
	}{
		{mcpserver.Config{User: "u", Session: "s"}, "tenant"},
		{mcpserver.Config{Tenant: "a.b", User: "u", Session: "s"}, "tenant"},
		{mcpserver.Config{Tenant: "t", Session: "s"}, "user"},
		{mcpserver.Config{Tenant: "t", User: "u>", Session: "s"}, "user"},
		{mcpserver.Config{Tenant: "t", User: "u"}, "session"},
		{mcpserver.Config{Tenant: "t", User: "u", Session: "s", ContextTokens: -1}, "context tokens"},
	} {
		if _, err := mcpserver.New(tc.cfg, nil, env.NC, env.JS, events.Topology{}, zerolog.Nop()); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error naming %s", tc.cfg, err, tc.want)
		}
	}
	if _, err := mcpserver.New(mcpserver.Config{Tenant: "t", User: "u", Session: "s"}, nil, nil, nil, events.Topology{}, zerolog.Nop()); err == nil {
		t.Error("a nil connection was accepted")
	}
}

// TestEndSessionSharesFactsWithOtherSessions: what one MCP client told agentmem reaches another
// session of the same user once the first calls end_session (the daemon has no idle end here, so
// nothing else would end it).
func TestEndSessionSharesFactsWithOtherSessions(t *testing.T) {
	_, nc := startDaemon(t)
	first := connect(t, newServer(t, nc, "acme", "alice", "s1"))
	second := connect(t, newServer(t, nc, "acme", "alice", "s2"))

	said := callOK[mcpserver.RememberOutput](t, first, "remember", map[string]any{"content": "I live in Paris."})
	callOK[mcpserver.EndSessionOutput](t, first, "end_session", nil)

	var fact mcpserver.Fact
	brokertest.CheckFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		out := callOK[mcpserver.ListFactsOutput](t, second, "list_facts", nil)
		for _, f := range out.Facts {
			if strings.Contains(f.Content, "Paris") {
				fact = f
				return nil
			}
		}
		return fmt.Errorf("the other session lists %+v", out.Facts)
	})
	got := callOK[mcpserver.RecallOutput](t, second, "recall", map[string]any{"query": "where does the user live? Paris", "sources": []string{"long"}})
	if !slices.Contains(ids(got), fact.ID) {
		t.Fatalf("the other session recalls %+v, not fact %s (stated by turn %s)", got.Entries, fact.ID, said.ID)
	}
}
