package search

import (
	"unicode"
	"unicode/utf8"
)

// runeClass says what part a rune plays in splitting text into terms.
type runeClass uint8

const (
	classSep        runeClass = iota // ends any run: spaces, punctuation, symbols
	classWord                        // letter or digit of an alphabetic script
	classMark                        // combining mark: belongs to the rune before it
	classApostrophe                  // ' ’ ʼ: splits words, may introduce a clitic
	classHanKana                     // Han ideographs, Hiragana, Katakana
	classHangul                      // Korean Hangul
)

// classify returns the class of r, which must already be width-folded.
func classify(r rune) runeClass {
	if r < utf8.RuneSelf {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
			return classWord
		case r == '\'':
			return classApostrophe
		}
		return classSep
	}
	switch {
	case r == '\u2019' || r == '\u02BC': // right single quotation mark, modifier letter apostrophe
		return classApostrophe
	case r == 0x3099 || r == 0x309A: // combining kana voiced sound marks
		return classMark
	case isHanKana(r):
		return classHanKana
	case isHangul(r):
		return classHangul
	case unicode.IsLetter(r) || unicode.IsDigit(r):
		return classWord
	case unicode.IsMark(r):
		return classMark
	}
	return classSep
}

// isHanKana reports whether r is a Han ideograph (CJK Unified Ideographs, Extension A, the
// supplementary ideographic plane, compatibility ideographs, 々 and 〇) or kana.
func isHanKana(r rune) bool {
	switch {
	case 0x4E00 <= r && r <= 0x9FFF, // CJK Unified Ideographs
		0x3400 <= r && r <= 0x4DBF,                // Extension A
		0xF900 <= r && r <= 0xFAFF,                // Compatibility Ideographs
		0x20000 <= r && r <= 0x2FA1F,              // Extensions B and later, Compatibility Supplement
		r == 0x3005 || r == 0x3007,                // 々 iteration mark, 〇 ideographic zero
		0x3041 <= r && r <= 0x309F,                // Hiragana
		0x30A1 <= r && r <= 0x30FF && r != 0x30FB, // Katakana, without the middle dot ・
		0x31F0 <= r && r <= 0x31FF,                // Katakana Phonetic Extensions
		0xFF66 <= r && r <= 0xFF9F:                // Halfwidth Katakana
		return true
	}
	return false
}

// isHangul reports whether r is a Hangul syllable or jamo.
func isHangul(r rune) bool {
	switch {
	case 0xAC00 <= r && r <= 0xD7AF, // Syllables
		0x1100 <= r && r <= 0x11FF, // Jamo
		0x3130 <= r && r <= 0x318F, // Compatibility Jamo
		0xA960 <= r && r <= 0xA97F, // Jamo Extended-A
		0xD7B0 <= r && r <= 0xD7FF, // Jamo Extended-B
		0xFFA0 <= r && r <= 0xFFDC: // Halfwidth Hangul
		return true
	}
	return false
}

// foldWidth maps full-width ASCII (U+FF01–U+FF5E, as in ＧＯ or ，) to ASCII and the
// ideographic space to a space; other runes are returned unchanged.
func foldWidth(r rune) rune {
	switch {
	case 0xFF01 <= r && r <= 0xFF5E:
		return r - 0xFF01 + 0x21
	case r == 0x3000:
		return ' '
	}
	return r
}

// foldCase maps r to its case-folded form: simple (one rune to one rune) Unicode case
// folding, done as lower(upper(r)) so that, e.g., ſ, ς and the Kelvin sign fold like s, σ and k.
func foldCase(r rune) rune {
	if r < utf8.RuneSelf {
		if 'A' <= r && r <= 'Z' {
			r += 'a' - 'A'
		}
		return r
	}
	return unicode.ToLower(unicode.ToUpper(r))
}

// functionChars are very common Chinese function characters and Japanese particles. They
// carry little meaning alone, so they are not emitted as unigrams, and a bigram of two of them
// (什么, 是什, のは) is not emitted either; a bigram with one content character (喜欢的 gives
// 欢的) is kept.
var functionChars = map[rune]struct{}{}

func init() {
	for _, r := range "的了是我你他她它们在吗呢吧啊呀和与也都就还着过把被给这那个么什怎有不很之而或及" +
		"のはがをにでともへやかねよ" {
		functionChars[r] = struct{}{}
	}
}

func isFunctionChar(r rune) bool {
	_, ok := functionChars[r]
	return ok
}
