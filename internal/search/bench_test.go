package search

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// repeatTo repeats sentences until the text is n bytes long, cut at a rune boundary.
func repeatTo(n int, sentences ...string) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		b.WriteString(sentences[i%len(sentences)])
		b.WriteByte(' ')
	}
	s := b.String()
	for len(s) > n {
		_, size := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-size]
	}
	return s
}

func BenchmarkTerms(b *testing.B) {
	texts := []struct{ name, text string }{
		{"english", repeatTo(1024,
			"I love writing Go, it's my favourite language.",
			"The weekly meeting moved to Thursdays at 10am because the team's schedule changed.",
			"She doesn't like running tests on the old machines; they are slow and flaky.")},
		{"chinese", repeatTo(1024,
			"我最喜欢的编程语言是 Go。",
			"每周的例会改到周四上午十点，因为团队的安排变了。",
			"取件码改成了zq3k0x8ab1，明天去拿。")},
	}
	for _, tt := range texts {
		b.Run(tt.name, func(b *testing.B) {
			b.SetBytes(int64(len(tt.text)))
			b.ReportAllocs()
			for b.Loop() {
				Terms(tt.text)
			}
		})
	}
}

// benchCorpus builds n documents, half English-like and half Chinese, with words drawn
// from a Zipf distribution as in natural text.
func benchCorpus(n int) map[string]string {
	rng := rand.New(rand.NewPCG(1, 2))
	words := rand.NewZipf(rng, 1.1, 1, 4999)
	chars := rand.NewZipf(rng, 1.1, 1, 2999)
	docs := make(map[string]string, n)
	var b strings.Builder
	for i := range n {
		b.Reset()
		if i%2 == 0 {
			for range 40 {
				fmt.Fprintf(&b, "word%c%d ", 'a'+rune(i%3), words.Uint64())
			}
		} else {
			for range 60 {
				b.WriteRune(0x4E00 + rune(chars.Uint64()))
				if rng.IntN(10) == 0 {
					b.WriteString("，")
				}
			}
		}
		docs[fmt.Sprintf("doc-%05d", i)] = b.String()
	}
	return docs
}

func BenchmarkIndexScore(b *testing.B) {
	ix := NewIndex()
	for id, text := range benchCorpus(10_000) {
		ix.Add(id, text)
	}
	queries := []struct{ name, query string }{
		{"english-common", "worda1 wordb2 wordc3"},
		{"english-rare", "worda1 worda4000 wordb4500 wordc4999"},
		{"chinese", string([]rune{0x4E00, 0x4E01, 0x4E02, 0x4E10, 0x4E20, 0x4F00})},
	}
	for _, q := range queries {
		b.Run(q.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				ix.Score(q.query)
			}
			b.ReportMetric(float64(len(ix.Score(q.query))), "matches")
		})
	}
}

func BenchmarkIndexAdd(b *testing.B) {
	docs := benchCorpus(10_000)
	ids := make([]string, 0, len(docs))
	for id := range docs {
		ids = append(ids, id)
	}
	ix := NewIndex()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		id := ids[i%len(ids)]
		ix.Add(id, docs[id])
		i++
	}
}
