package retrieve

import (
	"cmp"
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/embed"
	"github.com/agentmem/agentmem/internal/embed/wordvec"
	"github.com/agentmem/agentmem/internal/llm"
	"github.com/agentmem/agentmem/internal/llm/llmtest"
	"github.com/agentmem/agentmem/internal/rank"
	"github.com/agentmem/agentmem/internal/vector"
	"github.com/agentmem/agentmem/internal/vectors"
	"github.com/agentmem/agentmem/pkg/memory"
)

// memories is a small user memory: one fact per topic.
var memories = map[string]string{
	"cat":     "My cat is called Snow and she is three years old.",
	"paris":   "I moved to Paris last year and I work as a nurse at a hospital.",
	"revenue": "The quarterly revenue report is due on Friday.",
	"python":  "I prefer Python over Go for data analysis scripts.",
	"fridge":  "Our refrigerator is a Haier, bought in 2021.",
}

// ranked ranks memories for query as the retriever does: keyword hits and the nearest vectors
// become candidates (emb nil: keywords only), fuse scores them, best first.
func ranked(t *testing.T, emb Embedder, f Fusion, query string) []string {
	t.Helper()
	ix := rank.NewIndex(rank.Config{})
	ids := make([]string, 0, len(memories))
	for id := range memories {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		ix.Add(rank.Doc{ID: id, Text: memories[id]})
	}
	byID := map[string]*candidate{}
	var order []string
	for _, h := range ix.Search(query, 10) {
		byID[h.ID] = &candidate{entry: memory.Entry{ID: h.ID}, source: memory.SourceLong, keyword: h.Keyword, relevance: h.Relevance}
		order = append(order, h.ID)
	}
	if emb != nil {
		texts := []string{query}
		for _, id := range ids {
			texts = append(texts, memories[id])
		}
		vecs, err := emb.Embed(context.Background(), texts)
		if err != nil {
			t.Fatal(err)
		}
		vix, err := vector.New(vector.Config{Dim: len(vecs[0])})
		if err != nil {
			t.Fatal(err)
		}
		for i, id := range ids {
			if err := vix.Add(id, vecs[i+1]); err != nil {
				t.Fatal(err)
			}
		}
		vec := map[string]float64{}
		for _, h := range vix.Search(vecs[0], 10) {
			if r := vectorRelevance(float64(h.Score)); r > 0 {
				vec[h.ID] = r
			}
		}
		for _, id := range ids {
			c, ok := byID[id]
			if !ok {
				if _, near := vec[id]; !near {
					continue
				}
				c = &candidate{entry: memory.Entry{ID: id}, source: memory.SourceLong}
				byID[id] = c
				order = append(order, id)
			}
			v := vec[id]
			c.vector = &v
		}
	}
	cands := make([]candidate, 0, len(order))
	for _, id := range order {
		cands = append(cands, *byID[id])
	}
	fuse(f, cands)
	slices.SortStableFunc(cands, func(a, b candidate) int { return cmp.Compare(b.fused(), a.fused()) })
	var out []string
	for _, c := range cands {
		if c.fused() > 0 {
			out = append(out, c.entry.ID)
		}
	}
	return out
}

// checkFusion checks what fusion must do with any embedder that knows what the memories mean.
func checkFusion(t *testing.T, emb Embedder) {
	t.Helper()
	// Keywords find it: the keyword ranking's first stays first, and nothing the keywords found
	// is dropped.
	for _, q := range []string{"which Python scripts", "the Haier refrigerator", "revenue report Friday"} {
		kw := ranked(t, nil, Fusion{}, q)
		fused := ranked(t, emb, Fusion{}, q)
		if len(kw) == 0 || len(fused) == 0 || fused[0] != kw[0] {
			t.Errorf("%q: keywords rank %v, fused %v: the first changed", q, kw, fused)
		}
		for _, id := range kw {
			if !slices.Contains(fused, id) {
				t.Errorf("%q: keywords found %q, fused (%v) lost it", q, id, fused)
			}
		}
	}
	// Keywords find nothing: meaning does.
	for q, want := range map[string]string{"what pet do I have?": "cat", "which city, and what job?": "paris"} {
		if kw := ranked(t, nil, Fusion{}, q); slices.Contains(kw, want) {
			t.Fatalf("%q: keywords alone already find %q (%v): not a test of meaning", q, want, kw)
		}
		if got := ranked(t, emb, Fusion{}, q); len(got) == 0 || got[0] != want {
			t.Errorf("%q: fused ranking %v, want %q first", q, got, want)
		}
		if got := ranked(t, emb, Fusion{Rank: RankKeyword}, q); slices.Contains(got, want) {
			t.Errorf("%q: rank keyword found %q (%v) by its vector", q, want, got)
		}
		if got := ranked(t, emb, Fusion{Rank: RankVector}, q); len(got) == 0 || got[0] != want {
			t.Errorf("%q: rank vector %v, want %q first", q, got, want)
		}
	}
}

func TestFusionWithLocalEmbedder(t *testing.T) {
	emb, err := wordvec.New()
	if err != nil {
		t.Fatal(err)
	}
	checkFusion(t, emb)
	// A query with no known word (Chinese) has a zero vector: the ranking is the keywords'.
	q := "我的猫 Snow"
	if kw, fused := ranked(t, nil, Fusion{}, q), ranked(t, emb, Fusion{}, q); !slices.Equal(kw, fused) {
		t.Errorf("%q: keywords rank %v, fused %v", q, kw, fused)
	}
}

// topics is the fake endpoint's model: a text's vector counts its words per topic.
var topics = [][]string{
	{"pet", "cat", "snow", "dog"},
	{"city", "paris", "job", "nurse", "hospital", "work", "moved"},
	{"revenue", "report", "quarterly", "friday"},
	{"python", "go", "scripts", "analysis"},
	{"refrigerator", "haier", "fridge"},
}

func topicVector(text string) []float64 {
	v := make([]float64, len(topics)+1)
	v[len(topics)] = 0.2 // every text shares a little of one direction
	for _, w := range wordvec.Tokens(text) {
		for i, words := range topics {
			if slices.Contains(words, strings.TrimSuffix(w, "s")) || slices.Contains(words, w) {
				v[i]++
			}
		}
	}
	return v
}

func TestFusionWithEndpoint(t *testing.T) {
	srv := llmtest.NewServer(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			llmtest.WriteError(w, http.StatusBadRequest, "invalid_request_error", "", err.Error())
			return
		}
		req, err := llmtest.DecodeEmbeddings(body)
		if err != nil {
			llmtest.WriteError(w, http.StatusBadRequest, "invalid_request_error", "", err.Error())
			return
		}
		data := make([]llmtest.Embedding, len(req.Input))
		for i, text := range req.Input {
			data[i] = llmtest.Embedding{Index: i, Vector: topicVector(text)}
		}
		llmtest.WriteEmbeddings(w, req.Model, data, len(req.Input))
	})
	emb, err := embed.NewOpenAI(embed.Config{Endpoint: llm.Endpoint{BaseURL: srv.URL, Model: "fake-topics"}}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	checkFusion(t, emb)
	if srv.Count() == 0 {
		t.Fatal("the endpoint was never called")
	}
}

func TestFuseWithoutVectorsIsKeywordRelevance(t *testing.T) {
	zero := 0.0
	cands := []candidate{{relevance: 0.4}, {relevance: 0.1, vector: &zero}, {relevance: 0}}
	fuse(Fusion{}, cands)
	for i, c := range cands {
		if c.fused() != c.relevance {
			t.Errorf("candidate %d: fused %g, want its keyword relevance %g", i, c.fused(), c.relevance)
		}
	}
}

func TestFuseWeightShrinksAsKeywordsMatch(t *testing.T) {
	// The entry with the best vector overtakes a better keyword hit when keywords match weakly,
	// not when they match strongly.
	for _, tc := range []struct {
		top, other float64
		overtakes  bool
	}{{0.06, 0.05, true}, {0.95, 0.93, false}} {
		hi, lo := 1.0, 0.1
		cands := []candidate{{keyword: tc.top, relevance: tc.top, vector: &lo}, {keyword: tc.other, relevance: tc.other, vector: &hi}}
		fuse(Fusion{}, cands)
		if got := cands[1].fused() > cands[0].fused(); got != tc.overtakes {
			t.Errorf("keyword %g (vector %g) vs %g (vector %g): overtakes = %v, want %v (fused %g, %g)",
				tc.top, lo, tc.other, hi, got, tc.overtakes, cands[0].fused(), cands[1].fused())
		}
	}
}

func TestFusionValidate(t *testing.T) {
	for _, f := range []Fusion{{}, {Rank: RankKeyword}, {Rank: RankVector, VectorWeight: 2}} {
		if err := f.Validate(); err != nil {
			t.Errorf("%+v: %v", f, err)
		}
	}
	for _, f := range []Fusion{{Rank: "both"}, {VectorWeight: -1}} {
		if err := f.Validate(); err == nil {
			t.Errorf("%+v: valid, want an error", f)
		}
	}
}

// TestZeroVectorHasNoScore: a stored zero vector (the local embedder's for Chinese text) is
// neither indexed nor given a vector score, and is not tried again on every request.
func TestZeroVectorHasNoScore(t *testing.T) {
	emb, err := wordvec.New()
	if err != nil {
		t.Fatal(err)
	}
	vecs, err := emb.Embed(context.Background(), []string{"My cat is called Snow.", "我的猫叫小白", "what pet do I have?"})
	if err != nil {
		t.Fatal(err)
	}
	sv := newStoredVectors()
	sv.model = emb.Name()
	for i, id := range []string{"cat", "zh"} {
		q, scale := vectors.Quantize(vecs[i])
		sv.put(vectors.Vector{Model: emb.Name(), ID: id, Q: q, Scale: scale})
	}
	var vs vectorSet
	vs.sync(sv, []string{"cat", "zh"}, zerolog.Nop())
	if !vs.has("cat") || vs.has("zh") {
		t.Fatalf("has cat = %v, zh = %v; want true, false", vs.has("cat"), vs.has("zh"))
	}
	if _, seen := vs.have["zh"]; !seen {
		t.Error("the zero vector is not remembered: every request would try it again")
	}
	got := vs.search(vecs[2], 10)
	if _, ok := got["zh"]; ok || got["cat"] <= 0 {
		t.Errorf("search = %v, want cat with a score and no zh", got)
	}
	if got := vs.search(vecs[1], 10); len(got) != 0 {
		t.Errorf("search with a zero query = %v, want nothing", got)
	}
}
