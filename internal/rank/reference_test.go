package rank

import (
	"cmp"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/agentmem/agentmem/internal/search"
)

// This file holds rankers that exist only to be measured by TestDevSets: a plain BM25 with
// simple tokenizers that reproduces baselines.md (which validates the metric code), and the
// components that were measured and left out of the package because they did not help:
// neighbour context (BM25F), turn-pair documents, RM3 pseudo-relevance feedback, word-pair
// phrases, and the offline "vectors" (LSA, character n-gram TF-IDF) in lsa_test.go.

// refRanker is BM25 (k1 = 1.2, b = 0.75) written out plainly, with the options measured.
// Ties keep the documents' order, unmatched documents included.
type refRanker struct {
	tokens func(string) []string // default search.Terms
	// queryTF: 0 counts a repeated query term each time, -1 once, > 0 is k3.
	queryTF float64
	// neighbour > 0 adds the terms of the turn's neighbours in its session at this weight to
	// a second field (BM25F); pair restricts them to the turn's user–assistant pair.
	neighbour float64
	pair      bool
	// rm3 > 0: RM3 with rm3 feedback documents, 10 terms, original query weight 0.5.
	rm3 int
	// phrase > 0 adds each pair of adjacent words as a term of this query weight.
	phrase float64
}

var (
	wordRE  = regexp.MustCompile(`\w+`)
	hanOrAl = regexp.MustCompile(`\p{Han}+|[a-zA-Z0-9]+`)
)

// refWords is lower-cased \w+ words, as baselines.md's LongMemEval figures.
func refWords(s string) []string { return wordRE.FindAllString(strings.ToLower(s), -1) }

// refWordsStop is refWords without internal/search's English stop words.
func refWordsStop(s string) []string {
	return slices.DeleteFunc(refWords(s), func(w string) bool { return len(search.Terms(w)) == 0 })
}

// refBigrams is the character bigrams of each Han run (a one-character run as itself) and
// lower-cased alphanumeric words, as baselines.md's MADial zh figures.
func refBigrams(s string) []string {
	var out []string
	for _, run := range hanOrAl.FindAllString(s, -1) {
		r := []rune(run)
		if r[0] < 0x80 {
			out = append(out, strings.ToLower(run))
			continue
		}
		if len(r) == 1 {
			out = append(out, run)
		}
		for i := 0; i+1 < len(r); i++ {
			out = append(out, string(r[i:i+2]))
		}
	}
	return out
}

// wordPairs returns "a b" for each pair of adjacent terms that are both alphabetic words.
func wordPairs(terms []string) []string {
	isWord := func(t string) bool { return !strings.ContainsFunc(t, func(r rune) bool { return r >= 0x2E80 }) }
	var out []string
	for i := 0; i+1 < len(terms); i++ {
		if isWord(terms[i]) && isWord(terms[i+1]) {
			out = append(out, terms[i]+" "+terms[i+1])
		}
	}
	return out
}

func (r refRanker) rank(docs []Doc, query string) []string {
	const k1, b = 1.2, 0.75
	tokens := r.tokens
	if tokens == nil {
		tokens = search.Terms
	}
	n := len(docs)
	tfs := make([]map[string]float64, n)
	lens := make([]float64, n)
	df := map[string]int{}
	for i, d := range docs {
		toks := tokens(d.Text)
		if r.phrase > 0 {
			toks = append(toks, wordPairs(toks)...)
		}
		tfs[i] = map[string]float64{}
		for _, t := range toks {
			if tfs[i][t] == 0 {
				df[t]++
			}
			tfs[i][t]++
		}
		lens[i] = float64(len(toks))
	}
	// The context field: the neighbours in the session, docs being in session order.
	var ctx [][]int
	if r.neighbour > 0 {
		ctx = make([][]int, n)
		for i, d := range docs {
			prev := i > 0 && docs[i-1].Group == d.Group && d.Group != ""
			next := i+1 < n && docs[i+1].Group == d.Group && d.Group != ""
			switch {
			case !r.pair:
				if prev {
					ctx[i] = append(ctx[i], i-1)
				}
				if next {
					ctx[i] = append(ctx[i], i+1)
				}
			case d.Role == "user" && next && docs[i+1].Role != "user":
				ctx[i] = []int{i + 1}
			case d.Role != "user" && prev && docs[i-1].Role == "user":
				ctx[i] = []int{i - 1}
			}
		}
	}
	flen := make([]float64, n)
	avg := 0.0
	for i := range docs {
		flen[i] = lens[i]
		if ctx != nil {
			for _, c := range ctx[i] {
				flen[i] += r.neighbour * lens[c]
			}
		}
		avg += flen[i] / float64(n)
	}
	score := func(qw map[string]float64) []float64 {
		out := make([]float64, n)
		for i := range docs {
			for t, w := range qw {
				f := tfs[i][t]
				if ctx != nil {
					for _, c := range ctx[i] {
						f += r.neighbour * tfs[c][t]
					}
				}
				if f == 0 {
					continue
				}
				idf := math.Log(1 + (float64(n-df[t])+0.5)/(float64(df[t])+0.5))
				out[i] += w * idf * f * (k1 + 1) / (f + k1*(1-b+b*flen[i]/avg))
			}
		}
		return out
	}
	qt := tokens(query)
	qw := map[string]float64{}
	for _, t := range qt {
		qw[t]++
	}
	for t, f := range qw {
		switch {
		case r.queryTF < 0:
			qw[t] = 1
		case r.queryTF > 0:
			qw[t] = (r.queryTF + 1) * f / (r.queryTF + f)
		}
	}
	if r.phrase > 0 {
		for _, p := range wordPairs(qt) {
			qw[p] = r.phrase
		}
	}
	scores := score(qw)
	order := func(scores []float64) []int {
		o := make([]int, n)
		for i := range o {
			o[i] = i
		}
		slices.SortStableFunc(o, func(a, b int) int { return cmp.Compare(scores[b], scores[a]) })
		return o
	}
	if r.rm3 > 0 {
		top := order(scores)[:min(r.rm3, n)]
		sum := 0.0
		for _, i := range top {
			sum += scores[i]
		}
		fb := map[string]float64{}
		for _, i := range top {
			if scores[i] == 0 || lens[i] == 0 {
				continue
			}
			for t, f := range tfs[i] {
				fb[t] += scores[i] / sum * f / lens[i]
			}
		}
		terms := make([]string, 0, len(fb))
		for t := range fb {
			terms = append(terms, t)
		}
		slices.SortFunc(terms, func(a, b string) int { return cmp.Or(cmp.Compare(fb[b], fb[a]), strings.Compare(a, b)) })
		terms = terms[:min(10, len(terms))]
		fbSum, qSum := 0.0, 0.0
		for _, t := range terms {
			fbSum += fb[t]
		}
		for _, w := range qw {
			qSum += w
		}
		expanded := map[string]float64{}
		for t, w := range qw {
			expanded[t] = 0.5 * w / qSum
		}
		for _, t := range terms {
			expanded[t] += 0.5 * fb[t] / fbSum
		}
		scores = score(expanded)
	}
	// Unmatched documents stay at the end in their order, as in the scripts behind
	// baselines.md.
	ids := make([]string, 0, 50)
	for _, i := range order(scores)[:min(50, n)] {
		ids = append(ids, docs[i].ID)
	}
	return ids
}
