package wordvec_test

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/agentmem/agentmem/internal/embed/wordvec"
)

// referenceTokens is the first, plainly written tokenizer (strings.ToLower of each run), which
// the allocation-free one must agree with word for word.
func referenceTokens(text string) []string {
	var out []string
	start := -1
	afterApostrophe := false
	clitic := map[string]bool{"s": true, "t": true, "d": true, "ll": true, "re": true, "ve": true, "m": true}
	cjk := func(r rune) bool {
		return r >= 0x2E80 && unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul)
	}
	flush := func(end int) {
		if start < 0 {
			return
		}
		w := strings.ToLower(text[start:end])
		if !(afterApostrophe && clitic[w]) {
			out = append(out, w)
		}
		start = -1
	}
	for i, r := range text {
		if (unicode.IsLetter(r) || unicode.IsDigit(r)) && !cjk(r) {
			if start < 0 {
				start = i
				afterApostrophe = i > 0 && (text[i-1] == '\'' || strings.HasSuffix(text[:i], "’"))
			}
			continue
		}
		flush(i)
	}
	flush(len(text))
	return out
}

// TestTokensAgreeWithTheReference: random texts mixing ASCII letters of both cases, digits,
// punctuation, apostrophes (' and ’), clitics, accented and Greek letters with their own lower
// case, CJK, and broken UTF-8.
func TestTokensAgreeWithTheReference(t *testing.T) {
	pieces := []string{"a", "Z", "q", "0", "7", " ", ",", ".", "'", "’", "s", "t", "ll", "RE", "Ve", "M", "d",
		"É", "é", "Ç", "Σ", "ς", "İ", "ǅ", "我", "の", "カ", "한", "\xff", "\xe2\x80", "-", "_", "\n", "Go", "don't", "user’s"}
	r := rand.New(rand.NewPCG(1, 2))
	for n := range 20000 {
		var b strings.Builder
		for range r.IntN(30) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		text := b.String()
		if got, want := wordvec.Tokens(text), referenceTokens(text); !slices.Equal(got, want) {
			t.Fatalf("text %d %q: Tokens %q, reference %q", n, text, got, want)
		}
	}
}
