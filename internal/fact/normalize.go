package fact

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unicode"
)

// Normalize folds a fact's text for deduplication, so that statements differing only in case,
// width, spacing or punctuation compare equal. It never fails and is idempotent:
// Normalize(Normalize(s)) == Normalize(s).
//
// Step by step:
//   - full-width forms (U+FF01–U+FF5E) become their ASCII counterparts and the ideographic
//     space U+3000 a space;
//   - letters are case-folded (simple Unicode case folding, plus ß and ẞ to "ss");
//   - punctuation (ASCII and CJK: , . ! ? ; : 、 。 ！ ？ 「」 …), control and format characters
//     (zero-width spaces, byte order marks) are removed; '#' and '+' right after a letter or
//     digit (or another '+') stay, so that "C#" and "C++" do not collapse into "C";
//   - runs of white space become one space, and none is kept at either end or next to a Han,
//     kana or Hangul character ("我 喜欢 Go" and "我喜欢Go" are the same fact).
//
// Symbols and emoji are kept as they are.
func Normalize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	var (
		last    rune // last rune written, 0 at the start
		pending bool // white space seen since last
	)
	write := func(r rune) {
		if pending && last != 0 && !isCJK(last) && !isCJK(r) {
			b.WriteByte(' ')
		}
		pending = false
		b.WriteRune(r)
		last = r
	}
	for _, r := range s {
		r = foldWidth(r)
		switch {
		case unicode.IsSpace(r):
			pending = true
			continue
		case r == 'ß' || r == 'ẞ':
			write('s')
			write('s')
			continue
		case (r == '#' || r == '+') && !pending && (unicode.IsLetter(last) || unicode.IsDigit(last) || last == '+'):
			write(r)
			continue
		case r == '+':
			// A symbol, but only meaningful right after a name ("C++"); elsewhere it is
			// punctuation-like ("+1", "a + b") and would make spacing matter.
			continue
		case unicode.IsPunct(r), unicode.IsControl(r), unicode.Is(unicode.Cf, r), r == unicode.ReplacementChar:
			continue
		}
		write(foldCase(r))
	}
	return b.String()
}

// foldWidth maps full-width ASCII forms to ASCII and the ideographic space to a space.
func foldWidth(r rune) rune {
	switch {
	case r >= 0xFF01 && r <= 0xFF5E:
		return r - 0xFEE0
	case r == 0x3000:
		return ' '
	}
	return r
}

// foldCase is simple case folding: the lower case of the upper case, which maps every member
// of a case orbit (K, k, the Kelvin sign; Σ, σ, ς; ſ, s, S) to one rune.
func foldCase(r rune) rune {
	if r < 0x80 {
		if 'A' <= r && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}
	f := unicode.ToLower(unicode.ToUpper(r))
	// A handful of runes (e.g. U+0130 İ) do not round-trip; fold until stable so that
	// Normalize stays idempotent.
	for i := 0; i < 4; i++ {
		g := unicode.ToLower(unicode.ToUpper(f))
		if g == f {
			break
		}
		f = g
	}
	return f
}

// isCJK reports whether r belongs to a script written without spaces between words: Han,
// Hiragana, Katakana or Hangul.
func isCJK(r rune) bool {
	if r < 0x1100 {
		return false
	}
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul)
}

// ID derives a fact's id from its normalised content, scoped to a tenant and a user so that
// two users stating the same thing never share a fact: "fact_" followed by the first 32 hex
// digits of sha256(tenant 0x00 user 0x00 Normalize(content)). Contents equal after
// [Normalize] get the same id. It never fails.
func ID(tenant, user, content string) string {
	return "fact_" + digest(tenant, user, Normalize(content))
}

// KeyID derives the id of a key slot such as "user.city" the same way as [ID]: "key_"
// followed by the first 32 hex digits of sha256(tenant 0x00 user 0x00 key), the key trimmed
// and lower-cased (keys are ASCII slugs; they are not otherwise normalised, so "user.city" and
// "user_city" stay apart). It never fails.
func KeyID(tenant, user, key string) string {
	return "key_" + digest(tenant, user, strings.ToLower(strings.TrimSpace(key)))
}

func digest(tenant, user, s string) string {
	h := sha256.New()
	h.Write([]byte(tenant))
	h.Write([]byte{0})
	h.Write([]byte(user))
	h.Write([]byte{0})
	h.Write([]byte(s))
	return hex.EncodeToString(h.Sum(nil))[:32]
}
