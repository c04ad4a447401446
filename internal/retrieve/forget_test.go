package retrieve_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/internal/archive"
	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

// archiveIDs retrieves a user's archived turns (the long-term sources left out) and returns their
// ids.
func (e *env) archiveIDs(t *testing.T, user, query string) []string {
	t.Helper()
	r, err := e.cl.Retrieve(context.Background(), events.RetrieveRequest{Query: query, User: user, Sources: []string{"archive"}, Limit: intp(50)})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, en := range r.Entries {
		ids = append(ids, en.ID)
	}
	slices.Sort(ids)
	return ids
}

// jetStream returns a JetStream client on the test's connection and the default topology.
func (e *env) jetStream(t *testing.T) (jetstream.JetStream, events.Topology) {
	t.Helper()
	js, err := jetstream.New(e.nc)
	if err != nil {
		t.Fatal(err)
	}
	return js, events.DefaultTopology()
}

// waitArchive waits (bounded polling) until the user's archived turns matching query are want.
func (e *env) waitArchive(t *testing.T, user, query string, want []string, what string) {
	t.Helper()
	brokertest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if ids := e.archiveIDs(t, user, query); !slices.Equal(ids, want) {
			return fmt.Errorf("%s: the view answers %v, want %v", what, ids, want)
		}
		return nil
	})
}

// TestForgetAnnouncedBeforeARequestIsAppliedFirst: a "forgotten" announcement the retriever's
// connection reads before a request drops the user's cached view before that request reads it.
// The user's turns are purged behind the retriever's back (no tombstone, nothing it watches), so
// only the announcement can take them out of the cached view; the announcement and the request
// go out on one connection, one right after the other, for ten users.
func TestForgetAnnouncedBeforeARequestIsAppliedFirst(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	js, topo := e.jetStream(t)
	const users = 10
	for i := range users {
		user, sess := fmt.Sprintf("u%d", i), fmt.Sprintf("s%d", i)
		e.seed(t, sess, user, []client.Turn{{Content: "my kitten is called Pixel"}, {Content: "she sleeps on the keyboard"}})
		if ids := e.archiveIDs(t, user, "kitten keyboard"); len(ids) != 2 {
			t.Fatalf("%s before the forget: %v, want both turns", user, ids)
		}
		if _, err := archive.Purge(ctx, js, topo.TurnsStream(), events.SessionFilter("acme", sess)); err != nil {
			t.Fatal(err)
		}
		if ids := e.archiveIDs(t, user, "kitten keyboard"); len(ids) != 2 {
			t.Fatalf("%s: the cached view should still hold both turns before the announcement, got %v", user, ids)
		}
	}
	for i := range users {
		user := fmt.Sprintf("u%d", i)
		msg, err := events.NewMsg(ctx, "acme", user, "forgotten-"+user, events.TypeFact, "test", time.Now(),
			events.FactEvent{Op: events.FactForgotten, Fact: events.Fact{ID: "user:" + user}})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.nc.PublishMsg(msg); err != nil {
			t.Fatal(err)
		}
		if ids := e.archiveIDs(t, user, "kitten keyboard"); len(ids) != 0 {
			t.Fatalf("%s: a request after the forget announcement was answered from the cached view: %v", user, ids)
		}
	}
}

// TestTombstonedSessionLeavesTheCachedArchive: when a session's header is replaced by a forget's
// tombstone, a cached view drops the turns it read of that session (no announcement needed), keeps
// the user's other sessions, and shows the session's new turns if it starts again.
func TestTombstonedSessionLeavesTheCachedArchive(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	js, topo := e.jetStream(t)
	e.seed(t, "s1", "alice", []client.Turn{{ID: "a1", Content: "my kitten is called Pixel"}, {ID: "a2", Content: "the kitten sleeps on the keyboard"}})
	e.seed(t, "s2", "alice", []client.Turn{{ID: "b1", Content: "a kitten video made me laugh"}})
	// A user's new session joins their archive once its reference to the user is written,
	// which may follow the session's commit (what seed waits for).
	brokertest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if ids := e.archiveIDs(t, "alice", "kitten"); !slices.Equal(ids, []string{"a1", "a2", "b1"}) {
			return fmt.Errorf("before: %v", ids)
		}
		return nil
	})
	store, err := session.NewStore(ctx, js, topo)
	if err != nil {
		t.Fatal(err)
	}
	turns, err := js.Stream(ctx, topo.TurnsStream())
	if err != nil {
		t.Fatal(err)
	}
	info, err := turns.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// What a forget does to one session: the tombstone first, then the turns go.
	if err := store.Tombstone(ctx, session.Key{Tenant: "acme", Session: "s1"}, info.State.LastSeq); err != nil {
		t.Fatal(err)
	}
	if _, err := archive.Purge(ctx, js, topo.TurnsStream(), events.SessionFilter("acme", "s1")); err != nil {
		t.Fatal(err)
	}
	e.waitArchive(t, "alice", "kitten", []string{"b1"}, "after the tombstone")
	// The session starts again: its new turn is shown, the forgotten ones are not.
	e.seed(t, "s1", "alice", []client.Turn{{ID: "a3", Content: "a new kitten arrived today"}})
	e.waitArchive(t, "alice", "kitten", []string{"a3", "b1"}, "after the session started again")
}
