package graph_test

import (
	"fmt"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/agentmem/agentmem/internal/fact"
	"github.com/agentmem/agentmem/internal/graph"
	"github.com/agentmem/agentmem/internal/longterm"
)

var t0 = time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)

func id(name string) string { return fact.EntityID("acme", "alice", name) }

func ent(name, typ string, at time.Time, prov ...string) longterm.Entity {
	return longterm.Entity{ID: id(name), Tenant: "acme", User: "alice", Name: name, Type: typ, Provenance: prov, FirstSeen: at, LastSeen: at}
}

func alias(name, of string) longterm.Alias {
	return longterm.Alias{ID: id(name), Tenant: "acme", User: "alice", Name: name, Of: id(of), OfName: of, Since: t0}
}

func edge(subj, rel, obj string, from time.Time, to *time.Time, prov ...string) longterm.Fact {
	return longterm.Fact{ID: fact.EdgeID("acme", "alice", id(subj), rel, id(obj), false), Tenant: "acme", User: "alice",
		ValidFrom: from, ValidTo: to, Provenance: prov,
		Triple: &longterm.Triple{Subject: id(subj), Relation: rel, Object: id(obj), SubjectName: subj, ObjectName: obj}}
}

// world: the user's sister Melanie ("Mel"), married to Tom, who works at Globex; the user lived
// in Paris and moved to Lisbon on day 2; Anna is someone the user mentioned once.
func world() longterm.UserRecords {
	day2 := t0.Add(48 * time.Hour)
	return longterm.UserRecords{
		Entities: []longterm.Entity{
			{ID: fact.UserEntityID("acme", "alice"), Tenant: "acme", User: "alice", Name: "user", Type: "person", Provenance: []string{"t1", "t5", "t6"}, FirstSeen: t0, LastSeen: day2},
			ent("Melanie", "person", t0, "t1"), ent("Mel", "", t0.Add(time.Hour), "t2", "t3"), ent("Tom", "person", t0, "t1", "t4"),
			ent("Globex", "organization", t0.Add(2*time.Hour), "t4"), ent("Paris", "place", t0, "t5"), ent("Lisbon", "place", day2, "t6"),
			ent("Anna", "person", t0, "t7"), ent("小美", "person", t0, "t8"),
		},
		Aliases: []longterm.Alias{alias("Mel", "Melanie")},
		Edges: []longterm.Fact{
			edge("user", "sister", "Melanie", t0, nil, "t1"),
			edge("Mel", "married_to", "Tom", t0.Add(time.Hour), nil, "t3"),
			edge("Tom", "works_at", "Globex", t0.Add(2*time.Hour), nil, "t4"),
			edge("user", "lives_in", "Paris", t0, &day2, "t5"),
			edge("user", "lives_in", "Lisbon", day2, nil, "t6"),
			edge("user", "sister", "小美", t0, nil, "t8"),
		},
	}
}

func TestBuildFoldsAliasesAndShowsTheGraphAtATime(t *testing.T) {
	v := graph.Build(world())
	mel, ok := v.Node(id("Mel"))
	if !ok || mel.Name != "Melanie" || !slices.Equal(mel.Aliases, []string{"Mel"}) || !slices.Equal(mel.Provenance, []string{"t1", "t2", "t3"}) {
		t.Fatalf("Mel's node %+v, want Melanie with the alias Mel and both names' turns", mel)
	}
	rels := func(s graph.Snapshot) (out []string) {
		for _, e := range s.Relations {
			out = append(out, e.SubjectName+" "+e.Relation+" "+e.ObjectName)
		}
		slices.Sort(out)
		return out
	}
	before := v.At(t0.Add(24 * time.Hour))
	want := []string{"Melanie married_to Tom", "Tom works_at Globex", "user lives_in Paris", "user sister Melanie", "user sister 小美"}
	if got := rels(before); !slices.Equal(got, want) {
		t.Errorf("day 1: %q, want %q", got, want)
	}
	for _, h := range before.History {
		if h.ValidTo != nil {
			t.Errorf("day 1 shows the end of %s %s, which came later", h.Relation, h.ObjectName)
		}
	}
	for _, n := range before.Entities {
		if n.Name == "Lisbon" {
			t.Error("day 1 shows Lisbon, first named on day 2")
		}
	}
	after := v.At(t0.Add(72 * time.Hour))
	want = []string{"Melanie married_to Tom", "Tom works_at Globex", "user lives_in Lisbon", "user sister Melanie", "user sister 小美"}
	if got := rels(after); !slices.Equal(got, want) {
		t.Errorf("day 3: %q, want %q", got, want)
	}
	if len(after.History) != 6 || after.Entities[0].Name != "user" || !after.Entities[0].User {
		t.Errorf("day 3: %d edges in the history, first node %+v", len(after.History), after.Entities[0])
	}
}

func TestAliasCycleAndChain(t *testing.T) {
	recs := longterm.UserRecords{
		Entities: []longterm.Entity{ent("Elizabeth", "person", t0, "t1"), ent("Liz", "", t0, "t2"), ent("Lizzie", "", t0, "t3"), ent("Beth", "", t0, "t4"), ent("Bess", "", t0, "t5")},
		// A chain Lizzie → Liz → Elizabeth, and a cycle Beth ↔ Bess.
		Aliases: []longterm.Alias{alias("Lizzie", "Liz"), alias("Liz", "Elizabeth"), alias("Beth", "Bess"), alias("Bess", "Beth")},
	}
	v := graph.Build(recs)
	if n, _ := v.Node(id("Lizzie")); n.Name != "Elizabeth" || len(n.Provenance) != 3 {
		t.Errorf("Lizzie's node %+v", n)
	}
	b, _ := v.Node(id("Beth"))
	s, _ := v.Node(id("Bess"))
	if b.ID != s.ID || b.ID != min(id("Beth"), id("Bess")) {
		t.Errorf("a cycle gave two nodes or not the smaller id: %+v %+v", b, s)
	}
	if v.Len() != 2 {
		t.Errorf("%d nodes, want 2", v.Len())
	}
}

func TestRelatedByNameAliasAndRelationWord(t *testing.T) {
	v := graph.Build(world())
	at := t0.Add(72 * time.Hour)
	for _, tt := range []struct {
		query string
		named []string
		turns map[string]float64
	}{
		// Named by her alias: the turns of her other name weigh 1, her neighbour Tom's ½; the
		// turns that say "Mel" are the keyword search's.
		{"What does Mel like?", []string{"Melanie", "Tom"}, map[string]float64{"t1": 1, "t4": graph.Neighbour}},
		// "my sister" names the user's sisters; two hops (Globex) are not reached.
		{"Who is my sister married to?", []string{"Melanie", "小美", "Tom"}, map[string]float64{"t1": 1, "t2": 1, "t3": 1, "t4": graph.Neighbour, "t8": 1}},
		{"我妹妹喜欢什么？", []string{"Melanie", "小美", "Tom"}, map[string]float64{"t1": 1, "t2": 1, "t3": 1, "t4": graph.Neighbour, "t8": 1}},
		// Named as written, with no other name and no neighbour: nothing the keywords miss.
		{"小美最近怎么样", []string{"小美"}, nil},
		// The user's node is not expanded: Paris names Paris, not everything the user said.
		{"Where in Paris did I live?", []string{"Paris"}, nil},
		{"melanie", []string{"Melanie", "Tom"}, map[string]float64{"t1": graph.Neighbour, "t2": 1, "t3": 1, "t4": graph.Neighbour}},
		{"Melanies", nil, nil},
		{"What is the weather like?", nil, nil},
	} {
		turns, used := v.Related(tt.query, at)
		var names []string
		for _, u := range used {
			names = append(names, u.Name)
		}
		if !slices.Equal(names, tt.named) || len(turns) != len(tt.turns) {
			t.Errorf("%q: used %q, turns %v; want %q, %v", tt.query, names, turns, tt.named, tt.turns)
			continue
		}
		for k, w := range tt.turns {
			if turns[k] != w {
				t.Errorf("%q: turn %s weighs %v, want %v", tt.query, k, turns[k], w)
			}
		}
	}
	// Before Tom married Melanie (t0+1h), he is no neighbour of hers.
	if _, used := v.Related("Mel", t0.Add(30*time.Minute)); len(used) != 1 {
		t.Errorf("at t0+30m: used %+v, want Melanie alone", used)
	}
}

// TestBytesGrowsWithTheGraph: the estimate a retriever counts against its cap of the views is 0
// for no graph and grows with what the graph holds.
func TestBytesGrowsWithTheGraph(t *testing.T) {
	var none *graph.View
	if none.Bytes() != 0 || graph.Build(longterm.UserRecords{}).Bytes() != 0 {
		t.Fatalf("an empty graph: %d, %d bytes, want 0", none.Bytes(), graph.Build(longterm.UserRecords{}).Bytes())
	}
	small := graph.Build(world()).Bytes()
	recs := world()
	for i := range 100 {
		name := fmt.Sprintf("Friend%03d", i)
		recs.Entities = append(recs.Entities, ent(name, "person", t0, fmt.Sprintf("f%d", i)))
		recs.Edges = append(recs.Edges, edge("user", "friend", name, t0, nil, fmt.Sprintf("f%d", i)))
	}
	big := graph.Build(recs).Bytes()
	// Each friend holds at least its name, id, turn id and an edge's struct.
	if small <= 0 || big-small < 100*(len("Friend000")+len(id("x"))+int(unsafe.Sizeof(graph.Edge{}))) {
		t.Fatalf("bytes: %d for the world, %d with 100 friends more", small, big)
	}
}
