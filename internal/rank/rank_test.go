package rank

import (
	"errors"
	"fmt"
	"github.com/agentmem/agentmem/internal/search"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
)

func ids(hits []Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.ID
	}
	return out
}

// facts is a small memory of long-term entries, in English and Chinese, with distractors that
// share words with the queries.
var facts = []Doc{
	{ID: "en-go", Text: "I love writing Go, it's my favourite language", Kind: "fact"},
	{ID: "en-pizza", Text: "My sister's favourite food is pizza", Kind: "fact"},
	{ID: "en-rust", Text: "Bob likes Rust", Kind: "fact"},
	{ID: "en-python", Text: "The team uses Python for data analysis", Kind: "fact"},
	{ID: "en-meeting", Text: "The weekly meeting moved to Thursdays at 10am", Kind: "fact"},
	{ID: "zh-go", Text: "我最喜欢的编程语言是 Go", Kind: "fact"},
	{ID: "zh-pizza", Text: "我妹妹最喜欢的食物是披萨", Kind: "fact"},
	{ID: "zh-parcel", Text: "取件码改成了zq3k0x8ab1，明天去拿", Kind: "fact"},
	{ID: "zh-meeting", Text: "每周的例会改到周四上午十点", Kind: "fact"},
	{ID: "zh-language", Text: "她会说三种语言", Kind: "fact"},
}

func TestSearchFacts(t *testing.T) {
	ix := NewIndex(Config{})
	ix.Add(facts...)
	tests := []struct {
		query string
		want  string
	}{
		{"What is my favourite programming language?", "en-go"},
		{"my sister's favourite food", "en-pizza"},
		{"When is the weekly meeting?", "en-meeting"},
		{"我最喜欢的编程语言是什么？", "zh-go"},
		{"我妹妹喜欢吃什么", "zh-pizza"},
		{"取件码是多少", "zh-parcel"},
		{"例会是周几", "zh-meeting"},
		{"ＧＯ语言", "zh-go"},                                // full-width, mixed scripts
		{"Go 编程", "zh-go"},                               // mixed query
		{"what did I say about zq3k0x8ab1", "zh-parcel"}, // an ASCII code inside Chinese text
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			hits := ix.Search(tt.query, 0)
			if len(hits) == 0 || hits[0].ID != tt.want {
				t.Fatalf("Search(%q) = %v, want %s first", tt.query, hits, tt.want)
			}
			for i, h := range hits {
				if !(h.Relevance > 0 && h.Relevance <= 1 && h.Keyword > 0 && h.Keyword <= 1) || h.HasVector {
					t.Errorf("hit %v out of range", h)
				}
				if i > 0 && h.Relevance > hits[i-1].Relevance {
					t.Errorf("hits not sorted: %v", hits)
				}
			}
		})
	}
}

func TestSearchNothing(t *testing.T) {
	ix := NewIndex(Config{})
	if hits := ix.Search("anything", 0); hits != nil {
		t.Errorf("empty index: %v", hits)
	}
	ix.Add(facts...)
	for _, q := range []string{"", "   ", "?!，。", "what is it", "的了是", "xylophone"} {
		if hits := ix.Search(q, 0); len(hits) != 0 {
			t.Errorf("Search(%q) = %v, want none", q, hits)
		}
	}
}

// conversation returns the turns of a session: user and assistant alternating.
func conversation(session string, texts ...string) []Doc {
	docs := make([]Doc, len(texts))
	for i, text := range texts {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		docs[i] = Doc{ID: fmt.Sprintf("%s-%d", session, i), Text: text, Group: session, Pos: i, Role: role, Kind: "turn"}
	}
	return docs
}

// filler returns n sessions of small talk that share no term with the tests' queries.
func filler(n int) []Doc {
	var docs []Doc
	for i := range n {
		docs = append(docs, conversation(fmt.Sprintf("filler%02d", i),
			"Can you recommend a good recipe for dinner tonight?",
			"Sure: a vegetable stir fry with rice is quick, cheap and healthy.",
			"Thanks, and what about dessert?",
			"Try baked apples with cinnamon and a little honey.")...)
	}
	return docs
}

func TestPlantedTurn(t *testing.T) {
	ix := NewIndex(Config{})
	ix.Add(filler(30)...)
	ix.Add(conversation("trip",
		"I'm planning a trip to Lisbon in May with my sister Emily.",
		"Lisbon in May is lovely: visit Belém, ride tram 28 and try pastéis de nata.",
		"Emily booked our hotel in Alfama, the Memmo Alfama.",
		"Great choice: Alfama is the oldest district, close to the castle.")...)
	hits := ix.Search("Which hotel did Emily book in Lisbon?", 10)
	if len(hits) == 0 || hits[0].ID != "trip-2" {
		t.Fatalf("got %v, want trip-2 first", ids(hits))
	}
	// The user's turn outranks the assistant's, which mentions Lisbon as often.
	if i, j := slices.Index(ids(hits), "trip-0"), slices.Index(ids(hits), "trip-1"); i < 0 || j >= 0 && j < i {
		t.Errorf("got %v, want trip-0 before trip-1", ids(hits))
	}
}

func TestSessionEvidence(t *testing.T) {
	// Two turns say the same thing; one is in a session about the query's topic, the other
	// in a session about something else.
	docs := append(filler(10),
		conversation("garden",
			"My tomato plants finally have flowers in the garden.",
			"Tomato flowers mean fruit soon: water the garden deeply twice a week.",
			"I watered them this morning.")...)
	docs = append(docs, conversation("car",
		"The mechanic fixed the brakes of my car.",
		"Good: brakes are worth checking yearly.",
		"I watered them this morning.")...)
	for _, cfg := range []Config{{}, {Session: Off}} {
		ix := NewIndex(cfg)
		ix.Add(docs...)
		hits := ix.Search("When did I water the tomato garden?", 0)
		got := ids(hits)
		gi, ci := slices.Index(got, "garden-2"), slices.Index(got, "car-2")
		if gi < 0 || ci < 0 {
			t.Fatalf("%+v: got %v", cfg, got)
		}
		if cfg.Session == Off {
			if hits[gi].Keyword != hits[ci].Keyword {
				t.Errorf("without session evidence, equal turns score %v and %v", hits[gi].Keyword, hits[ci].Keyword)
			}
		} else if !(hits[gi].Keyword > hits[ci].Keyword) {
			t.Errorf("with session evidence, garden-2 %v should beat car-2 %v", hits[gi].Keyword, hits[ci].Keyword)
		}
	}
}

func TestDiversity(t *testing.T) {
	// Session a matches the query in every turn, session b in one turn only, a little less
	// well: b's turn must come before a's third turn. (At session evidence λ = 1, where a's
	// evidence alone would fill the top three.)
	docs := append(filler(10),
		conversation("a",
			"I adopted a cat named Miso from the shelter.",
			"Congratulations on adopting Miso! Cats from shelters make loving pets.",
			"Miso the cat sleeps on my keyboard.",
			"Cats love warm keyboards; a heated cat bed may help.")...)
	docs = append(docs, conversation("b",
		"My neighbour's cat visits our garden every day.",
		"That sounds nice.")...)
	ix := NewIndex(Config{Session: 1})
	ix.Add(docs...)
	got := ids(ix.Search("my cat", 3))
	if !slices.Contains(got, "b-0") {
		t.Errorf("top 3 = %v, want b-0 among them", got)
	}
	ix = NewIndex(Config{Session: 1, Diversity: Off})
	ix.Add(docs...)
	if got := ids(ix.Search("my cat", 3)); slices.Contains(got, "b-0") {
		t.Errorf("without diversity, top 3 = %v, want only session a", got)
	}
}

func TestAddRemoveReplace(t *testing.T) {
	ix := NewIndex(Config{})
	empty := ix.Bytes()
	ix.Add(facts...)
	if ix.Len() != len(facts) {
		t.Fatalf("Len = %d, want %d", ix.Len(), len(facts))
	}
	full := ix.Bytes()
	if full <= empty {
		t.Errorf("Bytes %d after Add, %d empty", full, empty)
	}
	if got := ids(ix.Search("pizza", 0)); !slices.Equal(got, []string{"en-pizza"}) {
		t.Fatalf("pizza: %v", got)
	}
	// Replace: the old text no longer matches, the new one does.
	ix.Add(Doc{ID: "en-pizza", Text: "My sister now prefers sushi", Kind: "fact"})
	if ix.Len() != len(facts) {
		t.Errorf("Len = %d after replace", ix.Len())
	}
	if got := ids(ix.Search("pizza", 0)); len(got) != 0 {
		t.Errorf("pizza after replace: %v", got)
	}
	if got := ids(ix.Search("sushi", 0)); !slices.Equal(got, []string{"en-pizza"}) {
		t.Errorf("sushi after replace: %v", got)
	}
	ix.Remove("en-pizza", "unknown")
	if got := ids(ix.Search("sushi", 0)); len(got) != 0 {
		t.Errorf("sushi after remove: %v", got)
	}
	ix.Remove(ids(func() []Hit {
		var hs []Hit
		for _, d := range facts {
			hs = append(hs, Hit{ID: d.ID})
		}
		return hs
	}())...)
	if ix.Len() != 0 || ix.Bytes() != empty {
		t.Errorf("after removing everything: Len %d, Bytes %d, want 0, %d", ix.Len(), ix.Bytes(), empty)
	}
	if hits := ix.Search("Go", 0); hits != nil {
		t.Errorf("empty again: %v", hits)
	}
	// Slots, terms and groups are reused.
	ix.Add(conversation("s", "hello Go", "Go is great")...)
	if got := ids(ix.Search("go", 0)); len(got) != 2 {
		t.Errorf("after re-adding: %v", got)
	}
}

// TestIncrementalEqualsBatch checks that an index built by random adds, replacements and
// removals ranks exactly like one built at once from the documents that remain.
func TestIncrementalEqualsBatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	words := strings.Fields("cat dog garden tomato brake car trip Lisbon hotel sister pizza Go Rust 猫 狗 花园 旅行 酒店 妹妹 编程 语言")
	text := func() string {
		var b strings.Builder
		for range 3 + rng.IntN(8) {
			b.WriteString(words[rng.IntN(len(words))])
			b.WriteByte(' ')
		}
		return b.String()
	}
	inc := NewIndex(Config{})
	live := map[string]Doc{}
	for i := range 600 {
		switch op := rng.IntN(12); {
		case op < 8 || len(live) == 0:
			d := Doc{ID: fmt.Sprintf("d%d", rng.IntN(300)), Text: text(), Role: []string{"user", "assistant", ""}[rng.IntN(3)]}
			if d.Role != "" {
				d.Group, d.Pos = fmt.Sprintf("g%d", rng.IntN(20)), i
			}
			inc.Add(d)
			live[d.ID] = d
		case op < 11:
			for id, d := range live {
				switch op {
				case 8:
					inc.Remove(id)
				case 9: // by the text it was added with
					inc.RemoveDocs(d)
				default: // by another text: what it does not name is found anyway
					inc.RemoveDocs(Doc{ID: id, Text: text()}, Doc{ID: "unknown", Text: d.Text})
				}
				delete(live, id)
				break
			}
		default: // several at once, an unknown id and a repeated one among them
			var gone []string
			for id := range live {
				if len(gone) == 3 {
					break
				}
				gone = append(gone, id)
			}
			inc.Remove(append(gone, "unknown", gone[0])...)
			for _, id := range gone {
				delete(live, id)
			}
		}
		if i%150 == 149 {
			// Trimmed postings grow again and shrink as before.
			inc.Compact()
			checkPostings(t, inc, live)
		}
	}
	batch := NewIndex(Config{})
	keys := make([]string, 0, len(live))
	for id := range live {
		keys = append(keys, id)
	}
	slices.Sort(keys)
	for _, id := range keys {
		batch.Add(live[id])
	}
	if inc.Len() != batch.Len() || inc.Bytes() != batch.Bytes() {
		t.Errorf("Len %d/%d, Bytes %d/%d", inc.Len(), batch.Len(), inc.Bytes(), batch.Bytes())
	}
	for _, q := range []string{"cat garden", "my sister's hotel in Lisbon", "猫 花园", "编程语言 Go", "tomato"} {
		a, b := inc.Search(q, 0), batch.Search(q, 0)
		if len(a) == 0 {
			t.Errorf("%q: no hits", q)
		}
		if !slices.Equal(a, b) {
			t.Errorf("%q:\nincremental %v\nbatch       %v", q, a, b)
		}
	}
	checkPostings(t, inc, live)
}

// checkPostings checks the postings of ix against the documents it should hold: each posting in
// strictly increasing slot order, each entry a document of live whose text has the term that
// many times, and as many entries as those documents have distinct terms.
func checkPostings(t *testing.T, ix *Index, live map[string]Doc) {
	t.Helper()
	tfs := map[string]map[string]int{}
	want := 0
	for id, d := range live {
		tf := map[string]int{}
		for _, term := range search.Terms(d.Text) {
			tf[term]++
		}
		tfs[id] = tf
		want += len(tf)
	}
	entries := 0
	windows := 0
	for tid := range ix.postings {
		p := &ix.postings[tid]
		ents, term := ix.entsOf(p), ix.words.term(int32(tid))
		for i, e := range ents {
			if i > 0 && ents[i-1].slot() >= e.slot() {
				t.Fatalf("posting %q: slot %d after %d", term, e.slot(), ents[i-1].slot())
			}
			d := ix.docs[e.slot()]
			if n := tfs[d.id][term]; d.id == "" || n == 0 || min(n, maxTF) != int(e.tf()) {
				t.Fatalf("posting %q names slot %d (%q) with frequency %d; its text has the term %d times", term, e.slot(), d.id, e.tf(), n)
			}
		}
		if p.n > 0 {
			if got, ok := ix.terms.find(&ix.words, term); !ok || got != int32(tid) {
				t.Fatalf("posting %d's term %q is found as %d, %v", tid, term, got, ok)
			}
		}
		if p.n > p.cap || int(p.off+p.cap) > len(ix.ents) {
			t.Fatalf("posting %q: %d entries, a window of %d at %d in %d", term, p.n, p.cap, p.off, len(ix.ents))
		}
		entries += int(p.n)
		windows += int(p.cap)
	}
	if entries != want {
		t.Fatalf("%d posting entries for %d document terms", entries, want)
	}
	// The windows do not overlap, and what is in none is counted (compactEntries relies on it).
	if windows+ix.entWaste != len(ix.ents) {
		t.Fatalf("windows of %d entries and %d wasted in an array of %d", windows, ix.entWaste, len(ix.ents))
	}
	if ix.entWaste > 1024 && 2*ix.entWaste > len(ix.ents) {
		t.Fatalf("%d of %d entries wasted, not compacted", ix.entWaste, len(ix.ents))
	}
}

func TestSearchK(t *testing.T) {
	ix := NewIndex(Config{})
	ix.Add(filler(5)...)
	all := ix.Search("recipe dinner dessert", 0)
	if len(all) != 10 {
		t.Fatalf("got %d hits, want 10", len(all))
	}
	top := ix.Search("recipe dinner dessert", 3)
	if !slices.Equal(top, all[:3]) {
		t.Errorf("k=3: %v, want %v", top, all[:3])
	}
	// Equal scores are ordered by id.
	for i := 1; i < len(all); i++ {
		if all[i].Relevance == all[i-1].Relevance && all[i].ID < all[i-1].ID {
			t.Errorf("tie not broken by id: %v", all)
		}
	}
}

func TestMaxQueryTerms(t *testing.T) {
	docs := []Doc{{ID: "common", Text: "note"}, {ID: "rare", Text: "zebra"}, {ID: "rarer", Text: "okapi"}}
	for i := range 20 {
		docs = append(docs, Doc{ID: fmt.Sprintf("n%d", i), Text: "note"})
	}
	const query = "note zebra okapi"
	for _, tt := range []struct {
		max  int
		want []string
	}{
		{2, []string{"rare", "rarer"}}, // the most common term is not scored
		{int(Off), []string{"rare", "rarer", "common"}},
	} {
		ix := NewIndex(Config{MaxQueryTerms: tt.max})
		ix.Add(docs...)
		got := ids(ix.Search(query, 3))
		if !slices.Equal(got, tt.want) {
			t.Errorf("MaxQueryTerms %d: got %v, want %v", tt.max, got, tt.want)
		}
	}
}

func TestConcurrent(t *testing.T) {
	ix := NewIndex(Config{})
	ix.Add(filler(20)...)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 4 {
		wg.Go(func() {
			for i := range 200 {
				id := fmt.Sprintf("w%d-%d", w, i%10)
				ix.Add(Doc{ID: id, Text: "tomato garden note " + id, Group: fmt.Sprintf("w%d", w), Pos: i, Role: "user"})
				if i%3 == 0 {
					ix.Remove(id)
				}
			}
		})
		wg.Go(func() {
			for range 200 {
				for _, h := range ix.Search("tomato garden recipe", 5) {
					if !(h.Relevance > 0 && h.Relevance <= 1) {
						errs <- fmt.Errorf("relevance %v", h.Relevance)
						return
					}
				}
				_ = ix.Len()
				_ = ix.Bytes()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestConfig(t *testing.T) {
	c := Config{}.withDefaults()
	if c.K1 != DefaultK1 || c.B != DefaultB || c.QueryK3 != DefaultK1 || c.AgentTurn != DefaultAgentTurn ||
		c.Session != DefaultSession || c.Diversity != DefaultDiversity {
		t.Errorf("defaults: %+v", c)
	}
	off := Config{QueryK3: Off, AgentTurn: Off, Session: Off, Diversity: Off}.withDefaults()
	if off.QueryK3 != Off || off.AgentTurn != 1 || off.Session != 0 || off.Diversity != 1 {
		t.Errorf("off: %+v", off)
	}
	for field, cfg := range map[string]Config{
		"K1":            {K1: -2},
		"B":             {B: 1.5},
		"QueryK3":       {QueryK3: -3},
		"AgentTurn":     {AgentTurn: 2},
		"Session":       {Session: -0.5},
		"Diversity":     {Diversity: 1.5},
		"SessionRepeat": {SessionRepeat: 2},
		"Context":       {Context: -0.5},
		"ContextUpTo":   {ContextUpTo: -3},
		"Speaker":       {Speaker: -2},
		"Mention":       {Mention: 1.5},
		"Related":       {Related: -0.5},
		"ChineseWords":  {ChineseWords: -0.5},
	} {
		err := cfg.Validate()
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), field+" =") {
			t.Errorf("%+v: err = %v, want one naming %s", cfg, err, field)
		}
	}
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("zero config: %v", err)
	}
}

// TestTermFrequencySaturates: a posting records a term's frequency up to maxTF. Of two documents
// of the same length, one with the term maxTF+45 times ranks like one with it maxTF times; fewer
// occurrences rank lower.
func TestTermFrequencySaturates(t *testing.T) {
	ix := NewIndex(Config{})
	words := func(n int, w string) string { return strings.Repeat(w+" ", n) }
	ix.Add(
		Doc{ID: "more", Text: words(maxTF+45, "kafka"), Kind: "fact"},
		Doc{ID: "max", Text: words(maxTF, "kafka") + words(45, "nats"), Kind: "fact"},
		Doc{ID: "few", Text: words(3, "kafka") + words(maxTF+42, "nats"), Kind: "fact"},
	)
	hits := ix.Search("kafka", 0)
	if len(hits) != 3 {
		t.Fatalf("hits %v, want 3", ids(hits))
	}
	score := map[string]float64{}
	for _, h := range hits {
		score[h.ID] = h.Keyword
	}
	if score["more"] != score["max"] {
		t.Errorf("%d occurrences score %v, %d score %v: want the same", maxTF+45, score["more"], maxTF, score["max"])
	}
	if score["few"] >= score["max"] {
		t.Errorf("3 occurrences score %v, %d score %v: want fewer below", score["few"], maxTF, score["max"])
	}
	ix.Remove("max")
	if got := ids(ix.Search("kafka", 0)); !slices.Equal(got, []string{"more", "few"}) {
		t.Errorf("after removing one: %v", got)
	}
}

// Documents prepared on other goroutines, each counting its terms in a map another goroutine
// used before, are indexed with the frequencies of their own text, as Add indexes them.
func TestPrepareOnManyGoroutines(t *testing.T) {
	docs := append(filler(10), conversation("s1",
		"I deploy the deploy script, deploy it twice: deploy deploy",
		"The rollback of the postgres deploy failed; rollback again",
		"钢琴课改到周四，钢琴老师说的")...)
	prep := make([]Prepared, len(docs))
	var wg sync.WaitGroup
	for i := range docs {
		wg.Go(func() { prep[i] = Prepare(docs[i]) })
	}
	wg.Wait()
	ix, ref := NewIndex(Config{}), NewIndex(Config{})
	ix.AddPrepared(prep...)
	ref.Add(docs...)
	live := map[string]Doc{}
	for _, d := range docs {
		live[d.ID] = d
	}
	checkPostings(t, ix, live)
	for _, q := range []string{"deploy rollback", "钢琴", "dessert recipe"} {
		if got, want := ix.Search(q, 10), ref.Search(q, 10); !slices.Equal(ids(got), ids(want)) {
			t.Fatalf("%q: %v, Add gives %v", q, ids(got), ids(want))
		}
	}
	// A batch that replaces documents, one of them twice (the later wins), and adds a new one.
	again := []Doc{
		{ID: "s1-0", Text: "the deploy moved to friday", Group: "s1"},
		{ID: "s1-1", Text: "rollback rollback", Group: "s1"},
		{ID: "s1-0", Text: "the piano lesson moved to friday", Group: "s1"},
		{ID: "s9-0", Text: "a new session about kafka", Group: "s9"},
	}
	prep = prep[:0]
	for _, d := range again {
		prep = append(prep, Prepare(d))
		live[d.ID] = d
	}
	ix.AddPrepared(prep...)
	checkPostings(t, ix, live)
	if got := ids(ix.Search("piano friday", 10)); len(got) == 0 || got[0] != "s1-0" {
		t.Fatalf("piano friday: %v", got)
	}
	if got := ids(ix.Search("deploy", 10)); slices.Contains(got, "s1-0") {
		t.Fatalf("deploy still finds the replaced text: %v", got)
	}
}
