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

func BenchmarkDot384(b *testing.B) {
	v := randomVecs(newRand(1), 2, 384)
	var sink float32
	b.Run("dot", func(b *testing.B) {
		for b.Loop() {
			sink += dot(v[0], v[1])
		}
	})
	b.Run("generic", func(b *testing.B) {
		for b.Loop() {
			sink += dotGeneric(v[0], v[1])
		}
	})
	_ = sink
}
