package thesaurus

import (
	"bytes"
	"compress/gzip"
	"errors"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/internal/search"
)

// gz returns text gzipped.
func gz(t testing.TB, text string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := w.Write([]byte(text)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func read(t testing.TB, text string) *Table {
	t.Helper()
	tab, err := Read(bytes.NewReader(gz(t, text)))
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

func words(rs []Related) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Word)
	}
	return out
}

// The embedded table reads, and holds what the package comment promises: a coffee table and a
// couch are furniture, soccer is a sport; keys are search terms, as an index holds them.
func TestDefault(t *testing.T) {
	tab := Default()
	if tab.Len() < 10000 || tab.Words() < 1000 {
		t.Fatalf("embedded table: %d keys, %d words; want a real table", tab.Len(), tab.Words())
	}
	for _, c := range []struct {
		key, word string
		depth     int
	}{
		{"coffee table", "furniture", 2},
		{"couch", "sofa", 0},
		{"couch", "furniture", 2},
		{"bed", "furniture", 2},
		{"soccer", "sport", 3},
		{"tournament", "contest", 1},
		{"guitar", "instrument", 2},
		{"cousin", "relative", 1},
	} {
		key := strings.Join(search.Terms(c.key), " ")
		rs := tab.Lookup(key)
		i := slices.IndexFunc(rs, func(r Related) bool { return r.Word == c.word })
		if i < 0 {
			t.Errorf("Lookup(%q) = %v, want %q among them", key, words(rs), c.word)
			continue
		}
		if rs[i].Depth != c.depth {
			t.Errorf("Lookup(%q): %q at depth %d, want %d", key, c.word, rs[i].Depth, c.depth)
		}
	}
	// Left out: hypernyms too general to tell anything, verbs, the noun senses of words that
	// are mostly something else ("felt" is felt(v) far more often than the fabric), and words
	// WordNet marks as slurs or archaic.
	for _, c := range []struct{ key, word string }{
		{"coffee table", "artifact"},
		{"soccer", "activity"},
		{"felt", "fabric"},
		{"run", "travel"},
		{"tom", "negro"},
		{"black man", "negro"},
	} {
		if slices.Contains(words(tab.Lookup(c.key)), c.word) {
			t.Errorf("Lookup(%q) = %v, want no %q", c.key, words(tab.Lookup(c.key)), c.word)
		}
	}
}

func TestRead(t *testing.T) {
	tab := read(t, "# a comment\ncoffee table\t1table\t2furniture\ncouch\t0sofa\t2furniture\n")
	if tab.Len() != 2 || tab.Words() != 3 {
		t.Fatalf("Len %d, Words %d; want 2 and 3 (furniture once)", tab.Len(), tab.Words())
	}
	got := tab.Lookup("coffee table")
	want := []Related{{"table", 1}, {"furniture", 2}}
	if !slices.Equal(got, want) {
		t.Errorf("Lookup(coffee table) = %v, want %v", got, want)
	}
	if got := tab.Lookup("table"); got != nil {
		t.Errorf("Lookup(table) = %v, want nil (no such key)", got)
	}
}

func TestReadRejects(t *testing.T) {
	for _, text := range []string{
		"couch\n",                        // no related word
		"\tsofa\n",                       // no key
		"couch\tsofa\n",                  // no depth
		"couch\t0\n",                     // no word
		"couch\t0sofa\ncouch\t0lounge\n", // a key twice
	} {
		if _, err := Read(bytes.NewReader(gz(t, text))); !errors.Is(err, ErrFormat) {
			t.Errorf("Read(%q) = %v, want ErrFormat", text, err)
		}
	}
	if _, err := Read(strings.NewReader("not gzip")); !errors.Is(err, ErrFormat) {
		t.Errorf("Read(not gzip) = %v, want ErrFormat", err)
	}
}

func TestExpand(t *testing.T) {
	tab := read(t, "coffee\t1beverage\ncoffee table\t1table\t2furniture\ntable\t1array\t1furniture\ncouch\t0sofa\t1seat\t2furniture\n")
	for _, c := range []struct {
		text  string
		depth int
		want  []string
	}{
		// The pair is expanded instead of its words: no beverage, no array; "table" is a
		// term of the text, so not a related word of it.
		{"I bought a new coffee table", 3, []string{"furniture"}},
		{"coffee in the morning", 3, []string{"beverage"}},
		{"a table of results", 3, []string{"array", "furniture"}},
		// Each word once, sorted; depth bounded.
		{"the couch and the coffee table", 3, []string{"furniture", "seat", "sofa"}},
		{"the couch and the coffee table", 1, []string{"seat", "sofa"}},
		{"the couch and the coffee table", 0, []string{"sofa"}},
		{"nothing to see here", 3, nil},
	} {
		got := tab.Expand(nil, search.Terms(c.text), c.depth)
		if !slices.Equal(got, c.want) {
			t.Errorf("Expand(%q, depth %d) = %q, want %q", c.text, c.depth, got, c.want)
		}
	}
	// Appends to dst without touching what is there.
	got := tab.Expand([]string{"zzz"}, search.Terms("couch"), 0)
	if want := []string{"zzz", "sofa"}; !slices.Equal(got, want) {
		t.Errorf("Expand onto [zzz] = %q, want %q", got, want)
	}
}

// BenchmarkRead reads the embedded table (what the first index with related words does once
// per process) and reports its size compressed and the heap it holds once read.
func BenchmarkRead(b *testing.B) {
	for b.Loop() {
		if _, err := Read(bytes.NewReader(vendored)); err != nil {
			b.Fatal(err)
		}
	}
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	tab, _ := Read(bytes.NewReader(vendored))
	runtime.GC()
	runtime.ReadMemStats(&m1)
	runtime.KeepAlive(tab)
	b.ReportMetric(float64(len(vendored)), "file-bytes")
	b.ReportMetric(float64(int64(m1.HeapAlloc)-int64(m0.HeapAlloc)), "heap-bytes")
}

// BenchmarkExpand expands a 60-word user turn.
func BenchmarkExpand(b *testing.B) {
	tab := Default()
	terms := search.Terms("I need some help finding new throw pillows for my couch. I just got a new coffee table " +
		"from West Elm about three weeks ago, and it's really made my living room feel modern, but my old pillows " +
		"are looking worn out. Can you give me some recommendations on where to find some affordable and stylish ones?")
	var dst []string
	for b.Loop() {
		dst = tab.Expand(dst[:0], terms, 3)
	}
}
