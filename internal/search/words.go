package search

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"fmt"
	"io"
	"math"
	"strconv"
	"sync"
	"unicode/utf8"
)

// Words returns the Chinese words of two or more characters in text, in text order, repeats
// included, each a substring of text. It never fails; text without Han characters gives none.
//
// Each run of Han characters is cut into the sequence of words, from a dictionary, that is
// most probable when each word is drawn independently by its count in the dictionary (jieba's
// maximum-probability segmentation, without its model of unknown words: a character in no
// dictionary word stands alone): 我喜欢苹果汁 gives 喜欢, 苹果汁. Words of one character are
// not returned (they are Terms' unigrams), nor words of function characters alone (我们, 什么;
// see functionChars).
//
// The dictionary is jieba's (MIT licence), cut to the words counted at least five times
// (hanwords.txt.gz; README.md in this folder says where it comes from). It is of simplified
// Chinese: traditional characters are mostly not in it, and a traditional text gives few
// words. It is read the first time Words meets two Han characters together: 50 to 200 ms,
// and 2 MB held for the life of the process (BenchmarkReadWordTable); a process that never
// segments Chinese never reads it.
func Words(text string) []string {
	var out []string
	start, n := -1, 0 // the Han run being read: its first byte, its characters
	for i, r := range text {
		if isHan(r) {
			if start < 0 {
				start, n = i, 0
			}
			n++
			continue
		}
		if start >= 0 && n > 1 {
			out = hanWords().segment(out, text[start:i])
		}
		start = -1
	}
	if start >= 0 && n > 1 {
		out = hanWords().segment(out, text[start:])
	}
	return out
}

// isHan reports whether r is a Han ideograph (or 〇), the script the dictionary is written in.
func isHan(r rune) bool {
	return 0x4E00 <= r && r <= 0x9FFF || 0x3400 <= r && r <= 0x4DBF || 0xF900 <= r && r <= 0xFAFF ||
		0x20000 <= r && r <= 0x2FA1F || r == 0x3007
}

// hanwords.txt.gz is the dictionary: gzipped text, a first line with the total count of the
// dictionary it was cut from (the unit of the probabilities), then one word a line, sorted,
// with its count after a space. See README.md in this folder.
//
//go:embed hanwords.txt.gz
var hanwordsGz []byte

// hanWords returns the dictionary, read on first use. The embedded file is checked by the
// package's tests, so a failure to read it is a build defect: it panics.
var hanWords = sync.OnceValue(func() *wordTable {
	t, err := readWordTable(hanwordsGz)
	if err != nil {
		panic(fmt.Sprintf("search: reading the embedded Chinese dictionary: %v", err))
	}
	return t
})

// wordTable is a word list with each word's cost, −ln p(word), in an open-addressing hash
// table of 64-bit slots: a word's 64-bit hash with its low byte replaced by an entry (0 is an
// empty slot): bit 7 says that a longer word starts with it (a segmentation looks further
// only then), bits 0-6 hold its cost in costUnits above costBase, 0 for a string that is only
// the start of longer words. Two strings whose hashes differ only in the low byte would collide;
// among a few hundred thousand the chance is below one in a billion, and a collision only makes
// one word cost what the other does. 8 bytes a slot at a load between three eighths and three
// quarters: 2 MB for the 137,440 words and 38,925 starts of words of the embedded dictionary,
// where a map[string]float32 held 5 MB with the words' bytes.
type wordTable struct {
	slots   []uint64
	n       int   // strings held
	shift   uint  // 64 − log2(len(slots)): a hash's home slot is hash >> shift
	maxLen  int   // characters of the longest word
	unknown uint8 // the cost of a character in no word: a count of one
}

// Costs are stored in costUnits (an eighth of a nat) above costBase nats, from 1 to maxCost:
// from 2.125 nats (a word of one in 8 of the dictionary's count) to 17.875 (one in 58 million);
// the most common word (的, one in 19) costs 2.9.
const (
	costUnit   = 1.0 / 8
	costBase   = 2.0
	maxCost    = 0x7F
	prefixFlag = 0x80
)

// maxRun is the longest run of Han characters segmented whole; a longer one is cut in pieces
// of this length, which bounds the work and memory of one segmentation.
const maxRun = 256

// readWordTable reads a gzipped dictionary (see hanwordsGz).
func readWordTable(gz []byte) (*wordTable, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	data, err := io.ReadAll(zr)
	if err != nil {
		return nil, err
	}
	first, rest, _ := bytes.Cut(data, []byte("\n"))
	total, err := strconv.ParseFloat(string(first), 64)
	if err != nil || total < 1 {
		return nil, fmt.Errorf("line 1: total count %q is not a positive number", first)
	}
	t := &wordTable{unknown: quantiseCost(math.Log(total)), maxLen: 1}
	t.grow(bytes.Count(rest, []byte("\n")))
	for line := 2; len(rest) > 0; line++ {
		var l []byte
		l, rest, _ = bytes.Cut(rest, []byte("\n"))
		w, count, ok := bytes.Cut(l, []byte(" "))
		n, err := strconv.ParseFloat(string(count), 64)
		if !ok || err != nil || n < 1 || n > total || len(w) == 0 || !utf8.Valid(w) {
			return nil, fmt.Errorf("line %d: want a word, a space and its count, got %q", line, l)
		}
		// The word, and each of its starts (its first one, two, … characters but the last).
		h := uint64(fnvOffset)
		chars := 0
		for i := 0; i < len(w); {
			_, size := utf8.DecodeRune(w[i:])
			if chars > 0 {
				t.add(h, prefixFlag)
			}
			h = hashExtend(h, w[i:i+size])
			i += size
			chars++
		}
		t.add(h, quantiseCost(math.Log(total/n)))
		t.maxLen = max(t.maxLen, chars)
	}
	return t, nil
}

// quantiseCost returns a cost in nats in costUnits above costBase, from 1 to maxCost.
func quantiseCost(nats float64) uint8 {
	return uint8(min(max(math.Round((nats-costBase)/costUnit), 1), maxCost))
}

// bitsFor returns log2(n) of a power of two.
func bitsFor(n int) int {
	b := 0
	for n > 1 {
		n >>= 1
		b++
	}
	return b
}

// FNV-1a, 64 bits: hashString(s) is hashExtend(fnvOffset, s).
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func hashString(s string) uint64 { return hashExtend(fnvOffset, s) }

// hashExtend continues the hash h of a string with the bytes of s.
func hashExtend[S string | []byte](h uint64, s S) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}

// mix is MurmurHash3's 64-bit finaliser: FNV-1a leaves the bits of short strings that share
// most of their bytes (UTF-8 of Han characters) poorly spread, so that probes ran long.
func mix(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// key is a hash with its low byte cleared, never zero.
func key(h uint64) uint64 {
	if k := h &^ 0xFF; k != 0 {
		return k
	}
	return 1 << 8
}

// add adds entry e (a cost, or prefixFlag) for the string of hash h, merged with the entry it
// has: the table grows to keep its load at most three quarters.
func (t *wordTable) add(h uint64, e uint8) {
	if (t.n+1)*4 > len(t.slots)*3 {
		t.grow(2 * len(t.slots))
	}
	h = mix(h)
	k := key(h)
	mask := uint64(len(t.slots) - 1)
	for i := h >> t.shift; ; i = (i + 1) & mask {
		s := t.slots[i]
		if s == 0 {
			t.slots[i] = k | uint64(e)
			t.n++
			return
		}
		if s&^0xFF == k {
			old := uint8(s)
			t.slots[i] = k | uint64((old|e)&prefixFlag|max(old&maxCost, e&maxCost))
			return
		}
	}
}

// grow makes room for n strings at a load of at most three quarters. A slot keeps the high bits
// of its string's hash, its home: the entries move without their strings.
func (t *wordTable) grow(n int) {
	size := 16
	for size*3 < n*4 {
		size *= 2
	}
	if size <= len(t.slots) {
		return
	}
	old := t.slots
	t.slots = make([]uint64, size)
	t.shift = uint(64 - bitsFor(size))
	mask := uint64(size - 1)
	for _, s := range old {
		if s == 0 {
			continue
		}
		i := s >> t.shift
		for t.slots[i] != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = s
	}
}

// lookup returns the entry of the string of hash h: its cost (0 when it is no word but the
// start of one), whether a longer word starts with it, and whether there is an entry at all.
func (t *wordTable) lookup(h uint64) (cost uint8, prefix, ok bool) {
	h = mix(h)
	k := key(h)
	mask := uint64(len(t.slots) - 1)
	for i := h >> t.shift; ; i = (i + 1) & mask {
		s := t.slots[i]
		if s == 0 {
			return 0, false, false
		}
		if s&^0xFF == k {
			return uint8(s) & maxCost, s&prefixFlag != 0, true
		}
	}
}

// segment appends to out the words of two or more characters, not all function characters, of
// the most probable segmentation of run, a run of Han characters.
func (t *wordTable) segment(out []string, run string) []string {
	// Working arrays on the stack for a run of up to 64 characters, most runs.
	var posBuf [65]int
	var bestBuf, nextBuf [65]int32
	pos := posBuf[:0] // byte offset of each character, and of the end
	for i := range run {
		pos = append(pos, i)
	}
	pos = append(pos, len(run))
	n := len(pos) - 1
	if n > maxRun {
		// A run this long is not prose: it is cut in pieces (a word across a cut is lost).
		for i := 0; i < n; i += maxRun {
			out = t.segment(out, run[pos[i]:pos[min(i+maxRun, n)]])
		}
		return out
	}
	// best[i]: the least cost of run[pos[i]:]; next[i]: where its first word ends.
	best, next := bestBuf[:], nextBuf[:]
	if n+1 > len(best) {
		best, next = make([]int32, n+1), make([]int32, n+1)
	}
	best[n] = 0
	for i := n - 1; i >= 0; i-- {
		h := uint64(fnvOffset)
		best[i] = math.MaxInt32
		for j := i + 1; j <= n && j-i <= t.maxLen; j++ {
			h = hashExtend(h, run[pos[j-1]:pos[j]])
			c, prefix, _ := t.lookup(h)
			if c == 0 && j == i+1 {
				c = t.unknown // a character alone is always a way on
			}
			if c != 0 {
				if v := int32(c) + best[j]; v < best[i] {
					best[i], next[i] = v, int32(j)
				}
			}
			if !prefix {
				break // no longer word starts here
			}
		}
	}
	for i := 0; i < n; i = int(next[i]) {
		j := int(next[i])
		if j-i < 2 {
			continue
		}
		w := run[pos[i]:pos[j]]
		if !functionWord(w) {
			out = append(out, w)
		}
	}
	return out
}

// functionWord reports whether every character of w is a function character.
func functionWord(w string) bool {
	for _, r := range w {
		if !isFunctionChar(r) {
			return false
		}
	}
	return true
}
