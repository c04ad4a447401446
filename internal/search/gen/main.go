// Command gen cuts jieba's Chinese dictionary (jieba.dict.utf8, MIT licence, as cppjieba ships it
// inside the Go module github.com/yanyiwu/gojieba) into the word list that package search embeds
// for Words: the words written in Han characters alone with their counts, those counted fewer
// than --min-count times left out, sorted, gzipped. `make hanwords` runs it on the module that
// `go mod download` fetches at a pinned version; the output is committed, so building agentmem
// needs neither the module nor the network.
//
// Usage:
//
//	go run ./internal/search/gen --in jieba.dict.utf8 --out internal/search/hanwords.txt.gz
//
// The file's format is documented in package search (words.go).
package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	in := fs.String("in", "", "jieba.dict.utf8 (deps/cppjieba/dict/ of github.com/yanyiwu/gojieba@v1.4.6)")
	sum := fs.String("sha256", "3043b77068e09c9904f27cad82f12b6ebe9dbdb5aeff3b25e45ab7f9c1122b55", "expected SHA-256 of --in (empty: not checked)")
	out := fs.String("out", "", "the file to write")
	minCount := fs.Int("min-count", 5, "leave out words counted fewer times (single characters are always kept)")
	maxLen := fs.Int("max-len", 6, "leave out words of more characters")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *in == "" || *out == "" {
		return errors.New("--in and --out are required")
	}
	data, err := os.ReadFile(*in)
	if err != nil {
		return err
	}
	if *sum != "" {
		h := sha256.Sum256(data)
		if got := hex.EncodeToString(h[:]); got != *sum {
			return fmt.Errorf("%s has SHA-256 %s, want %s (another version of the dictionary?)", *in, got, *sum)
		}
	}
	type word struct {
		w string
		n int
	}
	var words []word
	total := 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			return fmt.Errorf("%s:%d: want a word and its count, got %q", *in, line, sc.Text())
		}
		n, err := strconv.Atoi(f[1])
		if err != nil || n < 1 {
			return fmt.Errorf("%s:%d: count %q is not a positive integer", *in, line, f[1])
		}
		total += n
		w := f[0]
		k := utf8.RuneCountInString(w)
		if !allHan(w) || k > *maxLen || (k > 1 && n < *minCount) {
			continue
		}
		words = append(words, word{w, n})
	}
	if err := sc.Err(); err != nil {
		return err
	}
	slices.SortFunc(words, func(a, b word) int { return strings.Compare(a.w, b.w) })
	var b bytes.Buffer
	zw, err := gzip.NewWriterLevel(&b, gzip.BestCompression)
	if err != nil {
		return err
	}
	// The first line is the total count of the whole dictionary, which the probabilities are of.
	fmt.Fprintf(zw, "%d\n", total)
	for i, w := range words {
		if i > 0 && words[i-1].w == w.w {
			return fmt.Errorf("%s: %q is listed twice", *in, w.w)
		}
		fmt.Fprintf(zw, "%s %d\n", w.w, w.n)
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := os.WriteFile(*out, b.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "gen: %d words of %d counts, %d bytes\n", len(words), total, b.Len())
	return nil
}

// allHan reports whether s is written in Han ideographs alone.
func allHan(s string) bool {
	for _, r := range s {
		if !(0x4E00 <= r && r <= 0x9FFF || 0x3400 <= r && r <= 0x4DBF || 0xF900 <= r && r <= 0xFAFF ||
			0x20000 <= r && r <= 0x2FA1F || r == 0x3007) {
			return false
		}
	}
	return s != ""
}
