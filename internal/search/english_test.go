package search

import (
	"slices"
	"strings"
	"testing"
)

func TestStem(t *testing.T) {
	tests := []struct{ word, want string }{
		// plurals
		{"languages", "language"},
		{"cats", "cat"},
		{"classes", "class"},
		{"stories", "story"},
		{"ties", "tie"},
		{"boxes", "box"},
		{"matches", "match"},
		{"dishes", "dish"},
		{"sizes", "size"},
		{"movies", "movie"},
		// not plurals
		{"class", "class"},
		{"status", "status"},
		{"analysis", "analysis"},
		{"news", "news"},
		{"series", "series"},
		{"bus", "bus"},
		// -ing and -ed
		{"coding", "code"},
		{"coded", "code"},
		{"writing", "write"},
		{"programming", "program"},
		{"programmed", "program"},
		{"liked", "like"},
		{"liking", "like"},
		{"running", "run"},
		{"falling", "fall"},
		{"missed", "miss"},
		{"reading", "read"},
		{"related", "relate"},
		{"realized", "realize"},
		{"studied", "study"},
		{"studying", "study"},
		{"tried", "try"},
		{"playing", "play"},
		{"meetings", "meet"},
		{"embedding", "embed"},
		{"embeddings", "embed"},
		// kept
		{"embed", "embed"},
		{"needed", "need"},
		{"need", "need"},
		{"speed", "speed"},
		{"string", "string"},
		{"thing", "thing"},
		{"things", "thing"},
		{"going", "going"},
		{"morning", "morning"},
		{"used", "use"},
		{"goes", "go"},
		{"go", "go"},
		{"favourite", "favourite"},
		// not English letters: untouched
		{"zq3k0x8abs", "zq3k0x8abs"},
		{"1990s", "1990s"},
		{"cafés", "cafés"},
		{"straße", "straße"},
	}
	for _, tt := range tests {
		t.Run(tt.word, func(t *testing.T) {
			if got := stem(tt.word); got != tt.want {
				t.Errorf("stem(%q) = %q, want %q", tt.word, got, tt.want)
			}
		})
	}
}

// TestStemNeverEmpty checks that stemming never empties a word, whatever its suffixes.
func TestStemNeverEmpty(t *testing.T) {
	parts := []string{"", "s", "es", "ies", "ed", "ing", "ied", "eed", "sses", "ss", "us", "y", "e", "a", "bb"}
	for _, a := range parts {
		for _, b := range parts {
			for _, c := range parts {
				w := a + b + c
				if w == "" {
					continue
				}
				if got := stem(w); got == "" {
					t.Errorf("stem(%q) is empty", w)
				}
			}
		}
	}
}

// stem's quick exit (a last letter no rule changes) keeps what the rules give.
func FuzzStemQuickExit(f *testing.F) {
	for _, w := range []string{"children", "goes", "news", "program", "coding", "stories", "speed", "hello", "cookies", "movie"} {
		f.Add(w)
	}
	f.Fuzz(func(t *testing.T, w string) {
		want := w
		if len(w) >= 4 && isASCIILetters(w) {
			want = stemSuffixed(w)
		}
		if got := stem(w); got != want {
			t.Fatalf("stem(%q) = %q, the rules give %q", w, got, want)
		}
	})
}

// The stop words are found, and words near them are not.
func TestStopWordSet(t *testing.T) {
	all := stopWords.all()
	if len(all) < 50 {
		t.Fatalf("%d stop words", len(all))
	}
	for _, w := range all {
		if !isStopWord(w) {
			t.Errorf("%q is not a stop word", w)
		}
		for _, other := range []string{w + "x", "x" + w, w[:len(w)-1], strings.ToUpper(w)} {
			if isStopWord(other) && !slices.Contains(all, other) {
				t.Errorf("%q is taken for a stop word", other)
			}
		}
	}
}
