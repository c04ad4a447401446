package rank

// Offline "vectors" measured by TestDevSets, trained on nothing but the user's own documents:
// LSA and character n-gram TF-IDF. Neither helped enough to enter the package (see the
// package comment).

import (
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"unicode"

	"github.com/agentmem/agentmem/internal/search"
)

// vecRanker fuses an Index's ranking with a vector similarity computed from the user's own
// documents, with no downloaded model: relevance/max + w·cos/max over every document. It is
// how the offline "vectors" below were measured; they did not earn a place in the package.
type vecRanker struct {
	base Config
	vec  func(docs []Doc, query string) []float64
	w    float64
}

func (r vecRanker) rank(docs []Doc, query string) []string {
	cos := r.vec(docs, query)
	ix := NewIndex(r.base)
	ix.Add(docs...)
	kw := map[string]float64{}
	maxKw, maxCos := 0.0, 0.0
	for _, h := range ix.Search(query, 0) {
		kw[h.ID] = h.Relevance
		maxKw = max(maxKw, h.Relevance)
	}
	for _, c := range cos {
		maxCos = max(maxCos, c)
	}
	type scored struct {
		id string
		s  float64
	}
	all := make([]scored, len(docs))
	for i, d := range docs {
		s := 0.0
		if maxKw > 0 {
			s = kw[d.ID] / maxKw
		}
		if maxCos > 0 {
			s += r.w * max(cos[i], 0) / maxCos
		}
		all[i] = scored{d.ID, s}
	}
	sort.SliceStable(all, func(a, b int) bool { return all[a].s > all[b].s })
	ids := make([]string, 0, 50)
	for _, s := range all[:min(50, len(all))] {
		ids = append(ids, s.id)
	}
	return ids
}

type sparseVec struct {
	idx []int
	val []float64
}

func tfidfVecs(texts []string, vocab map[string]int, df map[int]int, n int, build bool) []sparseVec {
	out := make([]sparseVec, len(texts))
	for i, t := range texts {
		tf := map[int]float64{}
		for _, term := range search.Terms(t) {
			id, ok := vocab[term]
			if !ok {
				if !build {
					continue
				}
				id = len(vocab)
				vocab[term] = id
			}
			tf[id]++
		}
		if build {
			for id := range tf {
				df[id]++
			}
		}
		out[i] = sparseVec{}
		for id, f := range tf {
			out[i].idx = append(out[i].idx, id)
			out[i].val = append(out[i].val, f)
		}
	}
	return out
}

// lsaCosine returns the cosine between the query and each document in the space of the k
// leading right singular vectors of the documents' TF-IDF matrix (latent semantic analysis,
// trained on the user's own documents at query time).
func lsaCosine(k int) func(docs []Doc, query string) []float64 {
	return func(docs []Doc, query string) []float64 {
		vocab, df := map[string]int{}, map[int]int{}
		texts := make([]string, len(docs))
		for i, d := range docs {
			texts[i] = d.Text
		}
		A := tfidfVecs(texts, vocab, df, len(docs), true)
		n, m := len(docs), len(vocab)
		idf := make([]float64, m)
		for id := range idf {
			idf[id] = math.Log(float64(n+1) / float64(df[id]+1))
		}
		weigh := func(v *sparseVec) {
			norm := 0.0
			for j := range v.idx {
				v.val[j] = (1 + math.Log(v.val[j])) * idf[v.idx[j]]
				norm += v.val[j] * v.val[j]
			}
			norm = math.Sqrt(norm)
			for j := range v.val {
				if norm > 0 {
					v.val[j] /= norm
				}
			}
		}
		for i := range A {
			weigh(&A[i])
		}
		q := tfidfVecs([]string{query}, vocab, nil, n, false)[0]
		weigh(&q)
		V := lsaBasis(A, m, min(k, n-1, m-1))
		proj := func(v sparseVec) []float64 {
			out := make([]float64, len(V))
			for c := range V {
				s := 0.0
				for j, id := range v.idx {
					s += v.val[j] * V[c][id]
				}
				out[c] = s
			}
			return out
		}
		qp := proj(q)
		cos := make([]float64, n)
		for i := range A {
			cos[i] = cosine(qp, proj(A[i]))
		}
		return cos
	}
}

func cosine(a, b []float64) float64 {
	var ab, aa, bb float64
	for i := range a {
		ab += a[i] * b[i]
		aa += a[i] * a[i]
		bb += b[i] * b[i]
	}
	if aa == 0 || bb == 0 {
		return 0
	}
	return ab / math.Sqrt(aa*bb)
}

// lsaBasis returns k right singular vectors (each of length m) of the n×m sparse matrix A,
// by a randomized range finder with two power iterations.
func lsaBasis(A []sparseVec, m, k int) [][]float64 {
	if k <= 0 {
		return nil
	}
	l := k + 10
	rng := rand.New(rand.NewPCG(1, 2))
	// Z: m×l random; Y = A Z : n×l
	Z := make([][]float64, l)
	for c := range Z {
		Z[c] = make([]float64, m)
		for j := range Z[c] {
			Z[c][j] = rng.NormFloat64()
		}
	}
	mulA := func(Z [][]float64) [][]float64 { // returns columns of A·Z (n each)
		Y := make([][]float64, len(Z))
		for c := range Z {
			Y[c] = make([]float64, len(A))
			for i, row := range A {
				s := 0.0
				for j, id := range row.idx {
					s += row.val[j] * Z[c][id]
				}
				Y[c][i] = s
			}
		}
		return Y
	}
	mulAT := func(Y [][]float64) [][]float64 { // columns of Aᵀ·Y (m each)
		Z := make([][]float64, len(Y))
		for c := range Y {
			Z[c] = make([]float64, m)
			for i, row := range A {
				for j, id := range row.idx {
					Z[c][id] += row.val[j] * Y[c][i]
				}
			}
		}
		return Z
	}
	Y := mulA(Z)
	orth(Y)
	for range 2 {
		Z = mulAT(Y)
		orth(Z)
		Y = mulA(Z)
		orth(Y)
	}
	// B = Qᵀ A : l×m, rows B[c] = Aᵀ Y[c]
	B := mulAT(Y)
	// Eigen-decompose B Bᵀ (l×l) by Jacobi.
	G := make([][]float64, l)
	for a := range G {
		G[a] = make([]float64, l)
		for b := range G[a] {
			s := 0.0
			for j := range B[a] {
				s += B[a][j] * B[b][j]
			}
			G[a][b] = s
		}
	}
	vals, vecs := jacobi(G)
	idx := make([]int, l)
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return vals[idx[a]] > vals[idx[b]] })
	// V columns: Bᵀ u / σ
	out := make([][]float64, 0, k)
	for _, e := range idx[:k] {
		sigma := math.Sqrt(max(vals[e], 1e-12))
		v := make([]float64, m)
		for a := range l {
			u := vecs[a][e]
			for j := range v {
				v[j] += B[a][j] * u
			}
		}
		for j := range v {
			v[j] /= sigma
		}
		out = append(out, v)
	}
	return out
}

// orth orthonormalises the columns in place (modified Gram–Schmidt).
func orth(cols [][]float64) {
	for c := range cols {
		for p := range c {
			d := 0.0
			for i := range cols[c] {
				d += cols[c][i] * cols[p][i]
			}
			for i := range cols[c] {
				cols[c][i] -= d * cols[p][i]
			}
		}
		n := 0.0
		for _, x := range cols[c] {
			n += x * x
		}
		n = math.Sqrt(n)
		if n > 1e-12 {
			for i := range cols[c] {
				cols[c][i] /= n
			}
		}
	}
}

// jacobi returns the eigenvalues and eigenvectors (columns) of the symmetric matrix a.
func jacobi(a [][]float64) ([]float64, [][]float64) {
	n := len(a)
	v := make([][]float64, n)
	for i := range v {
		v[i] = make([]float64, n)
		v[i][i] = 1
	}
	for sweep := 0; sweep < 50; sweep++ {
		off := 0.0
		for p := 0; p < n; p++ {
			for q := p + 1; q < n; q++ {
				off += a[p][q] * a[p][q]
			}
		}
		if off < 1e-18 {
			break
		}
		for p := 0; p < n; p++ {
			for q := p + 1; q < n; q++ {
				if math.Abs(a[p][q]) < 1e-15 {
					continue
				}
				theta := (a[q][q] - a[p][p]) / (2 * a[p][q])
				t := math.Copysign(1, theta) / (math.Abs(theta) + math.Sqrt(theta*theta+1))
				c := 1 / math.Sqrt(t*t+1)
				s := t * c
				for k := 0; k < n; k++ {
					akp, akq := a[k][p], a[k][q]
					a[k][p] = c*akp - s*akq
					a[k][q] = s*akp + c*akq
				}
				for k := 0; k < n; k++ {
					apk, aqk := a[p][k], a[q][k]
					a[p][k] = c*apk - s*aqk
					a[q][k] = s*apk + c*aqk
				}
				for k := 0; k < n; k++ {
					vkp, vkq := v[k][p], v[k][q]
					v[k][p] = c*vkp - s*vkq
					v[k][q] = s*vkp + c*vkq
				}
			}
		}
	}
	vals := make([]float64, n)
	for i := range vals {
		vals[i] = a[i][i]
	}
	return vals, v
}

// charGrams returns character n-grams: 1–2 grams of each Han run, 4–5 grams of each
// alphanumeric word with boundary marks.
func charGrams(s string) []string {
	var out []string
	var run []rune
	han := false
	flush := func() {
		if len(run) == 0 {
			return
		}
		if han {
			for n := 1; n <= 2; n++ {
				for i := 0; i+n <= len(run); i++ {
					out = append(out, string(run[i:i+n]))
				}
			}
		} else {
			w := []rune("<" + strings.ToLower(string(run)) + ">")
			for n := 4; n <= 5; n++ {
				for i := 0; i+n <= len(w); i++ {
					out = append(out, string(w[i:i+n]))
				}
			}
		}
		run = run[:0]
	}
	for _, r := range s {
		isHan := unicode.Is(unicode.Han, r)
		isAl := !isHan && (unicode.IsLetter(r) || unicode.IsDigit(r))
		if !isHan && !isAl {
			flush()
			continue
		}
		if len(run) > 0 && isHan != han {
			flush()
		}
		han = isHan
		run = append(run, r)
	}
	flush()
	return out
}

// charCosine returns the cosine between the query's and each document's TF-IDF vectors of
// character n-grams (see charGrams), sublinear tf, idf over the user's documents.
func charCosine(docs []Doc, query string) []float64 {
	n := len(docs)
	df := map[string]int{}
	tfs := make([]map[string]float64, n)
	for i, d := range docs {
		tfs[i] = map[string]float64{}
		for _, g := range charGrams(d.Text) {
			tfs[i][g]++
		}
		for g := range tfs[i] {
			df[g]++
		}
	}
	vec := func(tf map[string]float64) map[string]float64 {
		v := map[string]float64{}
		norm := 0.0
		for g, f := range tf {
			if df[g] == 0 {
				continue
			}
			x := (1 + math.Log(f)) * (math.Log(float64(n+1)/float64(df[g]+1)) + 1)
			v[g] = x
			norm += x * x
		}
		for g := range v {
			v[g] /= math.Sqrt(norm)
		}
		return v
	}
	qtf := map[string]float64{}
	for _, g := range charGrams(query) {
		qtf[g]++
	}
	qv := vec(qtf)
	cos := make([]float64, n)
	for i := range docs {
		for g, x := range vec(tfs[i]) {
			cos[i] += x * qv[g]
		}
	}
	return cos
}
