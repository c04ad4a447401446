package wordvec_test

import (
	"bytes"
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/internal/embed"
	"github.com/agentmem/agentmem/internal/embed/wordvec"
)

var _ embed.Embedder = (*wordvec.Embedder)(nil)

func TestTokens(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"I live in Paris, and I work as a nurse.", []string{"i", "live", "in", "paris", "and", "i", "work", "as", "a", "nurse"}},
		{"The user's cat doesn't eat", []string{"the", "user", "cat", "doesn", "eat"}},
		{"我的猫叫小白 (Snow), it's 3", []string{"snow", "it", "3"}},
		{"我用的是海尔冰箱", nil},
		{"Café CRÈME", []string{"café", "crème"}},
		{"", nil},
	} {
		if got := wordvec.Tokens(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("Tokens(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func local(t testing.TB) *wordvec.Embedder {
	t.Helper()
	e, err := wordvec.New()
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func cosine(a, b []float32) float64 {
	var d, na, nb float64
	for i := range a {
		d += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return d / math.Sqrt(na*nb)
}

func TestEmbedMeaning(t *testing.T) {
	e := local(t)
	if e.Name() != wordvec.Name || !strings.Contains(e.Name(), "-v") {
		t.Fatalf("Name = %q, want %q with a version", e.Name(), wordvec.Name)
	}
	texts := []string{
		"What pet do I have?",
		"My cat is called Snow and she is three years old.",
		"The quarterly revenue of the company grew by four percent.",
		"I live in Paris and I work as a nurse.",
		"Which city does the user live in, and what is their job?",
		"我的宠物叫什么名字",
		"!!! ...",
	}
	vecs, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if len(vecs) != len(texts) {
		t.Fatalf("%d vectors for %d texts", len(vecs), len(texts))
	}
	for i, v := range vecs[:5] {
		var n float64
		for _, x := range v {
			n += float64(x) * float64(x)
		}
		if len(v) != e.Dim() || math.Abs(n-1) > 1e-4 {
			t.Errorf("text %d: %d dimensions, squared norm %g; want %d and 1", i, len(v), n, e.Dim())
		}
	}
	for _, i := range []int{5, 6} {
		if len(vecs[i]) != e.Dim() || slices.ContainsFunc(vecs[i], func(x float32) bool { return x != 0 }) {
			t.Errorf("text %q (no known word): %v, want a zero vector", texts[i], vecs[i])
		}
	}
	if pet, money := cosine(vecs[0], vecs[1]), cosine(vecs[0], vecs[2]); pet <= money {
		t.Errorf("cos(pet question, cat) = %.3f, not above cos(pet question, revenue) = %.3f", pet, money)
	}
	if job, other := cosine(vecs[4], vecs[3]), cosine(vecs[4], vecs[1]); job <= other {
		t.Errorf("cos(city and job, Paris nurse) = %.3f, not above cos(city and job, cat) = %.3f", job, other)
	}
	again, err := e.Embed(context.Background(), texts[:1])
	if err != nil || !slices.Equal(again[0], vecs[0]) {
		t.Errorf("embedding again gave another vector (%v)", err)
	}
}

func TestEmbedStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := local(t).Embed(ctx, []string{"a text"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Embed after cancel: %v, want context.Canceled", err)
	}
}

func TestWriteRead(t *testing.T) {
	words := []string{"the", "cat", "dog"}
	vecs := [][]float32{{0.5, -0.25, 0.125, 1}, {-2, 0.5, 0.25, 0}, {0, 0, 0, 0}}
	m := wordvec.Quantize(words, vecs, 4)
	var buf bytes.Buffer
	if err := m.Write(&buf); err != nil {
		t.Fatal(err)
	}
	got, err := wordvec.Read(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Words, words) || got.Dim != 4 || !slices.Equal(got.Q, m.Q) || !slices.Equal(got.Scales, m.Scales) || !slices.Equal(got.Common, m.Common) {
		t.Fatalf("read %+v, wrote %+v", got, m)
	}
	for i, v := range vecs[:2] {
		back := make([]float32, 4)
		for j := range back {
			back[j] = got.Scales[i] * float32(got.Q[i*4+j])
		}
		if c := cosine(v, back); c < 0.9999 {
			t.Errorf("word %q: cosine %.6f between the vector and its quantised copy", words[i], c)
		}
	}
	for _, bad := range [][]byte{nil, []byte("not gzip"), buf.Bytes()[:buf.Len()/2]} {
		if _, err := wordvec.Read(bytes.NewReader(bad)); !errors.Is(err, wordvec.ErrFormat) {
			t.Errorf("Read(%d bytes): %v, want ErrFormat", len(bad), err)
		}
	}
}

// BenchmarkEmbed embeds chat turns of about 30 words, one text per op; it reports texts/s.
func BenchmarkEmbed(b *testing.B) {
	e := local(b)
	texts := []string{
		"I've been thinking about getting a new refrigerator, the old one is making a weird noise at night and my wife is worried it will break down before the summer.",
		"Sure! When choosing a refrigerator, consider the capacity you need, energy efficiency ratings, and whether you prefer a freezer on top, bottom or side by side.",
		"We just moved to Paris last month and I started a new job as a nurse at a hospital near the river, so my schedule is pretty chaotic right now.",
	}
	ctx := context.Background()
	i := 0
	for b.Loop() {
		if _, err := e.Embed(ctx, texts[i%3:i%3+1]); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "texts/s")
}
