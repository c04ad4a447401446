package search

import (
	"strings"
	"unicode/utf8"
)

// Terms splits text into index terms, in text order, repeats included. It never fails and
// never returns an empty term; text with no terms (empty, punctuation only, stop words only)
// gives none.
//
// Letters and digits of alphabetic scripts form words; anything else (spaces, ASCII and CJK
// punctuation, symbols, a change of script) ends a word. Words are folded before use:
// full-width ASCII to ASCII (ＧＯ → go), then simple Unicode case folding. English words are
// normalised: apostrophes and hyphens split words; a possessive or contraction suffix after
// an apostrophe ('s, 'll, 're, 've, 'd, 'm) is dropped, and negative contractions (don't,
// isn't, can't) are dropped whole; stop words (see stopWords) are dropped; what remains is
// lightly stemmed (see stem), so "languages" → "language" and "writing" → "write".
//
// Han, Hiragana, Katakana and Hangul are written without spaces, so each run of them gives
// every character as a unigram and every adjacent pair as a bigram: 编程语言 gives 编, 编程,
// 程, 程语, 语, 语言, 言. A run of one character gives its unigram alone. Very common function
// characters (的, 了, 是, 我, 什, 么, の, は, …; see functionChars) are not emitted as
// unigrams, nor is a bigram of two of them, but they stay in bigrams with a content character.
// Runs of other scripts inside CJK text are words of their own: 取件码改成了zq3k0x8ab1，明天
// gives zq3k0x8ab1 between the Chinese terms.
//
// Scripts written without spaces other than CJK (Thai, Lao, Khmer, …) are not segmented:
// a run of them is one word.
func Terms(text string) []string {
	// About one term in eight bytes of English (stop words dropped): most texts fill out
	// without growing it.
	t := tokenizer{text: text, out: make([]string, 0, len(text)/8+1)}
	t.split(true)
	return t.out
}

// tokenizer holds the state of one pass of Terms over a text. Terms are substrings of the
// text wherever folding changed nothing, so most of them cost no allocation.
type tokenizer struct {
	text string
	out  []string

	// The word being read: its byte span in text, and its folded form in word once folding
	// changed one of its runes (until then the span is the word, and word is not kept).
	inWord             bool
	wordStart, wordEnd int
	word               []byte
	folded             bool

	// A word that ended at an apostrophe followed by a letter: the next word may be a
	// clitic ('s, 't, 'll) that decides what happens to it.
	pending    string
	hasPending bool

	// The CJK run being read.
	runClass runeClass
	run      []cjkChar
}

// cjkChar is one character of a CJK run: its first rune and its byte span in the text,
// which takes in any combining marks after it.
type cjkChar struct {
	r          rune
	start, end int
}

// split reads the text. With ascii, an ASCII byte takes a short path that does what the
// general one does for it (no rune decoding, width or case folding tables): most text is
// ASCII, and splitting is most of the cost of indexing a turn.
func (t *tokenizer) split(ascii bool) {
	for i := 0; i < len(t.text); {
		if c := t.text[i]; ascii && c < utf8.RuneSelf {
			switch {
			case 'a' <= c && c <= 'z' || '0' <= c && c <= '9':
				if len(t.run) > 0 {
					t.flushRun()
				}
				t.addASCII(c, i)
			case 'A' <= c && c <= 'Z':
				if len(t.run) > 0 {
					t.flushRun()
				}
				t.addASCII(c+'a'-'A', i)
			case c == '\'':
				t.flushWord(t.inWord && t.wordFollows(i+1))
				t.flushRun()
			default:
				t.flushWord(false)
				t.flushRun()
			}
			i++
			continue
		}
		orig, size := utf8.DecodeRuneInString(t.text[i:])
		next := i + size
		r := foldWidth(orig)
		switch c := classify(r); c {
		case classWord:
			t.flushRun()
			t.addWordRune(orig, r, i, next)
		case classHanKana, classHangul:
			t.flushWord(false)
			if len(t.run) > 0 && t.runClass != c {
				t.flushRun()
			}
			t.runClass = c
			t.run = append(t.run, cjkChar{r: r, start: i, end: next})
		case classMark:
			switch {
			case t.inWord:
				t.addWordRune(orig, r, i, next)
			case len(t.run) > 0:
				t.run[len(t.run)-1].end = next
			}
		case classApostrophe:
			t.flushWord(t.inWord && t.wordFollows(next))
			t.flushRun()
		default:
			t.flushWord(false)
			t.flushRun()
		}
		i = next
	}
	t.flushWord(false)
	t.flushRun()
	if t.hasPending {
		t.hasPending = false
		t.emitWord(t.pending)
	}
}

// wordFollows reports whether the rune at byte offset i of the text starts a word.
func (t *tokenizer) wordFollows(i int) bool {
	if i >= len(t.text) {
		return false
	}
	r, _ := utf8.DecodeRuneInString(t.text[i:])
	return classify(foldWidth(r)) == classWord
}

// addWordRune adds a rune at text[start:end], orig before and r after width folding, to the
// current word.
func (t *tokenizer) addWordRune(orig, r rune, start, end int) {
	if !t.inWord {
		t.inWord = true
		t.wordStart = start
		t.folded = false
	}
	t.wordEnd = end
	f := foldCase(r)
	switch {
	case t.folded:
		t.word = utf8.AppendRune(t.word, f)
	case f != orig:
		t.foldFrom(start)
		t.word = utf8.AppendRune(t.word, f)
	}
}

// addASCII adds the ASCII letter or digit at text[i], lower-cased to c, to the current word.
func (t *tokenizer) addASCII(c byte, i int) {
	if !t.inWord {
		t.inWord = true
		t.wordStart = i
		t.folded = false
	}
	t.wordEnd = i + 1
	switch {
	case t.folded:
		t.word = append(t.word, c)
	case c != t.text[i]:
		t.foldFrom(i)
		t.word = append(t.word, c)
	}
}

// foldFrom starts keeping the current word's folded form, at the rune at text[i] (the first
// that folding changes): the word so far is the text.
func (t *tokenizer) foldFrom(i int) {
	t.word = append(t.word[:0], t.text[t.wordStart:i]...)
	t.folded = true
}

// flushWord ends the current word. atApostrophe says that it ended at an apostrophe
// followed by a letter, so the next word may be a clitic of it.
func (t *tokenizer) flushWord(atApostrophe bool) {
	if !t.inWord {
		return
	}
	t.inWord = false
	w := t.text[t.wordStart:t.wordEnd]
	if t.folded {
		w = string(t.word)
	}
	if t.hasPending {
		base := t.pending
		t.hasPending, t.pending = false, ""
		switch w {
		case "s", "ll", "re", "ve", "d", "m": // sister's, we'll, you're, I've, she'd, I'm
			t.emitWord(base)
			return
		case "t":
			if !strings.HasSuffix(base, "n") { // not don't, isn't, can't, won't
				t.emitWord(base)
			}
			return
		}
		t.emitWord(base) // o'clock, rock'n'roll: separate words
	}
	if atApostrophe {
		t.pending, t.hasPending = w, true
		return
	}
	t.emitWord(w)
}

func (t *tokenizer) emitWord(w string) {
	if w == "" || isStopWord(w) {
		return
	}
	t.out = append(t.out, stem(w))
}

// flushRun ends the current CJK run, emitting its unigrams and bigrams.
func (t *tokenizer) flushRun() {
	run := t.run
	for i, c := range run {
		fc := isFunctionChar(c.r)
		if !fc {
			t.out = append(t.out, t.text[c.start:c.end])
		}
		if i+1 < len(run) && !(fc && isFunctionChar(run[i+1].r)) {
			t.out = append(t.out, t.text[c.start:run[i+1].end])
		}
	}
	t.run = t.run[:0]
}
