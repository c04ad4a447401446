package rank

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
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
