// Package thesaurus gives the English words related to a word: its synonyms and the words for
// what it is a kind of (its hypernyms), from WordNet 3.0. A coffee table is a table and a piece
// of furniture; a couch is a sofa, a seat and furniture; soccer is football and a sport. Package
// rank uses it, when configured to, to index a turn about a coffee table under "furniture" too,
// at a low weight, so that a question about furniture finds it.
//
// # Data
//
// wordnet-3.0.txt.gz is generated from WordNet 3.0 (Princeton University; its licence, in
// LICENSE-WordNet, allows use and redistribution with the notice) by `make thesaurus`
// (./gen): nouns of things and events in a frequency-limited vocabulary, their most frequent
// senses, the words of the same synset and of hypernyms up to three levels up, leaving out
// hypernyms too general to say anything (artifact, event, person). README.md in this folder
// says how it was made and what it holds.
//
// # Format
//
// Gzipped UTF-8 text. Lines starting with "#" are comments. Every other line is a key and its
// related words, separated by tabs:
//
//	coffee table	1table	2furniture	3furnishing
//
// The key is one search term or two joined by a space (search.Terms of the WordNet lemma:
// folded, stop words dropped, stemmed, as an index holds them); each related word is one search
// term after one digit, its depth: 0 for a synonym (same synset), n for a hypernym n levels up.
// Keys are sorted and distinct; a key's words are distinct, by depth.
package thesaurus

import (
	"bufio"
	"bytes"
	"compress/gzip"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
)

//go:embed wordnet-3.0.txt.gz
var vendored []byte

// ErrFormat is wrapped by the errors of [Read]: the data is not a table this package reads.
var ErrFormat = errors.New("thesaurus: bad table")

// Related is a word related to a key.
type Related struct {
	Word  string
	Depth int // 0: a synonym; n > 0: a hypernym n levels up
}

// Table maps search terms to their related words. It is read-only and safe for concurrent use.
type Table struct {
	keys  map[string]span
	rel   []uint32 // a word's index in words << 4 | its depth
	words []string
}

// span is where a key's related words are in Table.rel.
type span struct{ from, to uint32 }

const depthBits = 4

// Read reads a table in the format of the package comment. It fails with ErrFormat on a line
// that is not a key and related words.
func Read(r io.Reader) (*Table, error) {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	t := &Table{keys: map[string]span{}}
	ids := map[string]uint32{}
	sc := bufio.NewScanner(gz)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		fields := strings.Split(line, "\t")
		key := fields[0]
		if key == "" || len(fields) < 2 {
			return nil, fmt.Errorf("%w: line %d: %q: want a key and at least one related word", ErrFormat, n, line)
		}
		if _, dup := t.keys[key]; dup {
			return nil, fmt.Errorf("%w: line %d: key %q again", ErrFormat, n, key)
		}
		from := uint32(len(t.rel))
		for _, f := range fields[1:] {
			if len(f) < 2 || f[0] < '0' || f[0] > '9' {
				return nil, fmt.Errorf("%w: line %d: related word %q: want a depth digit and a word", ErrFormat, n, f)
			}
			w := f[1:]
			id, ok := ids[w]
			if !ok {
				id = uint32(len(t.words))
				ids[w] = id
				t.words = append(t.words, w)
			}
			t.rel = append(t.rel, id<<depthBits|uint32(f[0]-'0'))
		}
		t.keys[key] = span{from, uint32(len(t.rel))}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	t.rel = slices.Clip(t.rel)
	return t, nil
}

// Default returns the table embedded in the package, read on first use (about 0.1 s). It
// panics if the embedded table does not read, which the package's tests rule out.
func Default() *Table {
	t, err := loadDefault()
	if err != nil {
		panic(err)
	}
	return t
}

var loadDefault = sync.OnceValues(func() (*Table, error) { return Read(bytes.NewReader(vendored)) })

// Len returns the number of keys.
func (t *Table) Len() int { return len(t.keys) }

// Words returns the number of distinct related words.
func (t *Table) Words() int { return len(t.words) }

// Pairs returns the number of (key, related word) pairs.
func (t *Table) Pairs() int { return len(t.rel) }

// Lookup returns the words related to key (one search term, or two joined by a space), by
// depth, or nil when the table has no such key.
func (t *Table) Lookup(key string) []Related {
	sp, ok := t.keys[key]
	if !ok {
		return nil
	}
	out := make([]Related, 0, sp.to-sp.from)
	for _, r := range t.rel[sp.from:sp.to] {
		out = append(out, Related{Word: t.words[r>>depthBits], Depth: int(r & (1<<depthBits - 1))})
	}
	return out
}

// Expand appends to dst the words related to a text's search terms (in text order), each once,
// of depth at most maxDepth, leaving out the terms themselves. A pair of adjacent terms that is
// a key ("coffee table") is expanded instead of its two words, whose own senses are often
// another thing (coffee, a drink; table, a data table).
func (t *Table) Expand(dst []string, terms []string, maxDepth int) []string {
	start := len(dst)
	var key []byte
	covered := -1 // the last term of a pair already expanded
	for i, term := range terms {
		if i+1 < len(terms) {
			key = append(append(append(key[:0], term...), ' '), terms[i+1]...)
			if sp, ok := t.keys[string(key)]; ok {
				dst = t.appendSpan(dst, sp, maxDepth)
				covered = i + 1
				continue
			}
		}
		if i == covered {
			continue
		}
		if sp, ok := t.keys[term]; ok {
			dst = t.appendSpan(dst, sp, maxDepth)
		}
	}
	if len(dst) == start {
		return dst
	}
	added := dst[start:]
	slices.Sort(added)
	added = slices.Compact(added)
	own := slices.Clone(terms)
	slices.Sort(own)
	added = slices.DeleteFunc(added, func(w string) bool {
		_, found := slices.BinarySearch(own, w)
		return found
	})
	return dst[:start+len(added)]
}

func (t *Table) appendSpan(dst []string, sp span, maxDepth int) []string {
	for _, r := range t.rel[sp.from:sp.to] {
		if int(r&(1<<depthBits-1)) <= maxDepth {
			dst = append(dst, t.words[r>>depthBits])
		}
	}
	return dst
}
