package embedder

import (
	"context"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/pkg/events"
	"github.com/agentmem/agentmem/pkg/memory"
)

// TestForgottenSessionIsDecidedAgain: once the watch reports a session's tombstone, the cache
// answers from what is stored (the tombstone applied nothing), not from the state it read before
// the forget, which says the turn was applied.
func TestForgottenSessionIsDecidedAgain(t *testing.T) {
	env := brokertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	topo := events.DefaultTopology()
	if err := topo.Ensure(ctx, env.JS); err != nil {
		t.Fatal(err)
	}
	store, err := session.NewStore(ctx, env.JS, topo)
	if err != nil {
		t.Fatal(err)
	}
	cache := newSessionCache(store, 16)
	type write struct {
		key       session.Key
		forgotten bool
	}
	writes := make(chan write, 8)
	if err := store.WatchCommits(ctx, func(k session.Key, forgotten bool) {
		cache.committed(k, forgotten)
		writes <- write{k, forgotten}
	}); err != nil {
		t.Fatal(err)
	}
	next := func() write {
		t.Helper()
		select {
		case w := <-writes:
			return w
		case <-ctx.Done():
			t.Fatal("no header write reported")
			return write{}
		}
	}

	key := session.Key{Tenant: "acme", Session: "s1"}
	s, err := store.Load(ctx, key, 1000)
	if err != nil {
		t.Fatal(err)
	}
	s.Add(memory.Entry{ID: "t1", Type: memory.TypeForRole("user"), Role: "user", Tokens: 3, Seq: 5, Timestamp: time.Now().UTC()}, 1000, "alice")
	s.Advance(5, time.Now())
	if _, err := store.Commit(ctx, s); err != nil {
		t.Fatal(err)
	}
	if w := next(); w.key != key || w.forgotten {
		t.Fatalf("a commit reported as %+v", w)
	}
	if applied, user, err := cache.decided(ctx, nil, key, "t1", 5, time.Second); err != nil || !applied || user != "alice" {
		t.Fatalf("before the forget: applied %v, user %q, %v", applied, user, err)
	}
	if err := store.Tombstone(ctx, key, 5); err != nil {
		t.Fatal(err)
	}
	if w := next(); w.key != key || !w.forgotten {
		t.Fatalf("the tombstone reported as %+v", w)
	}
	if applied, _, err := cache.decided(ctx, nil, key, "t1", 5, time.Second); err != nil || applied {
		t.Fatalf("after the forget: applied %v, %v; want not applied", applied, err)
	}
}
