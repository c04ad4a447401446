package rank

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// syntheticCorpus returns n turns in sessions of 20, user and assistant alternating, a third
// of the sessions in Chinese: words drawn with a Zipf distribution from a vocabulary of 20,000
// pseudo-words (or 3,000 Han characters), user turns of about 40 words, assistant turns of
// about 150, as in LongMemEval's haystacks.
func syntheticCorpus(n int) (docs []Doc, words []string, han []rune) {
	rng := rand.New(rand.NewPCG(1, 1))
	syll := strings.Fields("ka to mi ra sen lo vi ta ne po gu shi an el or ry ber ton mar lin qu dra")
	words = make([]string, 20000)
	for i := range words {
		var b strings.Builder
		for range 2 + rng.IntN(3) {
			b.WriteString(syll[rng.IntN(len(syll))])
		}
		words[i] = b.String()
	}
	han = make([]rune, 3000)
	for i := range han {
		han[i] = rune(0x4E00 + rng.IntN(0x9FA5-0x4E00))
	}
	zw := rand.NewZipf(rng, 1.1, 10, uint64(len(words)-1))
	zh := rand.NewZipf(rng, 1.05, 10, uint64(len(han)-1))
	for i := range n {
		session := i / 20
		role, length := "user", 20+rng.IntN(40)
		if i%2 == 1 {
			role, length = "assistant", 80+rng.IntN(140)
		}
		var b strings.Builder
		if session%3 == 2 {
			for j := range length * 2 {
				b.WriteRune(han[zh.Uint64()])
				if j%12 == 11 {
					b.WriteString("，")
				}
			}
		} else {
			for range length {
				b.WriteString(words[zw.Uint64()])
				b.WriteByte(' ')
			}
		}
		docs = append(docs, Doc{ID: fmt.Sprintf("s%04d-%02d", session, i%20), Text: b.String(),
			Group: fmt.Sprintf("s%04d", session), Pos: i % 20, Role: role, Kind: "turn"})
	}
	return docs, words, han
}

// BenchmarkSearch10k measures a search among 10,000 turns (about 1.3 M terms): English
// questions of about six content words, Chinese questions of about eight characters, and a
// long query (a 1,000-character dialogue), each returning the top 20. Besides ns/op it reports
// the 99th percentile of the wall time and the median and 99th percentile of the thread's CPU
// time per search (on Linux), which a busy machine does not inflate.
//
// The dialogue-* runs search the same turns with every dialogue field present: each turn has a
// named speaker, and each turn after another speaker's question (here every one: the previous
// turn is made to end with a question mark) has it as its context and addressee.
func BenchmarkSearch10k(b *testing.B) {
	docs, words, han := syntheticCorpus(10000)
	ix := NewIndex(Config{})
	ix.Add(docs...)
	bytesPerDoc := float64(ix.Bytes()) / float64(ix.Len())
	dialogue := slices.Clone(docs)
	names := []string{"Calvin", "Dave"}
	for i := range dialogue {
		dialogue[i].Speaker = names[i%2]
		if i%20 > 0 {
			dialogue[i].Context, dialogue[i].Addressee = docs[i-1].Text+"?", names[(i-1)%2]
		}
	}
	dix := NewIndex(Config{})
	dix.Add(dialogue...)
	dBytesPerDoc := float64(dix.Bytes()) / float64(dix.Len())
	rng := rand.New(rand.NewPCG(2, 2))
	zw := rand.NewZipf(rng, 1.1, 10, uint64(len(words)-1))
	queries := map[string][]string{}
	for range 64 {
		var en, zh, long strings.Builder
		en.WriteString("what did I say about ")
		for range 6 {
			en.WriteString(words[zw.Uint64()] + " ")
		}
		for range 8 {
			zh.WriteRune(han[rng.IntN(600)])
		}
		zh.WriteString("是什么？")
		for long.Len() < 1000 {
			long.WriteString(words[zw.Uint64()] + " ")
		}
		queries["en"] = append(queries["en"], en.String())
		queries["zh"] = append(queries["zh"], zh.String())
		queries["long"] = append(queries["long"], long.String())
	}
	for _, kind := range []string{"en", "zh", "long", "dialogue-en", "dialogue-long"} {
		b.Run(kind, func(b *testing.B) {
			ix, bytesPerDoc, qkind := ix, bytesPerDoc, kind
			if k, ok := strings.CutPrefix(kind, "dialogue-"); ok {
				ix, bytesPerDoc, qkind = dix, dBytesPerDoc, k
			}
			qs := queries[qkind]
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var wall, cpu []time.Duration
			i := 0
			for b.Loop() {
				start, startCPU := time.Now(), threadCPU()
				ix.Search(qs[i%len(qs)], 20)
				cpu = append(cpu, threadCPU()-startCPU)
				wall = append(wall, time.Since(start))
				i++
			}
			slices.Sort(wall)
			slices.Sort(cpu)
			b.ReportMetric(float64(wall[len(wall)*99/100].Microseconds()), "p99-µs")
			b.ReportMetric(float64(cpu[len(cpu)/2].Microseconds()), "cpu-p50-µs")
			b.ReportMetric(float64(cpu[len(cpu)*99/100].Microseconds()), "cpu-p99-µs")
			b.ReportMetric(bytesPerDoc, "index-bytes/doc")
		})
	}
}

// BenchmarkAddRemove measures adding one turn to an index of 10,000 and removing it again, by
// its text (RemoveDocs, as the retriever does) and by its id alone (Remove, which looks through
// every posting).
func BenchmarkAddRemove(b *testing.B) {
	docs, _, _ := syntheticCorpus(10200)
	ix := NewIndex(Config{})
	ix.Add(docs[:10000]...)
	extra := docs[10000:]
	for _, byText := range []bool{true, false} {
		b.Run(map[bool]string{true: "by-text", false: "by-id"}[byText], func(b *testing.B) {
			i := 0
			for b.Loop() {
				d := extra[i%len(extra)]
				ix.Add(d)
				if byText {
					ix.RemoveDocs(d)
				} else {
					ix.Remove(d.ID)
				}
				i++
			}
		})
	}
}

// chineseCorpus returns n turns of Chinese in sessions of 20 (user turns of about 60
// characters, assistant turns of about 250, punctuated every dozen characters), each word drawn
// by its count in the dictionary of internal/search (jieba's, the 20,000 most counted words and
// characters): text whose words a segmentation finds, as it finds a real text's.
func chineseCorpus(tb testing.TB, n int) (docs []Doc, vocab []string) {
	gz, err := os.ReadFile("../search/hanwords.txt.gz")
	if err != nil {
		tb.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		tb.Fatal(err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		tb.Fatal(err)
	}
	type word struct {
		w string
		n float64
	}
	var words []word
	for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if w, count, ok := strings.Cut(line, " "); ok && i > 0 {
			c, _ := strconv.ParseFloat(count, 64)
			words = append(words, word{w, c})
		}
	}
	slices.SortFunc(words, func(a, b word) int { return cmp.Compare(b.n, a.n) })
	words = words[:20000]
	cum := make([]float64, len(words))
	sum := 0.0
	for i, w := range words {
		sum += w.n
		cum[i] = sum
		vocab = append(vocab, w.w)
	}
	rng := rand.New(rand.NewPCG(3, 3))
	draw := func() string {
		i, _ := slices.BinarySearch(cum, rng.Float64()*sum)
		return words[min(i, len(words)-1)].w
	}
	for i := range n {
		session := i / 20
		role, length := "user", 40+rng.IntN(40)
		if i%2 == 1 {
			role, length = "assistant", 160+rng.IntN(180)
		}
		var b strings.Builder
		for chars := 0; chars < length; {
			w := draw()
			b.WriteString(w)
			chars += utf8.RuneCountInString(w)
			if rng.IntN(8) == 0 {
				b.WriteString("，")
			}
		}
		b.WriteString("。")
		docs = append(docs, Doc{ID: fmt.Sprintf("s%04d-%02d", session, i%20), Text: b.String(),
			Group: fmt.Sprintf("s%04d", session), Pos: i % 20, Role: role, Kind: "turn"})
	}
	return docs, vocab
}

// BenchmarkChineseWords measures what Config.ChineseWords costs on 10,000 turns of Chinese
// (chineseCorpus): the index's memory per turn, preparing a turn (splitting it into terms, and
// with words on segmenting it), and a search for a question of three words and for a dialogue
// of 1,000 characters, top 20 (p99 and the thread's CPU time, as in BenchmarkSearch10k).
func BenchmarkChineseWords(b *testing.B) {
	docs, vocab := chineseCorpus(b, 10000)
	rng := rand.New(rand.NewPCG(4, 4))
	var questions, dialogues []string
	for range 64 {
		questions = append(questions, "我上次说的"+vocab[200+rng.IntN(5000)]+vocab[200+rng.IntN(5000)]+vocab[200+rng.IntN(5000)]+"是什么？")
		var d strings.Builder
		for utf8.RuneCountInString(d.String()) < 1000 {
			d.WriteString(docs[rng.IntN(len(docs))].Text)
			d.WriteByte('\n')
		}
		dialogues = append(dialogues, string([]rune(d.String())[:1000]))
	}
	for _, words := range []float64{0, 1} {
		name := map[float64]string{0: "off", 1: "on"}[words]
		ix := NewIndex(Config{ChineseWords: words})
		ix.Add(docs...)
		bytesPerDoc := float64(ix.Bytes()) / float64(ix.Len())
		b.Run(name+"/prepare", func(b *testing.B) {
			i := 0
			for b.Loop() {
				ix.Prepare(docs[i%len(docs)])
				i++
			}
		})
		for _, q := range []struct {
			kind string
			qs   []string
		}{{"question", questions}, {"dialogue", dialogues}} {
			b.Run(name+"/"+q.kind, func(b *testing.B) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				var wall, cpu []time.Duration
				i := 0
				for b.Loop() {
					start, startCPU := time.Now(), threadCPU()
					ix.Search(q.qs[i%len(q.qs)], 20)
					cpu = append(cpu, threadCPU()-startCPU)
					wall = append(wall, time.Since(start))
					i++
				}
				slices.Sort(wall)
				slices.Sort(cpu)
				b.ReportMetric(float64(wall[len(wall)*99/100].Microseconds()), "p99-µs")
				b.ReportMetric(float64(cpu[len(cpu)/2].Microseconds()), "cpu-p50-µs")
				b.ReportMetric(float64(cpu[len(cpu)*99/100].Microseconds()), "cpu-p99-µs")
				b.ReportMetric(bytesPerDoc, "index-bytes/doc")
			})
		}
	}
}
