package wordvec

import (
	"strings"
	"unicode"
)

// Tokens splits text into the lower-case words it looks up: maximal runs of letters and digits.
// Han, kana and Hangul end a word and are dropped (the vectors have no usable CJK entries), and
// so are the clitics after an apostrophe ("user's" → "user", "don't" → "don").
func Tokens(text string) []string {
	var out []string
	start := -1
	afterApostrophe := false
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

// clitic holds the endings of English contractions and possessives.
var clitic = map[string]bool{"s": true, "t": true, "d": true, "ll": true, "re": true, "ve": true, "m": true}

func cjk(r rune) bool {
	return r >= 0x2E80 && unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul)
}
