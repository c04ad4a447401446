// Command gen derives the table that package thesaurus embeds from WordNet 3.0: for each noun
// of a frequency-limited vocabulary, the words of the same synset (synonyms) and of its
// hypernyms up to a depth, as search terms. `make thesaurus` runs it on the files of the Debian
// package wordnet-base; the output is committed, so building and testing agentmem need neither
// the package nor the network.
//
// Usage:
//
//	go run ./internal/thesaurus/gen --wordnet /usr/share/wordnet --out internal/thesaurus/wordnet-3.0.txt.gz
//
// What is kept (each a flag; the defaults measured best, see README.md next to the table):
//
//   - Lemmas: nouns (and verbs, with --verbs) whose words are all among the most frequent words
//     of GloVe 6B (the list package wordvec embeds, --vocab-words of them), and that are one or
//     two search terms, none a stop word (search.Terms: "coffee_table" is the key "coffee
//     table"; "run_in" is left out). With --dominant, only a lemma that SemCor tagged at least
//     as often in this part of speech as in any other, and that is no inflected form of another
//     word (verb.exc, adj.exc: "felt" is not the fabric).
//   - Senses: a lemma's most frequent sense, and its next ones (up to --senses) when SemCor
//     tagged them at least --sense-share times as often as the first (cntlist.rev): "table"
//     is a data table (52 tags) and a piece of furniture (25); and only senses of the
//     lexicographer files in --lexfiles (things and events: noun.artifact, noun.food, …).
//   - Related words: the other lemmas of each kept synset (depth 0) and of its hypernyms and
//     instance hypernyms, depth 1 to --depth, that are one search term in the vocabulary. A
//     hypernym with more than --max-descendants hyponyms below it (artifact, event, person,
//     activity) says nothing about a text and is left out, with everything above it. No word or
//     synset WordNet marks as an ethnic slur, disparaging, obscene or archaic is either.
//
// The file format is documented in package thesaurus.
package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/agentmem/agentmem/internal/embed/wordvec"
	"github.com/agentmem/agentmem/internal/search"
	"github.com/agentmem/agentmem/internal/thesaurus"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

type options struct {
	dir            string
	vocab          string
	vocabWords     int
	senses         int
	senseShare     float64
	depth          int
	maxDescendants int
	verbs          bool
	synonyms       bool
	dominant       bool
	lexfiles       map[string]bool
}

// lexNames are WordNet's lexicographer files of nouns and verbs, by number (lexnames(5WN)).
var lexNames = map[int]string{
	3: "noun.Tops", 4: "noun.act", 5: "noun.animal", 6: "noun.artifact", 7: "noun.attribute",
	8: "noun.body", 9: "noun.cognition", 10: "noun.communication", 11: "noun.event",
	12: "noun.feeling", 13: "noun.food", 14: "noun.group", 15: "noun.location", 16: "noun.motive",
	17: "noun.object", 18: "noun.person", 19: "noun.phenomenon", 20: "noun.plant",
	21: "noun.possession", 22: "noun.process", 23: "noun.quantity", 24: "noun.relation",
	25: "noun.shape", 26: "noun.state", 27: "noun.substance", 28: "noun.time",
	29: "verb.body", 30: "verb.change", 31: "verb.cognition", 32: "verb.communication",
	33: "verb.competition", 34: "verb.consumption", 35: "verb.contact", 36: "verb.creation",
	37: "verb.emotion", 38: "verb.motion", 39: "verb.perception", 40: "verb.possession",
	41: "verb.social", 42: "verb.stative", 43: "verb.weather",
}

func run(args []string) error {
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	var o options
	fs.StringVar(&o.dir, "wordnet", "/usr/share/wordnet", "WordNet 3.0's dict directory (data.noun, index.noun, cntlist.rev, …)")
	fs.StringVar(&o.vocab, "vocab", "internal/embed/wordvec/glove-6b-100d.bin.gz", "the word list, most frequent first (package wordvec's table)")
	fs.IntVar(&o.vocabWords, "vocab-words", 40000, "keep lemmas and related words made of the N most frequent words of --vocab")
	fs.IntVar(&o.senses, "senses", 2, "at most N senses of a lemma, the most frequent first")
	fs.Float64Var(&o.senseShare, "sense-share", 0.25, "a sense after the first is kept when tagged at least this share of the first's tags")
	fs.IntVar(&o.depth, "depth", 3, "hypernyms up to this depth (1: the direct hypernyms)")
	fs.IntVar(&o.maxDescendants, "max-descendants", 1000, "leave out hypernyms with more hyponyms below them (too general)")
	fs.BoolVar(&o.verbs, "verbs", false, "verbs as well as nouns (their lexicographer files must be in --lexfiles too)")
	fs.BoolVar(&o.synonyms, "synonyms", true, "the other words of a lemma's synsets (depth 0)")
	fs.BoolVar(&o.dominant, "dominant", true, "only lemmas SemCor tagged at least as often in this part of speech as in any other, and no inflected form of another word (felt, saw)")
	lexfiles := fs.String("lexfiles", "noun.act,noun.animal,noun.artifact,noun.event,noun.food,noun.location,noun.object,noun.person,noun.plant,noun.substance",
		"the lexicographer files (comma-separated; \"all\") whose synsets are expanded")
	out := fs.String("out", "", "the file to write (gzipped text)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" {
		return errors.New("--out is required")
	}
	o.lexfiles = map[string]bool{}
	for _, name := range strings.Split(*lexfiles, ",") {
		o.lexfiles[strings.TrimSpace(name)] = true
	}
	if o.senses < 1 || o.depth < 0 || o.depth > 9 {
		return fmt.Errorf("--senses %d, --depth %d: want senses >= 1 and depth in [0,9]", o.senses, o.depth)
	}
	vocab, err := readVocab(o.vocab, o.vocabWords)
	if err != nil {
		return err
	}
	tags, err := readTagCounts(filepath.Join(o.dir, "cntlist.rev"))
	if err != nil {
		return err
	}
	inflected := map[string]bool{}
	for _, name := range []string{"verb.exc", "adj.exc"} {
		if err := eachLine(filepath.Join(o.dir, name), func(f []string) error {
			if len(f) >= 2 && f[0] != f[1] {
				inflected[f[0]] = true
			}
			return nil
		}); err != nil {
			return err
		}
	}
	lemmaTags := map[string]map[byte]int{} // lemma → ss_type (satellites as adjectives) → tags
	for k, n := range tags {
		if lemmaTags[k.lemma] == nil {
			lemmaTags[k.lemma] = map[byte]int{}
		}
		pos := k.pos
		if pos == '5' {
			pos = '3'
		}
		lemmaTags[k.lemma][pos] += n
	}
	dominant := func(lemma string, pos byte) bool {
		if inflected[lemma] {
			return false
		}
		for p, n := range lemmaTags[lemma] {
			if p != pos && n > lemmaTags[lemma][pos] {
				return false
			}
		}
		return true
	}
	table := map[string]map[string]int{} // key → related term → least depth
	poses := []string{"noun"}
	if o.verbs {
		poses = append(poses, "verb")
	}
	var bad map[string]bool // the offensive usage domains, by offset in data.noun
	for _, pos := range poses {
		wn, err := readPOS(o.dir, pos)
		if err != nil {
			return err
		}
		if bad == nil {
			if bad, err = offensiveDomains(wn); err != nil {
				return err
			}
		}
		addPOS(table, wn, pos, tags, vocab, dominant, bad, o)
	}
	var buf bytes.Buffer
	lex := strings.Split(*lexfiles, ",")
	slices.Sort(lex)
	header := fmt.Sprintf("# agentmem thesaurus from WordNet 3.0 (Princeton University; see LICENSE-WordNet): %ss of GloVe 6B's "+
		"%d most frequent words, %d senses at most (share %.2f), depth %d, at most %d descendants, synonyms %v, "+
		"lexicographer files %s\n", strings.Join(poses, "s and "), o.vocabWords, o.senses, o.senseShare, o.depth,
		o.maxDescendants, o.synonyms, strings.Join(lex, " "))
	if err := write(&buf, header, table); err != nil {
		return err
	}
	// The file must read back as the lookup package reads it.
	t, err := thesaurus.Read(bytes.NewReader(buf.Bytes()))
	if err != nil {
		return fmt.Errorf("the table does not read back: %w", err)
	}
	if err := os.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "gen: %d keys, %d distinct related words, %d (key, word) pairs → %s (%d bytes)\n",
		t.Len(), t.Words(), t.Pairs(), *out, buf.Len())
	return nil
}

// readVocab returns the first n words of the word-vector table at path.
func readVocab(path string, n int) (map[string]bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m, err := wordvec.Read(f)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	words := m.Words[:min(n, len(m.Words))]
	out := make(map[string]bool, len(words))
	for _, w := range words {
		out[w] = true
	}
	return out, nil
}

// senseKey names a sense of a lemma in cntlist.rev's terms: the lemma, its part of speech
// (1 noun, 2 verb) and its sense number.
type senseKey struct {
	lemma string
	pos   byte
	num   int
}

// readTagCounts reads cntlist.rev: "sense_key sense_number tag_cnt" a line, the sense key
// "lemma%ss_type:lex_filenum:lex_id:head_word:head_id".
func readTagCounts(path string) (map[senseKey]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[senseKey]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 3 {
			continue
		}
		lemma, rest, ok := strings.Cut(fields[0], "%")
		if !ok || rest == "" {
			continue
		}
		num, err1 := strconv.Atoi(fields[1])
		cnt, err2 := strconv.Atoi(fields[2])
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%s: bad line %q", path, sc.Text())
		}
		out[senseKey{lemma, rest[0], num}] += cnt
	}
	return out, sc.Err()
}

// synset is one line of a data file: its words and its hypernyms' offsets.
type synset struct {
	lexfile   string
	words     []string // lower-cased, "_" between words
	hypernyms []string // offsets of its hypernyms and instance hypernyms, same part of speech
	// usages are its usage domains (";u" pointers): the offsets of the domains, and the number
	// of the word they are about (0: every word).
	usages []usage
}

type usage struct {
	domain string
	word   int
}

// offensive are the usage domains (noun.communication synsets, by their first word) of words
// left out of the table: a slur, a disparaging or obscene word, an archaic one (WordNet's noun
// "Tom" is an ethnic slur; "Negro" is marked archaic).
var offensive = []string{"ethnic_slur", "disparagement", "obscenity", "archaism"}

// offensiveDomains returns the offsets of the usage domains named by offensive, from the nouns.
func offensiveDomains(nouns *wordnet) (map[string]bool, error) {
	out := map[string]bool{}
	for off, s := range nouns.synsets {
		if s.lexfile == "noun.communication" && slices.Contains(offensive, s.words[0]) {
			out[off] = true
		}
	}
	if len(out) != len(offensive) {
		return nil, fmt.Errorf("data.noun: found %d of the usage domains %v", len(out), offensive)
	}
	return out, nil
}

// offends reports whether word i of s (from 0; -1: the synset as a whole) has a usage domain
// of bad.
func (s *synset) offends(bad map[string]bool, i int) bool {
	for _, u := range s.usages {
		if bad[u.domain] && (u.word == 0 || u.word == i+1) {
			return true
		}
	}
	return false
}

// wordnet is one part of speech of WordNet: synsets by offset, and each lemma's synsets in sense
// order.
type wordnet struct {
	synsets  map[string]*synset
	lemmas   map[string][]string
	children map[string][]string
}

// readPOS reads data.<pos> and index.<pos>.
func readPOS(dir, pos string) (*wordnet, error) {
	wn := &wordnet{synsets: map[string]*synset{}, lemmas: map[string][]string{}, children: map[string][]string{}}
	if err := eachLine(filepath.Join(dir, "data."+pos), func(f []string) error {
		// offset lex_filenum ss_type w_cnt (word lex_id)… p_cnt (ptr offset pos source/target)…
		if len(f) < 4 {
			return errors.New("short line")
		}
		wc, err := strconv.ParseInt(f[3], 16, 32)
		if err != nil || len(f) < 5+2*int(wc) {
			return errors.New("bad word count")
		}
		lex, err := strconv.Atoi(f[1])
		if err != nil || lexNames[lex] == "" {
			return errors.New("bad lexicographer file number")
		}
		s := &synset{lexfile: lexNames[lex]}
		for i := range int(wc) {
			w := strings.ToLower(f[4+2*i])
			if j := strings.IndexByte(w, '('); j > 0 { // an adjective marker, "(a)"
				w = w[:j]
			}
			s.words = append(s.words, w)
		}
		i := 4 + 2*int(wc)
		pc, err := strconv.Atoi(f[i])
		if err != nil || len(f) < i+1+4*pc {
			return errors.New("bad pointer count")
		}
		for p := range pc {
			ptr := f[i+1+4*p:]
			if (ptr[0] == "@" || ptr[0] == "@i") && ptr[2] == pos[:1] {
				s.hypernyms = append(s.hypernyms, ptr[1])
			}
			if ptr[0] == ";u" {
				src, err := strconv.ParseInt(ptr[3][:2], 16, 32)
				if err != nil {
					return errors.New("bad pointer source")
				}
				s.usages = append(s.usages, usage{ptr[1], int(src)})
			}
		}
		wn.synsets[f[0]] = s
		return nil
	}); err != nil {
		return nil, err
	}
	if err := eachLine(filepath.Join(dir, "index."+pos), func(f []string) error {
		// lemma pos synset_cnt p_cnt (ptr_symbol)… sense_cnt tagsense_cnt (synset_offset)…
		if len(f) < 4 {
			return errors.New("short line")
		}
		sc, err1 := strconv.Atoi(f[2])
		pc, err2 := strconv.Atoi(f[3])
		if err1 != nil || err2 != nil || len(f) < 6+pc+sc {
			return errors.New("bad counts")
		}
		wn.lemmas[f[0]] = f[6+pc : 6+pc+sc]
		return nil
	}); err != nil {
		return nil, err
	}
	for off, s := range wn.synsets {
		for _, h := range s.hypernyms {
			if _, ok := wn.synsets[h]; !ok {
				return nil, fmt.Errorf("data.%s: synset %s has hypernym %s, which is not there", pos, off, h)
			}
			wn.children[h] = append(wn.children[h], off)
		}
	}
	for lemma, offs := range wn.lemmas {
		for _, off := range offs {
			if _, ok := wn.synsets[off]; !ok {
				return nil, fmt.Errorf("index.%s: %q has synset %s, which data.%s has not", pos, lemma, off, pos)
			}
		}
	}
	return wn, nil
}

// eachLine calls f with the fields of each line of a WordNet file but its licence header (the
// lines that start with a space).
func eachLine(path string, f func([]string) error) error {
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	br := bufio.NewReaderSize(file, 1<<16)
	for n := 1; ; n++ {
		line, err := br.ReadString('\n')
		if line != "" && line[0] != ' ' {
			if ferr := f(strings.Fields(line)); ferr != nil {
				return fmt.Errorf("%s:%d: %w", path, n, ferr)
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// descendants counts the synsets below each synset (each once), memoised in counts.
func (wn *wordnet) descendants(off string, counts map[string]int) int {
	if n, ok := counts[off]; ok {
		return n
	}
	seen := map[string]bool{}
	stack := slices.Clone(wn.children[off])
	for len(stack) > 0 {
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if !seen[c] {
			seen[c] = true
			stack = append(stack, wn.children[c]...)
		}
	}
	counts[off] = len(seen)
	return len(seen)
}

// addPOS adds the lemmas of one part of speech to table.
func addPOS(table map[string]map[string]int, wn *wordnet, pos string, tags map[senseKey]int, vocab map[string]bool,
	dominant func(string, byte) bool, bad map[string]bool, o options) {
	ssType := byte('1')
	if pos == "verb" {
		ssType = '2'
	}
	counts := map[string]int{}
	for lemma, offs := range wn.lemmas {
		key, ok := termsOf(lemma, vocab, 2)
		if !ok || o.dominant && !dominant(lemma, ssType) {
			continue
		}
		first := tags[senseKey{lemma, ssType, 1}]
		for i, off := range offs {
			if i >= o.senses {
				break
			}
			if i > 0 && (first == 0 || float64(tags[senseKey{lemma, ssType, i + 1}]) < o.senseShare*float64(first)) {
				continue
			}
			sense := wn.synsets[off]
			if !o.lexfiles["all"] && !o.lexfiles[sense.lexfile] || sense.offends(bad, slices.Index(sense.words, lemma)) {
				continue
			}
			rel := table[key]
			if rel == nil {
				rel = map[string]int{}
				table[key] = rel
			}
			add := func(s *synset, depth int) {
				for i, w := range s.words {
					if s.offends(bad, i) {
						continue
					}
					t, ok := termsOf(w, vocab, 1)
					if ok && !slices.Contains(strings.Fields(key), t) {
						if d, seen := rel[t]; !seen || depth < d {
							rel[t] = depth
						}
					}
				}
			}
			if o.synonyms {
				add(sense, 0)
			}
			level := []string{off}
			for depth := 1; depth <= o.depth && len(level) > 0; depth++ {
				var next []string
				for _, s := range level {
					for _, h := range wn.synsets[s].hypernyms {
						if wn.descendants(h, counts) > o.maxDescendants || wn.synsets[h].offends(bad, -1) {
							continue
						}
						add(wn.synsets[h], depth)
						next = append(next, h)
					}
				}
				level = next
			}
			if len(rel) == 0 {
				delete(table, key)
			}
		}
	}
}

// termsOf returns the search terms of a WordNet lemma ("coffee_table") joined by a space, if
// every word of it is in vocab and it has from 1 to most terms.
func termsOf(lemma string, vocab map[string]bool, most int) (string, bool) {
	words := strings.FieldsFunc(lemma, func(r rune) bool { return r == '_' || r == '-' })
	if len(words) == 0 {
		return "", false
	}
	for _, w := range words {
		if !vocab[w] {
			return "", false
		}
	}
	// Every word a term: a lemma with a stop word ("run_in", "put_up") is not its main word.
	ts := search.Terms(strings.Join(words, " "))
	if len(ts) != len(words) || len(ts) > most {
		return "", false
	}
	return strings.Join(ts, " "), true
}

// write writes table in the format package thesaurus reads, keys in order, each key's related
// words by depth then alphabetically, gzipped without a timestamp (the same bytes every run).
func write(w io.Writer, header string, table map[string]map[string]int) error {
	gz, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(gz)
	bw.WriteString(header)
	keys := make([]string, 0, len(table))
	for k := range table {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		rel := table[k]
		words := make([]string, 0, len(rel))
		for t := range rel {
			words = append(words, t)
		}
		slices.SortFunc(words, func(a, b string) int {
			if rel[a] != rel[b] {
				return rel[a] - rel[b]
			}
			return strings.Compare(a, b)
		})
		bw.WriteString(k)
		for _, t := range words {
			bw.WriteByte('\t')
			bw.WriteByte(byte('0' + rel[t]))
			bw.WriteString(t)
		}
		bw.WriteByte('\n')
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return gz.Close()
}
