package inspector_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker"
	"github.com/agentmem/agentmem/internal/daemon"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/internal/inspector"
	"github.com/agentmem/agentmem/internal/metrics"
	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
	"github.com/agentmem/agentmem/pkg/memory"
)

// budgetTokens is the conversation budget of every session in these tests: pressure at 800.
const budgetTokens = 1000

// env is a real in-process agentmem (embedded NATS, every worker) with the inspector served by
// an httptest server on the daemon's own connection, as memoryd serves it.
type env struct {
	d   *daemon.Daemon
	nc  *nats.Conn // an agent's connection, for publishing and retrieving
	ins *inspector.Inspector
	srv *httptest.Server
}

func start(t testing.TB, cfg inspector.Config) *env {
	t.Helper()
	b := memory.DefaultBudget()
	b.ContextWindow = budgetTokens + b.System + b.Tools + b.Response
	// The daemon's metrics, whose memory report the inspector shows, as memoryd does.
	m := metrics.New()
	if cfg.Memory == nil {
		cfg.Memory = m.Footprint().Report
	}
	d, err := daemon.Start(context.Background(), daemon.Config{
		Broker:  broker.Config{Listen: "127.0.0.1:-1", DataDir: t.TempDir()},
		Ingest:  ingest.Config{Budget: b, IdleTimeout: -1},
		Metrics: m,
	}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(d.Conn())
	if err != nil {
		t.Fatal(err)
	}
	// The inspector draws ingest's budget and is told the listener's address, loopback, as
	// memoryd tells it --http's.
	if cfg.Budget == (memory.Budget{}) {
		cfg.Budget = b
	}
	srv := httptest.NewUnstartedServer(nil)
	if cfg.Listen == "" {
		cfg.Listen = srv.Listener.Addr().String()
	}
	ins, err := inspector.New(cfg, d.Conn(), js, zerolog.Nop())
	if err != nil {
		srv.Close()
		_ = d.Stop()
		t.Fatal(err)
	}
	nc, err := nats.Connect(d.URL())
	if err != nil {
		srv.Close()
		_ = d.Stop()
		t.Fatal(err)
	}
	srv.Config.Handler = ins.Handler()
	srv.Start()
	e := &env{d: d, nc: nc, ins: ins, srv: srv}
	t.Cleanup(func() {
		e.ins.Close()
		e.srv.Close()
		e.nc.Close()
		if err := e.d.Stop(); err != nil {
			t.Errorf("stopping the daemon: %v", err)
		}
	})
	return e
}

func (e *env) client(t testing.TB, tenant string) *client.Client {
	t.Helper()
	cl, err := client.New(e.nc, client.Options{Tenant: tenant, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// turn publishes a turn and waits until ingest applied it.
func (e *env) turn(t testing.TB, tenant, session, user, id, role, content string, at time.Time) {
	t.Helper()
	cl := e.client(t, tenant)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := cl.Publish(ctx, client.Turn{ID: id, Session: session, User: user, Role: role, Content: content, Time: at}); err != nil {
		t.Fatalf("publishing %s: %v", id, err)
	}
	if _, err := cl.Retrieve(ctx, events.RetrieveRequest{Query: "x", Session: session, After: id, WaitMS: 15000}); err != nil {
		t.Fatalf("waiting for %s to be applied: %v", id, err)
	}
}

func (e *env) end(t testing.TB, tenant, session, user string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := e.client(t, tenant).EndSession(ctx, session, user); err != nil {
		t.Fatalf("ending %s: %v", session, err)
	}
}

// get fetches an API path and decodes the JSON answer into v (when v is not nil); it returns
// the status code.
func (e *env) get(t testing.TB, path string, v any, header ...string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, e.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	if ct := res.Header.Get("Content-Type"); strings.HasPrefix(path, "/api/") && ct != "application/json; charset=utf-8" {
		t.Errorf("GET %s: Content-Type %q", path, ct)
	}
	if v != nil {
		if err := json.Unmarshal(body, v); err != nil {
			t.Fatalf("GET %s (%d): decoding %q: %v", path, res.StatusCode, body, err)
		}
	}
	return res.StatusCode
}

// filler returns ASCII text starting with prefix whose token estimate is exactly tokens.
func filler(t testing.TB, prefix string, tokens int) string {
	t.Helper()
	words := []string{"river", "stone", "cloud", "maple", "harbor", "lantern", "meadow", "copper", "violet", "canyon"}
	var b strings.Builder
	b.WriteString(prefix)
	for i := 0; b.Len() < 4*tokens; i++ {
		b.WriteString(" ")
		b.WriteString(words[i%len(words)])
	}
	s := b.String()[:4*tokens-1] + "."
	if got := memory.Estimate(s); got != tokens {
		t.Fatalf("filler of %d tokens estimates %d", tokens, got)
	}
	return s
}

// script is a session that crosses the pressure threshold in two steps.
type script struct {
	tenant, session, user string
	t0                    time.Time
	texts                 map[string]string
}

// Turn sizes: four of 150 tokens (600, 60 %), then one of 750 that evicts the three oldest
// (900 kept: a crossing at 90 %); t1-t4 are named for compression, which leaves the 100-token
// placeholder (SummaryTokens is capped at a tenth of the budget) and t5: 850, 85 %, still at
// or above the threshold.
const (
	smallTokens = 150
	bigTokens   = 750
)

func newScript(t testing.TB, tenant, session, user string) *script {
	s := &script{tenant: tenant, session: session, user: user, t0: time.Now().Add(-time.Hour).Truncate(time.Second), texts: map[string]string{}}
	s.texts["t1"] = filler(t, "I am planning a trip to the mountains next spring.", smallTokens)
	s.texts["t2"] = filler(t, "Mountains in spring are lovely; pack layers.", smallTokens)
	s.texts["t3"] = filler(t, "I also want to visit a lake near the mountains.", smallTokens)
	s.texts["t4"] = filler(t, "A lake trip pairs well with hiking.", smallTokens)
	s.texts["t5"] = filler(t, "I love writing Go, it is my favourite programming language.", bigTokens)
	return s
}

// below publishes t1-t4: 600 tokens, 60 % of the budget.
func (s *script) below(t testing.TB, e *env) {
	roles := []string{"user", "assistant", "user", "assistant"}
	for i, id := range []string{"t1", "t2", "t3", "t4"} {
		e.turn(t, s.tenant, s.session, s.user, id, roles[i], s.texts[id], s.t0.Add(time.Duration(i)*time.Minute))
	}
}

// cross publishes t5, which crosses the threshold.
func (s *script) cross(t testing.TB, e *env) {
	e.turn(t, s.tenant, s.session, s.user, "t5", "user", s.texts["t5"], s.t0.Add(5*time.Minute))
}
