package embed

import (
	"math"
	"testing"
)

func TestCacheEvictsLeastRecentlyUsed(t *testing.T) {
	c := newCache(2)
	a, b, d := keyOf("m", "a"), keyOf("m", "b"), keyOf("m", "d")
	c.put(a, []float32{1})
	c.put(b, []float32{2})
	if _, ok := c.get(a); !ok { // a is now the most recently used
		t.Fatal("a missing")
	}
	c.put(d, []float32{3})
	if _, ok := c.get(b); ok {
		t.Fatal("b survived though it was the least recently used")
	}
	for k, want := range map[cacheKey]float32{a: 1, d: 3} {
		if v, ok := c.get(k); !ok || v[0] != want {
			t.Fatalf("get = %v, %v; want [%v]", v, ok, want)
		}
	}
	if n := c.len(); n != 2 {
		t.Fatalf("len = %d, want 2", n)
	}
}

func TestCacheKeySeparatesModels(t *testing.T) {
	if keyOf("m1", "text") == keyOf("m2", "text") || keyOf("ab", "c") == keyOf("a", "bc") {
		t.Fatal("distinct (model, text) pairs share a key")
	}
}

func TestNormalise(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want []float32
	}{
		{[]float64{3, 4}, []float32{0.6, 0.8}},
		{[]float64{0, 0, 0}, []float32{0, 0, 0}},
		{[]float64{3e200, -4e200}, []float32{0.6, -0.8}},
		{[]float64{3e-200, 4e-200}, []float32{0.6, 0.8}},
	} {
		got, err := normalise(tc.in)
		if err != nil {
			t.Fatalf("normalise(%v): %v", tc.in, err)
		}
		for i := range got {
			if math.Abs(float64(got[i]-tc.want[i])) > 1e-6 {
				t.Fatalf("normalise(%v) = %v, want %v", tc.in, got, tc.want)
			}
		}
	}
	if _, err := normalise([]float64{1, math.Inf(1)}); err == nil {
		t.Fatal("normalise accepted an infinite value")
	}
}
