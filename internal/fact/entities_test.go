package fact_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/fact"
)

// graphOf runs the offline extractors over one user turn per text and prints the graph as
// "subject relation object" lines (ended ones with a trailing " (ended)"), entities as
// "name:type" and aliases as "alias=of".
func graphOf(texts ...string) (rels, ents, aliases []string) {
	t0 := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	var turns []fact.Turn
	for i, s := range texts {
		turns = append(turns, fact.Turn{ID: string(rune('a' + i)), Role: "user", Content: s, Time: t0.Add(time.Duration(i) * time.Hour)})
	}
	g := fact.GraphRules(turns, fact.Rules(turns))
	for _, r := range g.Relations {
		line := r.Subject + " " + r.Relation + " " + r.Object
		if r.Ended {
			line += " (ended)"
		}
		rels = append(rels, strings.Join(strings.Fields(line), " "))
	}
	for _, e := range g.Entities {
		ents = append(ents, e.Name+":"+e.Type)
	}
	for _, a := range g.Aliases {
		aliases = append(aliases, a.Alias+"="+a.Of)
	}
	return rels, ents, aliases
}

func TestGraphRules(t *testing.T) {
	for _, tt := range []struct {
		text                string
		rels, ents, aliases []string
	}{
		{text: "My sister Anna just married Tom. I live in Paris.",
			rels: []string{"user lives_in Paris", "user sister Anna", "Anna married_to Tom"},
			ents: []string{"Paris:place", "Anna:person", "Tom:person"}},
		{text: "I moved from Paris to Lisbon.", rels: []string{"user lives_in Lisbon"}, ents: []string{"Lisbon:place", "Paris:place"}},
		{text: "I no longer live in Paris.", rels: []string{"user lives_in (ended)"}, ents: []string{"Paris:place"}},
		{text: "I left Acme and joined Globex.", rels: []string{"user works_at Globex"}, ents: []string{"Globex:organization"}},
		{text: "My best friend, Melanie, Mel for short, loves painting.",
			rels: []string{"user friend Melanie"}, ents: []string{"Melanie:person", "Mel:"}, aliases: []string{"Mel=Melanie"}},
		{text: "Mel is short for Melanie.", ents: []string{"Melanie:", "Mel:"}, aliases: []string{"Mel=Melanie"}},
		{text: "I had lunch with Caroline at the Louvre in Paris last week.", ents: []string{"Caroline:person", "Louvre:", "Paris:place"}},
		{text: "My dog Max passed away.", rels: []string{"user has_pet Max (ended)"}, ents: []string{"Max:thing"}},
		{text: "I have a dog named Max.", rels: []string{"user has_pet Max"}, ents: []string{"Max:thing"}},
		{text: "My wife Sarah and I went to Japan.", rels: []string{"user married_to Sarah"}, ents: []string{"Sarah:person", "Japan:place"}},
		{text: "我妹妹小美喜欢画画。", rels: []string{"user sister 小美"}, ents: []string{"小美:person"}},
		{text: "我妹妹小美和小刚结婚了。", rels: []string{"user sister 小美", "小美 married_to 小刚"}, ents: []string{"小美:person", "小刚:person"}},
		{text: "我的朋友王芳在上海工作。", rels: []string{"user friend 王芳"}, ents: []string{"王芳:person"}},
		{text: "小美是王美丽的小名。", ents: []string{"王美丽:", "小美:"}, aliases: []string{"小美=王美丽"}},
		{text: "我上个月从北京搬到了上海。", rels: []string{"user lives_in 上海"}, ents: []string{"上海:place"}},
		{text: "我不在北京住了。", rels: []string{"user lives_in (ended)"}, ents: []string{"北京:place"}},
		{text: "我跳槽到阿里了。", rels: []string{"user works_at 阿里"}, ents: []string{"阿里:organization"}},
		// Nothing a graph keeps.
		{text: "Can you help me with my essay on Monday?"},
		{text: "I think so. Thanks!"},
	} {
		rels, ents, aliases := graphOf(tt.text)
		if !slices.Equal(rels, tt.rels) || !slices.Equal(ents, tt.ents) || !slices.Equal(aliases, tt.aliases) {
			t.Errorf("%q:\n  relations %q, want %q\n  entities %q, want %q\n  aliases %q, want %q", tt.text, rels, tt.rels, ents, tt.ents, aliases, tt.aliases)
		}
	}
}

func TestGraphRulesProvenanceIsEveryTurnNamingTheEntity(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	turns := []fact.Turn{
		{ID: "t1", Role: "user", Content: "My sister Anna is visiting.", Time: t0},
		{ID: "t2", Role: "assistant", Content: "How nice! What will you and Anna do?", Time: t0.Add(time.Minute)},
		{ID: "t3", Role: "user", Content: "We'll see a show. Annabel is coming too.", Time: t0.Add(2 * time.Minute)},
		{ID: "t4", Role: "user", Content: "anna loves musicals.", Time: t0.Add(3 * time.Minute)},
	}
	g := fact.GraphRules(turns, fact.Rules(turns))
	var anna *fact.Entity
	for i := range g.Entities {
		if g.Entities[i].Name == "Anna" {
			anna = &g.Entities[i]
		}
	}
	if anna == nil {
		t.Fatalf("no Anna in %+v", g.Entities)
	}
	// "Annabel" does not name Anna; the assistant's turn does, and so does "anna".
	if !slices.Equal(anna.Provenance, []string{"t1", "t2", "t4"}) || !anna.Time.Equal(t0) || !anna.Last.Equal(t0.Add(3*time.Minute)) {
		t.Errorf("Anna: %+v", *anna)
	}
}

func TestEntityIDFoldsCaseWidthAndArticles(t *testing.T) {
	same := [][]string{
		{"Anna", "anna", "ANNA", "Ａｎｎａ", " Anna "},
		{"The Louvre", "louvre", "the louvre"},
		{"小美", "小美", " 小美"},
	}
	for _, names := range same {
		for _, n := range names[1:] {
			if fact.EntityID("acme", "alice", n) != fact.EntityID("acme", "alice", names[0]) {
				t.Errorf("%q and %q are two entities", names[0], n)
			}
		}
	}
	if fact.EntityID("acme", "alice", "Anna") == fact.EntityID("acme", "bob", "Anna") ||
		fact.EntityID("acme", "alice", "Anna") == fact.EntityID("umbrella", "alice", "Anna") {
		t.Error("two users share an entity id")
	}
	if fact.EntityID("acme", "alice", "user") != fact.UserEntityID("acme", "alice") || fact.EntityID("acme", "alice", "用户") != fact.UserEntityID("acme", "alice") {
		t.Error(`"user" and 用户 are not the user's node`)
	}
	if fact.EdgeID("acme", "alice", "a", "lives_in", "", true) == fact.EdgeID("acme", "alice", "a", "lives_in", "", false) {
		t.Error("an ending edge shares the id of an edge")
	}
	if fact.EdgeKey("a", "lives_in", "x") != fact.EdgeKey("a", "lives_in", "y") || fact.EdgeKey("a", "sister", "x") == fact.EdgeKey("a", "sister", "y") {
		t.Error("lives_in must hold one object at a time, sister several")
	}
}

func TestMentions(t *testing.T) {
	for _, tt := range []struct {
		text, name string
		want       bool
	}{
		{"I met Mel today", "Mel", true}, {"I met Melanie today", "Mel", false}, {"mel!", "Mel", true},
		{"New York City", "New York", true}, {"我妹妹小美喜欢画画", "小美", true}, {"我妹妹小红", "小美", false},
		{"", "Mel", false}, {"Mel", "", false},
	} {
		if got := fact.Mentions(tt.text, tt.name); got != tt.want {
			t.Errorf("Mentions(%q, %q) = %v", tt.text, tt.name, got)
		}
	}
}

func TestParseAllGraph(t *testing.T) {
	turns := []fact.Turn{
		{ID: "t1", Role: "user", Content: "My best friend Melanie, Mel for short, just moved to Lisbon."},
		{ID: "t2", Role: "user", Content: "I no longer live in Paris, I live in Lisbon too now."},
	}
	x, err := fact.ParseAll(`{"facts":[{"content":"The user lives in Lisbon","category":"identity","key":"user.city","turns":["t2"]}],
	 "entities":[{"name":"Melanie","type":"Person","aliases":["Mel"]},{"name":"Lisbon","type":"place"},{"name":"Paris","type":"place"},{"name":"Atlantis","type":"place"}],
	 "relations":[{"subject":"user","relation":"friend","object":"Melanie","turns":["t1"]},
	              {"subject":"Melanie","relation":"lives in","object":"Lisbon","turns":["t1"]},
	              {"subject":"user","relation":"lives_in","object":"Paris","ended":true,"turns":["t2"]},
	              {"subject":"the user","relation":"lives_in","object":"Lisbon","turns":["t2"]}]}`, turns)
	if err != nil {
		t.Fatal(err)
	}
	if len(x.Facts) != 1 {
		t.Errorf("facts %+v", x.Facts)
	}
	var rels, ents []string
	for _, r := range x.Graph.Relations {
		rels = append(rels, strings.Join(strings.Fields(r.Subject+" "+r.Relation+" "+r.Object+map[bool]string{true: " (ended)"}[r.Ended]), " "))
	}
	for _, e := range x.Graph.Entities {
		ents = append(ents, e.Name+":"+e.Type+":"+strings.Join(e.Provenance, ","))
	}
	wantRels := []string{"user friend Melanie", "Melanie lives_in Lisbon", "user lives_in (ended)", "user lives_in Lisbon"}
	// Atlantis is named by no turn: dropped.
	wantEnts := []string{"Melanie:person:t1", "Mel::t1", "Lisbon:place:t1,t2", "Paris:place:t2"}
	if !slices.Equal(rels, wantRels) || !slices.Equal(ents, wantEnts) {
		t.Errorf("relations %q\nwant %q\nentities %q\nwant %q", rels, wantRels, ents, wantEnts)
	}
	if len(x.Graph.Aliases) != 1 || x.Graph.Aliases[0].Alias != "Mel" || x.Graph.Aliases[0].Of != "Melanie" {
		t.Errorf("aliases %+v", x.Graph.Aliases)
	}
	// Without a graph, an answer is only facts.
	x, err = fact.ParseAll(`{"facts":[]}`, turns)
	if err != nil || len(x.Graph.Entities)+len(x.Graph.Relations) != 0 {
		t.Errorf("facts only: %+v, %v", x, err)
	}
}

func TestParseAllRejectsAMalformedGraph(t *testing.T) {
	turns := []fact.Turn{{ID: "t1", Role: "user", Content: "I live in Lisbon"}}
	good := `{"content":"The user lives in Lisbon","category":"identity"}`
	for _, tt := range []struct{ answer, errHas string }{
		{`{"facts":[` + good + `],"entities":[{"type":"place"}]}`, "entities[0]: no name"},
		{`{"facts":[` + good + `],"entities":[null]}`, "entities[0]: no name"},
		{`{"facts":[` + good + `],"entities":[{"name":"Lisbon","type":"city"}]}`, `unknown type "city"`},
		{`{"facts":[` + good + `],"entities":[{"name":"Lisbon","aliases":[""]}]}`, "aliases[0]: empty"},
		{`{"facts":[` + good + `],"entities":{"name":"Lisbon"}}`, "cannot unmarshal"},
		{`{"facts":[` + good + `],"relations":[{"relation":"lives_in","object":"Lisbon"}]}`, "relations[0]: no subject"},
		{`{"facts":[` + good + `],"relations":[{"subject":"user","object":"Lisbon"}]}`, "relations[0]: no relation"},
		{`{"facts":[` + good + `],"relations":[{"subject":"user","relation":"住在","object":"Lisbon"}]}`, "is not a slug"},
		{`{"facts":[` + good + `],"relations":[{"subject":"user","relation":"lives_in"}]}`, "relations[0]: no object"},
		{`{"facts":[` + good + `],"relations":[{"subject":"user","relation":"lives_in","object":"Lisbon","ended":"no"}]}`, "cannot unmarshal"},
	} {
		x, err := fact.ParseAll(tt.answer, turns)
		if !errors.Is(err, fact.ErrMalformed) || !strings.Contains(err.Error(), tt.errHas) || len(x.Facts) != 0 {
			t.Errorf("%s: %v (facts %d); want ErrMalformed with %q and nothing", tt.answer, err, len(x.Facts), tt.errHas)
		}
		if _, err := fact.Parse(tt.answer, turns); !errors.Is(err, fact.ErrMalformed) {
			t.Errorf("Parse accepts %s", tt.answer)
		}
	}
}

// BenchmarkGraphRules measures the offline graph extraction of a turn that names nothing (most
// turns) and of one that names people and places.
func BenchmarkGraphRules(b *testing.B) {
	for name, text := range map[string]string{
		"plain": "Can you recommend a good recipe for a vegetarian lasagna that I could make this weekend for four people?",
		"names": "My sister Anna just married Tom, and my best friend Melanie, Mel for short, flew in from Paris for it.",
	} {
		turns := []fact.Turn{{ID: "t1", Role: "user", Content: text}}
		cands := fact.Rules(turns)
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				fact.GraphRules(turns, cands)
			}
		})
	}
}
