package search

import (
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

func BenchmarkWords(b *testing.B) {
	text := repeatTo(1024,
		"我最喜欢的编程语言是 Go。",
		"每周的例会改到周四上午十点，因为团队的安排变了。",
		"Bart在新开的冰淇淋店尝试了芒果口味的冰淇淋，感到非常开心。")
	Words(text) // the dictionary is read once
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		Words(text)
	}
}

// BenchmarkReadWordTable measures reading the embedded dictionary, which Words does once, and
// reports the heap it keeps.
func BenchmarkReadWordTable(b *testing.B) {
	b.ReportAllocs()
	var t *wordTable
	for b.Loop() {
		var err error
		if t, err = readWordTable(hanwordsGz); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(t.slots)*8), "table-bytes")
}
