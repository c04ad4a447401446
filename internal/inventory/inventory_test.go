package inventory_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/daemon"
	"github.com/agentmem/agentmem/internal/daemon/daemontest"
	"github.com/agentmem/agentmem/internal/fact"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/internal/inventory"
	"github.com/agentmem/agentmem/internal/longterm"
	"github.com/agentmem/agentmem/internal/metrics"
	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/internal/usage"
	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
	"github.com/agentmem/agentmem/pkg/memory"
)

type env struct {
	nc   *nats.Conn
	js   jetstream.JetStream
	topo events.Topology
}

func start(t *testing.T) *env {
	t.Helper()
	_, nc, js := daemontest.Start(t, daemon.Config{Ingest: ingest.Config{IdleTimeout: -1}})
	return &env{nc: nc, js: js, topo: events.DefaultTopology()}
}

func (e *env) client(t *testing.T, tenant string) *client.Client {
	t.Helper()
	cl, err := client.New(e.nc, client.Options{Tenant: tenant})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

func (e *env) publish(t *testing.T, tenant, sess, user string, contents ...string) {
	t.Helper()
	cl := e.client(t, tenant)
	for i, c := range contents {
		role := []string{"user", "assistant"}[i%2]
		if _, err := cl.Publish(context.Background(), client.Turn{Session: sess, User: user, Role: role, Content: c}); err != nil {
			t.Fatal(err)
		}
	}
}

// waitApplied waits until every consumer of the turns stream has nothing pending or
// unacknowledged, and the session headers say what want says.
func (e *env) waitApplied(t *testing.T, want map[session.Key]func(session.Header) bool) {
	t.Helper()
	store, err := session.NewStore(context.Background(), e.js, e.topo)
	if err != nil {
		t.Fatal(err)
	}
	brokertest.CheckFor(t, 30*time.Second, 20*time.Millisecond, func() error {
		lags, err := metrics.ConsumerLag(context.Background(), e.js, e.topo, func(stream, _ string) bool { return stream == e.topo.TurnsStream() })
		if err != nil {
			return err
		}
		for _, l := range lags {
			if l.Pending > 0 || l.AckPending > 0 {
				return fmt.Errorf("%s: %d pending, %d unacknowledged", l.Consumer, l.Pending, l.AckPending)
			}
		}
		for k, ok := range want {
			h, _, err := store.Header(context.Background(), k)
			if err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
			if !ok(h) {
				return fmt.Errorf("%s: header %+v", k, h)
			}
		}
		return nil
	})
}

func addFact(t *testing.T, lt *longterm.Store, tenant, user, content, key string, at time.Time) longterm.Fact {
	t.Helper()
	f := longterm.Fact{ID: fact.ID(tenant, user, content), Tenant: tenant, User: user, Content: content, Category: "identity",
		Key: key, ValidFrom: at, Provenance: []string{"t-" + content}, Confidence: 1, Extractor: "test"}
	if _, err := lt.AddFact(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestStatsPerTenant(t *testing.T) {
	e := start(t)
	ctx := context.Background()

	// A scripted history: acme has two sessions (one ended), beta one ended session and a bad
	// turn, acme2 (a name that starts like acme) one turn.
	e.publish(t, "acme", "s1", "alice", "ok", "sure", "see you")
	e.publish(t, "acme", "s2", "bob", "hm", "right")
	if _, err := e.client(t, "acme").EndSession(ctx, "s1", "alice"); err != nil {
		t.Fatal(err)
	}
	e.publish(t, "beta", "s1", "carol", "yes", "no")
	if _, err := e.client(t, "beta").EndSession(ctx, "s1", "carol"); err != nil {
		t.Fatal(err)
	}
	ev, err := events.NewEvent("bad-1", events.TypeTurn, "test", time.Now(), map[string]any{"role": "robot", "content": "x", "user": "dave"})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := events.BinaryMsg("memory.turns.beta.s9", ev)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.js.PublishMsg(ctx, msg); err != nil {
		t.Fatal(err)
	}
	e.publish(t, "acme2", "s1", "erin", "hello")
	e.waitApplied(t, map[session.Key]func(session.Header) bool{
		{Tenant: "acme", Session: "s1"}:  func(h session.Header) bool { return h.Turns == 3 && h.Ended },
		{Tenant: "acme", Session: "s2"}:  func(h session.Header) bool { return h.Turns == 2 },
		{Tenant: "beta", Session: "s1"}:  func(h session.Header) bool { return h.Turns == 2 && h.Ended },
		{Tenant: "beta", Session: "s9"}:  func(h session.Header) bool { return h.Rejected == 1 },
		{Tenant: "acme2", Session: "s1"}: func(h session.Header) bool { return h.Turns == 1 },
	})

	// Long-term records and usage, written the way the extractor and compressor write them.
	lt, err := longterm.Open(ctx, e.js, e.topo)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	addFact(t, lt, "acme", "alice", "lives in Paris", "user.city", t0)
	addFact(t, lt, "acme", "alice", "lives in Berlin", "user.city", t0.Add(time.Hour)) // supersedes Paris
	addFact(t, lt, "acme", "alice", "likes Go", "", t0)
	gone := addFact(t, lt, "acme", "bob", "uses vim", "", t0)
	if _, _, err := lt.DeleteFact(ctx, "acme", "bob", gone.ID, t0.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	addFact(t, lt, "beta", "carol", "speaks Chinese", "", t0)
	for i := range 2 {
		if _, err := lt.PutSummary(ctx, longterm.Summary{ID: fmt.Sprintf("sum_%d", i), Tenant: "acme", User: "alice", Session: "s1",
			Content: "a summary", Timestamp: t0, Replaces: []string{"x"}, Provenance: []string{"x"}, Summarizer: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	us, err := usage.Open(ctx, e.js, e.topo)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []struct {
		tenant, session string
		u               memory.Usage
	}{
		{"acme", "s1", memory.Usage{Calls: 2, InputTokens: 100, OutputTokens: 20}},
		{"acme", "s2", memory.Usage{Calls: 1, InputTokens: 10, OutputTokens: 5}},
		{"beta", "s1", memory.Usage{Calls: 1, InputTokens: 1, OutputTokens: 1}},
	} {
		if err := us.Add(ctx, u.tenant, u.session, u.u); err != nil {
			t.Fatal(err)
		}
	}

	acme := inventory.Tenant{Tenant: "acme",
		Sessions: inventory.Sessions{Total: 2, Open: 1, Ended: 1}, Users: 2,
		Turns: inventory.Turns{Stored: 6, Applied: 5},
		Facts: inventory.Facts{Active: 2, Superseded: 1, Deleted: 1}, Summaries: 2,
		Usage: memory.Usage{Calls: 3, InputTokens: 110, OutputTokens: 25}}
	acme2 := inventory.Tenant{Tenant: "acme2",
		Sessions: inventory.Sessions{Total: 1, Open: 1}, Users: 1, Turns: inventory.Turns{Stored: 1, Applied: 1}}
	beta := inventory.Tenant{Tenant: "beta",
		Sessions: inventory.Sessions{Total: 2, Open: 1, Ended: 1}, Users: 1,
		Turns: inventory.Turns{Stored: 4, Applied: 2, Rejected: 1},
		Facts: inventory.Facts{Active: 1}, DeadLetters: 1,
		Usage: memory.Usage{Calls: 1, InputTokens: 1, OutputTokens: 1}}

	inv := inventory.New(e.js, e.topo)
	t.Run("every tenant", func(t *testing.T) {
		rep, err := inv.Report(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		want := []inventory.Tenant{acme, acme2, beta}
		if len(rep.Tenants) != len(want) {
			t.Fatalf("tenants %+v", rep.Tenants)
		}
		var total inventory.Tenant
		for i, w := range want {
			if rep.Tenants[i] != w {
				t.Fatalf("tenant %d:\n got %+v\nwant %+v", i, rep.Tenants[i], w)
			}
			total.Sessions.Total += w.Sessions.Total
			total.Turns.Stored += w.Turns.Stored
			total.DeadLetters += w.DeadLetters
		}
		if rep.Total.Sessions.Total != total.Sessions.Total || rep.Total.Turns.Stored != total.Turns.Stored ||
			rep.Total.DeadLetters != total.DeadLetters || rep.Unattributed != 0 {
			t.Fatalf("total %+v, unattributed %d", rep.Total, rep.Unattributed)
		}
		ingest0 := false
		for _, l := range rep.Consumers {
			if l.Consumer == ingest.TurnsConsumerName(e.topo, 0) && l.Stream == e.topo.TurnsStream() {
				ingest0 = l.Pending == 0 && l.AckPending == 0
			}
		}
		if !ingest0 {
			t.Fatalf("consumers %+v: want %s with nothing pending", rep.Consumers, ingest.TurnsConsumerName(e.topo, 0))
		}
	})
	for _, want := range []inventory.Tenant{acme, acme2, beta} {
		t.Run("only "+want.Tenant, func(t *testing.T) {
			rep, err := inv.Report(ctx, want.Tenant)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Tenants) != 1 || rep.Tenants[0] != want {
				t.Fatalf("got %+v\nwant %+v", rep.Tenants, want)
			}
			total := want
			total.Tenant = "total"
			if rep.Total != total {
				t.Fatalf("total %+v", rep.Total)
			}
		})
	}
	t.Run("unknown tenant", func(t *testing.T) {
		rep, err := inv.Report(ctx, "nobody")
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Tenants) != 1 || rep.Tenants[0] != (inventory.Tenant{Tenant: "nobody"}) {
			t.Fatalf("got %+v", rep.Tenants)
		}
	})
	t.Run("bad tenant", func(t *testing.T) {
		if _, err := inv.Report(ctx, "a.b"); err == nil {
			t.Fatal("a bad tenant was accepted")
		}
	})
}

// Session headers rewritten while the inventory reads them count once each.
func TestStatsCountRewrittenHeadersOnce(t *testing.T) {
	b := brokertest.Start(t)
	ctx := context.Background()
	topo := events.DefaultTopology()
	if err := topo.Ensure(ctx, b.JS); err != nil {
		t.Fatal(err)
	}
	kv, err := b.JS.KeyValue(ctx, topo.SessionBucket())
	if err != nil {
		t.Fatal(err)
	}
	const sessions = 700
	put := func(i, turns int) error {
		h := session.Header{V: 1, Tenant: "acme", Session: fmt.Sprintf("s%d", i), User: fmt.Sprintf("u%d", i%7), Turns: turns}
		data, err := json.Marshal(h)
		if err != nil {
			return err
		}
		_, err = kv.Put(ctx, "acme."+h.Session, data)
		return err
	}
	for i := range sessions {
		if err := put(i, 1); err != nil {
			t.Fatal(err)
		}
	}
	stop, done := make(chan struct{}), make(chan error, 1)
	go func() {
		for n := 0; ; n++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			// Rewrite headers from the front of the bucket's stream to its end, where a read
			// that has passed them meets them again.
			if err := put(n%sessions, 1); err != nil {
				done <- err
				return
			}
		}
	}()
	inv := inventory.New(b.JS, topo)
	for range 10 {
		rep, err := inv.Report(ctx, "acme")
		if err != nil {
			t.Fatal(err)
		}
		got := rep.Tenants[0]
		if got.Sessions.Total != sessions || got.Sessions.Open != sessions || got.Turns.Applied != sessions || got.Users != 7 {
			t.Fatalf("while headers were rewritten: %+v", got)
		}
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
