package search

import "strings"

// stopWords are English function words dropped from terms: articles, auxiliaries, pronouns,
// question words, common prepositions and conjunctions, and a few fillers. The list is
// deliberately modest: words such as "go", "like", "may" or "us" are kept because they can
// carry meaning ("Go" the language, "May" the month, "US" the country).
var stopWords wordSet

func init() {
	for _, w := range strings.Fields(`
		a an the
		am is are was were be been being
		i me my we our you your he him his she her they them their it its
		what which who whose how when where why
		do does did have has had will would can could should
		of to in on at by for with from about as into
		and or but if so than then not no
		that this these those there
		just very also too`) {
		stopWords.add(w)
	}
}

func isStopWord(w string) bool { return stopWords.has(w) }

// wordSet is a small set of words. It is looked up by a hash of a word's length and first and
// last bytes, which is much cheaper than a map's hash of the whole word and, for a few hundred
// words, almost as selective: it is looked up once or twice for every word of every text indexed.
type wordSet struct {
	slots [256][]string
}

func wordHash(w string) uint8 { return uint8(len(w)*37 + int(w[0])*11 + int(w[len(w)-1])) }

func (s *wordSet) add(w string) {
	if w != "" && !s.has(w) {
		h := wordHash(w)
		s.slots[h] = append(s.slots[h], w)
	}
}

func (s *wordSet) has(w string) bool {
	if w == "" {
		return false
	}
	for _, x := range s.slots[wordHash(w)] {
		if x == w {
			return true
		}
	}
	return false
}

// all returns the words of the set.
func (s *wordSet) all() []string {
	var out []string
	for _, ws := range s.slots {
		out = append(out, ws...)
	}
	return out
}

// irregular maps a few frequent forms that the suffix rules would get wrong.
var irregular = map[string]string{
	"goes":     "go",
	"used":     "use",
	"children": "child",
	"movies":   "movie",
	"cookies":  "cookie",
}

// noStem lists words that look inflected but are not, or whose stem would be misleading.
var noStem wordSet

func init() {
	for _, w := range strings.Fields(`
		news series species always perhaps
		embed hundred during morning evening
		nothing something anything everything`) {
		noStem.add(w)
	}
}

// stem applies a conservative English normalisation to a lower-case word, in the spirit of
// step 1 of the Porter stemmer:
//
//   - plurals and third persons: "classes" → "class", "stories" → "story",
//     "boxes" → "box", "languages" → "language"; words in -ss, -us and -is are kept
//     ("class", "status", "analysis");
//   - -ed and -ing, when what remains has a vowel and at least three letters, restoring a
//     silent e or undoubling a final consonant the way Porter does: "coding" → "code",
//     "writing" → "write", "programming" → "program", "liked" → "like", "studied" → "study";
//     "string", "going" and "need" are kept.
//
// Only words of ASCII letters of length four or more are changed; numbers, mixed
// letter-digit tokens and other scripts pass through. Spelling variants are not unified
// ("favourite" and "favorite" stay distinct). The result is never empty.
func stem(w string) string {
	if len(w) < 4 || !isASCIILetters(w) {
		return w
	}
	if !stemEnds[w[len(w)-1]] {
		return w // most words: no lookup
	}
	return stemSuffixed(w)
}

// stemEnds holds the last letters of the words stem may change: those of the suffixes -s, -ed
// and -ing, and those of the irregular forms.
var stemEnds = [256]bool{'s': true, 'd': true, 'g': true}

// irregularWords are the keys of irregular, looked up before the map.
var irregularWords wordSet

func init() {
	for w := range irregular {
		stemEnds[w[len(w)-1]] = true
		irregularWords.add(w)
	}
}

// stemSuffixed is stem of an ASCII word of four letters or more.
func stemSuffixed(w string) string {
	if irregularWords.has(w) {
		return irregular[w]
	}
	if noStem.has(w) {
		return w
	}
	w = stemPlural(w)
	if noStem.has(w) {
		return w
	}
	return stemVerb(w)
}

func stemPlural(w string) string {
	n := len(w)
	switch {
	case strings.HasSuffix(w, "sses"):
		return w[:n-2]
	case strings.HasSuffix(w, "ies"):
		if n > 4 {
			return w[:n-3] + "y"
		}
		return w[:n-1] // ties → tie
	case n > 4 && (strings.HasSuffix(w, "xes") || strings.HasSuffix(w, "ches") || strings.HasSuffix(w, "shes")):
		return w[:n-2]
	case strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") &&
		!strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		return w[:n-1]
	}
	return w
}

func stemVerb(w string) string {
	n := len(w)
	var s string
	switch {
	case strings.HasSuffix(w, "eed"):
		return w // need, speed, agreed
	case n > 4 && strings.HasSuffix(w, "ied"):
		return w[:n-3] + "y"
	case strings.HasSuffix(w, "ed"):
		s = w[:n-2]
	case strings.HasSuffix(w, "ing"):
		s = w[:n-3]
	default:
		return w
	}
	if len(s) < 3 || !hasVowel(s) {
		return w
	}
	switch last := s[len(s)-1]; {
	case strings.HasSuffix(s, "at") || strings.HasSuffix(s, "bl") || strings.HasSuffix(s, "iz"):
		return s + "e" // related → relate, troubled → trouble
	case last == s[len(s)-2] && isConsonant(s, len(s)-1) && last != 'l' && last != 's' && last != 'z':
		return s[:len(s)-1] // programming → program, but falling → fall
	case measure(s) == 1 && endsCVC(s):
		return s + "e" // coding → code, writing → write
	}
	return s
}

func isASCIILetters(w string) bool {
	for i := 0; i < len(w); i++ {
		if c := w[i]; c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

// isConsonant reports whether w[i] is a consonant; y is one at the start or after a vowel.
func isConsonant(w string, i int) bool {
	switch w[i] {
	case 'a', 'e', 'i', 'o', 'u':
		return false
	case 'y':
		return i == 0 || !isConsonant(w, i-1)
	}
	return true
}

func hasVowel(w string) bool {
	for i := range len(w) {
		if !isConsonant(w, i) {
			return true
		}
	}
	return false
}

// measure is Porter's m: the number of vowel-consonant sequences in w.
func measure(w string) int {
	m := 0
	prevVowel := false
	for i := range len(w) {
		v := !isConsonant(w, i)
		if prevVowel && !v {
			m++
		}
		prevVowel = v
	}
	return m
}

// endsCVC reports whether w ends consonant-vowel-consonant with the last not w, x or y.
func endsCVC(w string) bool {
	n := len(w)
	if n < 3 {
		return false
	}
	switch w[n-1] {
	case 'w', 'x', 'y':
		return false
	}
	return isConsonant(w, n-3) && !isConsonant(w, n-2) && isConsonant(w, n-1)
}
