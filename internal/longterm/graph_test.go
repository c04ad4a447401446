package longterm_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	facts "github.com/agentmem/agentmem/internal/fact"
	"github.com/agentmem/agentmem/internal/longterm"
)

func entity(name, typ string, at time.Time, prov ...string) longterm.Entity {
	return longterm.Entity{ID: facts.EntityID("acme", "alice", name), Tenant: "acme", User: "alice", Name: name, Type: typ,
		Provenance: prov, FirstSeen: at, LastSeen: at, Extractors: []string{"rules"}}
}

// edge is the user's relation to object, keyed as the extractor keys it.
func edge(tenant, relation, object string, at time.Time, prov ...string) longterm.Fact {
	subj := facts.UserEntityID(tenant, "alice")
	obj := facts.EntityID(tenant, "alice", object)
	return longterm.Fact{
		ID: facts.EdgeID(tenant, "alice", subj, relation, obj, false), Tenant: tenant, User: "alice",
		Content: "user " + relation + " " + object, Key: facts.EdgeKey(subj, relation, obj), ValidFrom: at,
		Provenance: prov, Confidence: 0.9, Extractor: "rules",
		Triple: &longterm.Triple{Subject: subj, Relation: relation, Object: obj, SubjectName: "user", ObjectName: object},
	}
}

func TestRacingWritersStoreAnEntityAndAnEdgeOnce(t *testing.T) {
	store, _ := open(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	created := make(chan bool, 16)
	for i := range 8 {
		wg.Add(2)
		at := t0.Add(time.Duration(8-i) * time.Hour)
		go func() {
			defer wg.Done()
			// Every writer names the entity in its own case; the earliest statement's name wins.
			name := []string{"anna", "ANNA", "Anna", "Ａｎｎａ"}[i%4]
			e := entity(name, "person", at, fmt.Sprintf("turn-%d", i))
			e.ID = facts.EntityID("acme", "alice", "Anna")
			_, isNew, err := store.PutEntity(ctx, e)
			if err != nil {
				t.Error(err)
				return
			}
			created <- isNew
		}()
		go func() {
			defer wg.Done()
			ch, err := store.AddEdge(ctx, edge("acme", "sister", "Anna", at, fmt.Sprintf("turn-%d", i)))
			if err != nil {
				t.Error(err)
				return
			}
			created <- ch.Added
		}()
	}
	wg.Wait()
	close(created)
	n := 0
	for c := range created {
		if c {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("%d writers report creating, want exactly 2 (one entity, one edge)", n)
	}
	recs, err := store.User(ctx, "acme", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs.Entities) != 1 || len(recs.Edges) != 1 || len(recs.Facts) != 0 {
		t.Fatalf("%d entities, %d edges, %d facts; want 1, 1 and no fact", len(recs.Entities), len(recs.Edges), len(recs.Facts))
	}
	e := recs.Entities[0]
	if !e.FirstSeen.Equal(t0.Add(time.Hour)) || !e.LastSeen.Equal(t0.Add(8*time.Hour)) || e.Name != []string{"anna", "ANNA", "Anna", "Ａｎｎａ"}[7%4] {
		t.Errorf("entity %+v: want first seen %s, last seen %s, the earliest statement's name", e, t0.Add(time.Hour), t0.Add(8*time.Hour))
	}
	if len(e.Provenance) != 8 || len(recs.Edges[0].Provenance) != 8 {
		t.Errorf("provenance %v and %v, want the union of 8 turns", e.Provenance, recs.Edges[0].Provenance)
	}
}

func TestEntityMergeDoesNotDependOnOrder(t *testing.T) {
	store, _ := open(t)
	ctx := context.Background()
	a := entity("Paris", "", t0.Add(time.Hour), "t2")
	b := entity("paris", "place", t0, "t1")
	c := entity("PARIS", "thing", t0.Add(2*time.Hour), "t3")
	var got []longterm.Entity
	for i, order := range [][]longterm.Entity{{a, b, c}, {c, b, a}, {b, c, a}} {
		user := fmt.Sprintf("u%d", i)
		var last longterm.Entity
		for _, e := range order {
			e.User = user
			var err error
			if last, _, err = store.PutEntity(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
		last.User = ""
		slices.Sort(last.Provenance)
		got = append(got, last)
	}
	for _, g := range got[1:] {
		if g.Name != got[0].Name || g.Type != got[0].Type || !g.FirstSeen.Equal(got[0].FirstSeen) || !g.LastSeen.Equal(got[0].LastSeen) ||
			!slices.Equal(g.Provenance, got[0].Provenance) {
			t.Fatalf("orders gave %+v and %+v", got[0], g)
		}
	}
	if got[0].Name != "paris" || got[0].Type != "place" {
		t.Errorf("name %q type %q, want the earliest statement's name and the specific type", got[0].Name, got[0].Type)
	}
	if _, _, err := store.PutEntity(ctx, longterm.Entity{ID: "ent_x", Tenant: "acme", User: "alice", Name: "X", Type: "animal"}); err == nil {
		t.Error("an entity of type animal was stored")
	}
}

func TestChangedRelationEndsTheOldEdgeAndKeepsItInHistory(t *testing.T) {
	for _, order := range []string{"in order", "out of order"} {
		t.Run(order, func(t *testing.T) {
			store, _ := open(t)
			ctx := context.Background()
			paris, lisbon := edge("acme", "lives_in", "Paris", t0, "t1"), edge("acme", "lives_in", "Lisbon", t0.Add(24*time.Hour), "t2")
			first, second := paris, lisbon
			if order == "out of order" {
				first, second = lisbon, paris
			}
			if _, err := store.AddEdge(ctx, first); err != nil {
				t.Fatal(err)
			}
			if _, err := store.AddEdge(ctx, second); err != nil {
				t.Fatal(err)
			}
			old, err := store.Edge(ctx, "acme", "alice", paris.ID)
			if err != nil {
				t.Fatal(err)
			}
			now, err := store.Edge(ctx, "acme", "alice", lisbon.ID)
			if err != nil {
				t.Fatal(err)
			}
			if old.ValidTo == nil || !old.ValidTo.Equal(lisbon.ValidFrom) || old.SupersededBy != lisbon.ID {
				t.Errorf("Paris edge valid_to %v superseded_by %q; want %s and the Lisbon edge", old.ValidTo, old.SupersededBy, lisbon.ValidFrom)
			}
			if !now.Live() || old.LiveAt(t0.Add(48*time.Hour)) || !old.LiveAt(t0.Add(time.Hour)) {
				t.Errorf("live: Lisbon %v, Paris now %v, Paris before the move %v", now.Live(), old.LiveAt(t0.Add(48*time.Hour)), old.LiveAt(t0.Add(time.Hour)))
			}
			// Paris stated again after the move: its next version holds, Lisbon ends.
			again := edge("acme", "lives_in", "Paris", t0.Add(72*time.Hour), "t3")
			ch, err := store.AddEdge(ctx, again)
			if err != nil {
				t.Fatal(err)
			}
			if ch.Fact.ID != longterm.VersionID(paris.ID) || !ch.Added || ch.Fact.Triple == nil || ch.Fact.Triple.Relation != "lives_in" {
				t.Fatalf("restated edge %+v, want the next version of the Paris edge with its triple", ch.Fact)
			}
			if l, _ := store.Edge(ctx, "acme", "alice", lisbon.ID); l.Live() {
				t.Error("the Lisbon edge still holds after Paris was stated again")
			}
			// Edges and facts are kept apart: no fact was written.
			recs, err := store.User(ctx, "acme", "alice")
			if err != nil {
				t.Fatal(err)
			}
			if len(recs.Facts) != 0 || len(recs.Edges) != 3 {
				t.Errorf("%d facts and %d edges, want none and 3", len(recs.Facts), len(recs.Edges))
			}
		})
	}
}

func TestEdgesAreNotFactsAndTenantsStayApart(t *testing.T) {
	store, _ := open(t)
	ctx := context.Background()
	e := edge("acme", "works_at", "Globex", t0, "t1")
	if _, err := store.AddFact(ctx, e); err == nil {
		t.Error("AddFact stored an edge")
	}
	noTriple := e
	noTriple.Triple = nil
	if _, err := store.AddEdge(ctx, noTriple); err == nil {
		t.Error("AddEdge stored an edge without its triple")
	}
	if _, err := store.AddEdge(ctx, e); err != nil {
		t.Fatal(err)
	}
	other := edge("umbrella", "works_at", "Globex", t0, "t1")
	if _, err := store.AddEdge(ctx, other); err != nil {
		t.Fatal(err)
	}
	if other.ID == e.ID {
		t.Fatal("two tenants' edges share an id")
	}
	if _, err := store.Edge(ctx, "acme", "alice", other.ID); !errors.Is(err, longterm.ErrNotFound) {
		t.Errorf("acme reads umbrella's edge: %v", err)
	}
	recs, err := store.User(ctx, "umbrella", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs.Edges) != 1 || recs.Edges[0].Tenant != "umbrella" {
		t.Errorf("umbrella's graph holds %+v", recs.Edges)
	}
}

func TestAliasKeepsTheSmallerTarget(t *testing.T) {
	store, _ := open(t)
	ctx := context.Background()
	mel := facts.EntityID("acme", "alice", "Mel")
	a := longterm.Alias{ID: mel, Tenant: "acme", User: "alice", Name: "Mel", Of: "ent_b", OfName: "Melanie", Provenance: []string{"t2"}, Since: t0.Add(time.Hour)}
	b := a
	b.Of, b.OfName, b.Provenance, b.Since = "ent_a", "Melissa", []string{"t1"}, t0
	for _, x := range []longterm.Alias{a, b, a} {
		if _, err := store.PutAlias(ctx, x); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := store.User(ctx, "acme", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs.Aliases) != 1 || recs.Aliases[0].Of != "ent_a" || !recs.Aliases[0].Since.Equal(t0) || len(recs.Aliases[0].Provenance) != 2 {
		t.Errorf("aliases %+v; want one, of ent_a, since %s, two turns", recs.Aliases, t0)
	}
	if _, err := store.PutAlias(ctx, longterm.Alias{ID: mel, Tenant: "acme", User: "alice", Of: mel}); err == nil {
		t.Error("an alias of itself was stored")
	}
}

func TestForgetRemovesTheGraph(t *testing.T) {
	store, _ := open(t)
	ctx := context.Background()
	if _, _, err := store.PutEntity(ctx, entity("Anna", "person", t0, "t1")); err != nil {
		t.Fatal(err)
	}
	if _, err := store.AddEdge(ctx, edge("acme", "sister", "Anna", t0, "t1")); err != nil {
		t.Fatal(err)
	}
	if _, err := store.PutAlias(ctx, longterm.Alias{ID: "ent_x", Tenant: "acme", User: "alice", Name: "Annie", Of: "ent_y", Since: t0}); err != nil {
		t.Fatal(err)
	}
	n, err := store.Forget(ctx, "acme", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if n < 4 { // entity, edge, its key slot, alias
		t.Errorf("forget removed %d messages, want at least 4", n)
	}
	recs, err := store.User(ctx, "acme", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs.Entities)+len(recs.Edges)+len(recs.Aliases) != 0 {
		t.Errorf("after forget: %+v", recs)
	}
}

// Reset removes a user's graph with the user's facts: a rebuild replays it as it replays them.
func TestResetRemovesTheGraph(t *testing.T) {
	store, _ := open(t)
	ctx := context.Background()
	if _, _, err := store.PutEntity(ctx, longterm.Entity{ID: facts.EntityID("acme", "alice", "Anna"), Tenant: "acme", User: "alice",
		Name: "Anna", Type: longterm.EntityPerson, FirstSeen: t0, LastSeen: t0}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.AddEdge(ctx, edge("acme", "sister", "Anna", t0, "t1")); err != nil {
		t.Fatal(err)
	}
	if n, err := store.Reset(ctx, "acme", "alice"); err != nil || n != 3 { // the entity, the edge, its slot
		t.Fatalf("Reset removed %d messages, %v; want 3", n, err)
	}
	recs, err := store.User(ctx, "acme", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs.Entities) != 0 || len(recs.Edges) != 0 {
		t.Fatalf("after Reset alice has %d entities and %d edges; want none", len(recs.Entities), len(recs.Edges))
	}
}
