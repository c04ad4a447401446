package vector

import (
	"math"
	"testing"
)

func TestNormalize(t *testing.T) {
	tests := []struct {
		name string
		in   []float32
		want []float32
	}{
		{"unit already", []float32{0, 1, 0}, []float32{0, 1, 0}},
		{"3-4-5", []float32{3, 4}, []float32{0.6, 0.8}},
		{"negative", []float32{-2, 0}, []float32{-1, 0}},
		{"tiny", []float32{1e-30, 1e-30}, []float32{float32(math.Sqrt2 / 2), float32(math.Sqrt2 / 2)}},
		{"huge", []float32{3e38, 3e38}, []float32{float32(math.Sqrt2 / 2), float32(math.Sqrt2 / 2)}},
		{"zero", []float32{0, 0, 0}, []float32{0, 0, 0}},
		{"NaN", []float32{1, float32(math.NaN())}, []float32{0, 0}},
		{"Inf", []float32{1, float32(math.Inf(1))}, []float32{0, 0}},
		{"empty", []float32{}, []float32{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]float32(nil), tt.in...)
			got := Normalize(in)
			if len(got) != len(tt.want) {
				t.Fatalf("len %d, want %d", len(got), len(tt.want))
			}
			for i := range got {
				if math.Abs(float64(got[i]-tt.want[i])) > 1e-6 {
					t.Fatalf("Normalize(%v) = %v, want %v", tt.in, got, tt.want)
				}
			}
			if len(in) > 0 && &got[0] == &in[0] {
				t.Fatal("Normalize returned its argument, want a copy")
			}
		})
	}
}

func TestCosine(t *testing.T) {
	tests := []struct {
		name string
		a, b []float32
		want float32
	}{
		{"same", []float32{1, 2, 3}, []float32{1, 2, 3}, 1},
		{"scaled", []float32{1, 2, 3}, []float32{2, 4, 6}, 1},
		{"opposite", []float32{1, 2}, []float32{-1, -2}, -1},
		{"orthogonal", []float32{1, 0}, []float32{0, 5}, 0},
		{"45 degrees", []float32{1, 0}, []float32{1, 1}, float32(math.Sqrt2 / 2)},
		{"zero", []float32{0, 0}, []float32{1, 1}, 0},
		{"length mismatch", []float32{1, 0}, []float32{1, 0, 0}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Cosine(tt.a, tt.b); math.Abs(float64(got-tt.want)) > 1e-6 {
				t.Fatalf("Cosine(%v, %v) = %v, want %v", tt.a, tt.b, got, tt.want)
			}
		})
	}
}

// TestDot checks the kernels against a float64 loop for every tail length of both, with b
// longer than a as the graph's calls have it.
func TestDot(t *testing.T) {
	r := newRand(1)
	kernels := map[string]func(a, b []float32) float32{"dot": dot, "generic": dotGeneric}
	if useAVX2 {
		kernels["avx2"] = func(a, b []float32) float32 { return dotAVX2(a, b[:len(a)]) }
	}
	for n := range 100 {
		v := randomVecs(r, 2, n+3)
		a, b := v[0][:n], v[1]
		var want float64
		for i := range a {
			want += float64(a[i]) * float64(b[i])
		}
		for name, f := range kernels {
			if got := f(a, b); math.Abs(float64(got)-want) > 1e-4*(1+math.Abs(want)) {
				t.Fatalf("%s n=%d: got %v, want %v", name, n, got, want)
			}
		}
	}
	t.Logf("AVX2 kernel in use: %v", useAVX2)
}

// TestCosineMatchesDotOfNormalized is the identity the index rests on: for unit vectors the
// dot product is the cosine.
func TestCosineMatchesDotOfNormalized(t *testing.T) {
	r := newRand(2)
	for range 100 {
		v := randomVecs(r, 2, 384)
		got := dot(Normalize(v[0]), Normalize(v[1]))
		if want := Cosine(v[0], v[1]); math.Abs(float64(got-want)) > 1e-5 {
			t.Fatalf("dot of normalised = %v, Cosine = %v", got, want)
		}
	}
}

// BenchmarkDot384 times the kernels on one query against 1,000 stored 384-dim vectors per op,
// so that even -benchtime 20x measures something; ns/dot is the figure to read.
func BenchmarkDot384(b *testing.B) {
	r := newRand(1)
	q := randomVecs(r, 1, 384)[0]
	block := make([]float32, 0, 1000*384)
	for _, v := range randomVecs(r, 1000, 384) {
		block = append(block, v...)
	}
	var sink float32
	for _, k := range []struct {
		name string
		f    func(a, b []float32) float32
	}{{"dot", dot}, {"generic", dotGeneric}} {
		b.Run(k.name, func(b *testing.B) {
			for b.Loop() {
				for o := 0; o < len(block); o += 384 {
					sink += k.f(q, block[o:o+384])
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "ns/dot")
		})
	}
	_ = sink
}
