package wordvec

import (
	"unicode"
	"unicode/utf8"
)

// Tokens splits text into the lower-case words it looks up: maximal runs of letters and digits.
// Han, kana and Hangul end a word and are dropped (the vectors have no usable CJK entries), and
// so are the clitics after an apostrophe ("user's" → "user", "don't" → "don").
func Tokens(text string) []string {
	var out []string
	eachToken(text, nil, func(w []byte) { out = append(out, string(w)) })
	return out
}

// eachToken calls fn with each word Tokens returns, in order, lower-cased into scratch (grown as
// needed and returned for reuse): w is valid only during the call. It allocates nothing once
// scratch is long enough, which is what the embedder's hot loop needs (a text of 512 bytes has
// about 90 words).
func eachToken(text string, scratch []byte, fn func(w []byte)) []byte {
	w := scratch[:0]
	in := false
	afterApostrophe := false
	flush := func() {
		if in && !(afterApostrophe && clitic[string(w)]) {
			fn(w)
		}
		in, w = false, w[:0]
	}
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			switch {
			case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
			case 'A' <= c && c <= 'Z':
				c += 'a' - 'A'
			default:
				flush()
				i++
				continue
			}
			if !in {
				in, afterApostrophe = true, apostropheBefore(text, i)
			}
			w = append(w, c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		if (unicode.IsLetter(r) || unicode.IsDigit(r)) && !cjk(r) {
			if !in {
				in, afterApostrophe = true, apostropheBefore(text, i)
			}
			w = utf8.AppendRune(w, unicode.ToLower(r))
		} else {
			flush()
		}
		i += size
	}
	flush()
	return w
}

// apostropheBefore reports whether the word starting at i follows an apostrophe (' or ’).
func apostropheBefore(text string, i int) bool {
	return i > 0 && (text[i-1] == '\'' || (i >= len("’") && text[i-len("’"):i] == "’"))
}

// clitic holds the endings of English contractions and possessives.
var clitic = map[string]bool{"s": true, "t": true, "d": true, "ll": true, "re": true, "ve": true, "m": true}

func cjk(r rune) bool {
	return r >= 0x2E80 && unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul)
}
