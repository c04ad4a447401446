package rank

import (
	"math"
	"testing"
)

// home is a user's turns about things at home, none of which says "furniture" or "sport".
func home() []Doc {
	return []Doc{
		{ID: "table", Role: "user", Group: "s1", Text: "I just got a new coffee table from West Elm and it looks great in the living room."},
		{ID: "sofa", Role: "user", Group: "s2", Text: "We finally replaced the old sofa, the new one is grey."},
		{ID: "soccer", Role: "user", Group: "s3", Text: "I played in the company's charity soccer tournament on Saturday."},
		{ID: "coffee", Role: "user", Group: "s5", Text: "I drink my coffee black in the morning."},
		{ID: "agent", Role: "assistant", Group: "s6", Text: "A coffee table with metal legs would suit a modern living room."},
	}
}

// With related words a question finds turns by what their words are a kind of or a synonym of:
// furniture finds the coffee table and the sofa, a couch the sofa, a sport the soccer
// tournament. Without them none of these is found.
func TestRelatedFindsKind(t *testing.T) {
	for _, c := range []struct {
		query string
		want  []string // found, in any order among the first len(want)
	}{
		{"How many pieces of furniture did I buy?", []string{"table", "sofa"}},
		{"What colour is my couch?", []string{"sofa"}},
		{"Which sport events did I take part in?", []string{"soccer"}},
	} {
		ix := NewIndex(Config{Related: 0.3})
		ix.Add(home()...)
		hits := ix.Search(c.query, 10)
		for _, id := range c.want {
			if r := rankOf(hits, id); r < 0 || r >= len(c.want) {
				t.Errorf("%q: %s ranks %d in %v, want among the first %d", c.query, id, r, ids(hits), len(c.want))
			}
		}
		off := NewIndex(Config{})
		off.Add(home()...)
		for _, id := range c.want {
			if r := rankOf(off.Search(c.query, 10), id); r >= 0 {
				t.Errorf("%q: without related words %s is found (rank %d): the test shows nothing", c.query, id, r)
			}
		}
	}
}

// The words of a pair are not expanded on their own: a coffee table is furniture, not a drink,
// and coffee alone is no furniture. An agent turn gets no related words (it counts for half:
// what is remembered is what the user said).
func TestRelatedSenses(t *testing.T) {
	ix := NewIndex(Config{Related: 0.3})
	ix.Add(home()...)
	hits := ix.Search("furniture", 10)
	for _, id := range []string{"coffee", "agent"} {
		if r := rankOf(hits, id); r >= 0 {
			t.Errorf("furniture: %s found at %d in %v", id, r, ids(hits))
		}
	}
	if r := rankOf(ix.Search("beverage", 10), "table"); r >= 0 {
		t.Errorf("beverage: the coffee table found at %d", r)
	}
}

// A related word counts for less than the word itself: a turn that says "furniture" ranks above
// one about a coffee table, and the related word's score is a fraction of the word's.
func TestRelatedLowWeight(t *testing.T) {
	docs := append(home(), Doc{ID: "said", Role: "user", Group: "s7", Text: "I sold some furniture from the living room."})
	ix := NewIndex(Config{Related: 0.3})
	ix.Add(docs...)
	hits := ix.Search("furniture", 10)
	said, table := rankOf(hits, "said"), rankOf(hits, "table")
	if said != 0 || table < 0 {
		t.Fatalf("furniture: the turn saying it at %d, the coffee table at %d in %v; want 0 and found", said, table, ids(hits))
	}
	if r := hits[table].Keyword / hits[said].Keyword; r > 0.3 || r <= 0 || math.IsNaN(r) {
		t.Errorf("coffee table's keyword score %.4f is %.2f of the word's %.4f, want at most 0.3", hits[table].Keyword, r, hits[said].Keyword)
	}
}

// Removing a document takes its related words out too: an index whose documents were added and
// removed holds what an empty one does.
func TestRelatedRemoved(t *testing.T) {
	docs := home()
	ix := NewIndex(Config{Related: 0.3})
	ix.Add(docs...)
	before := ix.Bytes()
	ix.RemoveDocs(docs[0], docs[1])
	if hits := ix.Search("furniture", 10); len(hits) != 0 {
		t.Errorf("furniture after removing the table and the sofa: %v", ids(hits))
	}
	ix.Add(docs[0], docs[1])
	if got := ix.Bytes(); got != before {
		t.Errorf("Bytes after removing and adding back two turns = %d, want %d", got, before)
	}
	ix.Remove("table")
	ix.RemoveDocs(docs[1:]...)
	if n, b := ix.Len(), ix.Bytes(); n != 0 || b != NewIndex(Config{}).Bytes() {
		t.Errorf("after removing every document: Len %d, Bytes %d; want 0 and an empty index's %d", n, b, NewIndex(Config{}).Bytes())
	}
}
