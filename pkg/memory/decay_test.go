package memory

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func TestDecayLinear(t *testing.T) {
	d := DefaultDecay()
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		age  time.Duration
		want float64
	}{
		{-time.Hour, 1},
		{0, 1},
		{6 * time.Hour, 0.875},
		{12 * time.Hour, 0.75},
		{24 * time.Hour, 0.5},
		{48 * time.Hour, 0.5},
		{10000 * time.Hour, 0.5},
	} {
		if got := d.Factor(tc.age); !near(got, tc.want) {
			t.Errorf("Factor(%s) = %v, want %v", tc.age, got, tc.want)
		}
	}
	// An empty Kind is linear.
	if got := (Decay{Window: 24 * time.Hour, Floor: 0.5}).Factor(12 * time.Hour); !near(got, 0.75) {
		t.Errorf("empty kind: Factor(12h) = %v", got)
	}
}

func TestDecayHalfLife(t *testing.T) {
	d := Decay{Kind: "halflife", HalfLife: 168 * time.Hour, Floor: 0.3}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		age  time.Duration
		want float64
	}{
		{0, 1},
		{168 * time.Hour, 0.3 + 0.7*0.5},
		{336 * time.Hour, 0.3 + 0.7*0.25},
		{84 * time.Hour, 0.3 + 0.7*math.Sqrt(0.5)},
		{1e6 * time.Hour, 0.3},
	} {
		if got := d.Factor(tc.age); !near(got, tc.want) {
			t.Errorf("Factor(%s) = %v, want %v", tc.age, got, tc.want)
		}
	}
}

func TestDecayNone(t *testing.T) {
	d := Decay{Kind: "none"}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, age := range []time.Duration{0, time.Hour, 1e6 * time.Hour} {
		if got := d.Factor(age); got != 1 {
			t.Errorf("Factor(%s) = %v, want 1", age, got)
		}
	}
}

// TestDecayFactorBounds checks, for random decays and ages, that the factor
// stays within [Floor, 1] and never grows with age.
func TestDecayFactorBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		d := Decay{Kind: []string{"linear", "halflife", "none", ""}[rng.IntN(4)],
			Window:   time.Duration(rng.Int64N(int64(100 * time.Hour))),
			HalfLife: time.Duration(rng.Int64N(int64(1000 * time.Hour))),
			Floor:    rng.Float64()}
		prev := 1.0
		for _, age := range []time.Duration{-time.Hour, 0, time.Second, time.Hour, 23 * time.Hour, 24 * time.Hour, 200 * time.Hour, math.MaxInt64} {
			f := d.Factor(age)
			lo := d.Floor
			if d.Kind == "none" {
				lo = 1
			}
			if f < lo || f > 1 || math.IsNaN(f) {
				t.Fatalf("%+v: Factor(%s) = %v, outside [%v, 1]", d, age, f, lo)
			}
			if f > prev {
				t.Fatalf("%+v: Factor(%s) = %v grew from %v", d, age, f, prev)
			}
			prev = f
		}
	}
	// Invalid decays still give a factor within [0, 1].
	for _, d := range []Decay{{Floor: -1}, {Floor: 2, Window: time.Hour}, {Floor: math.NaN(), Window: time.Hour}, {Kind: "weird", Floor: 0.5}} {
		if f := d.Factor(time.Hour); f < 0 || f > 1 || math.IsNaN(f) {
			t.Errorf("%+v: Factor = %v", d, f)
		}
	}
}

func TestDecayValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		d     Decay
		field string
	}{
		{"unknown kind", Decay{Kind: "exp", Window: time.Hour, Floor: 0.5}, "Kind"},
		{"zero floor", Decay{Kind: "linear", Window: time.Hour}, "Floor"},
		{"negative floor", Decay{Kind: "linear", Window: time.Hour, Floor: -0.1}, "Floor"},
		{"floor above one", Decay{Kind: "halflife", HalfLife: time.Hour, Floor: 1.5}, "Floor"},
		{"NaN floor", Decay{Kind: "linear", Window: time.Hour, Floor: math.NaN()}, "Floor"},
		{"no window", Decay{Kind: "linear", Floor: 0.5}, "Window"},
		{"negative window", Decay{Window: -time.Hour, Floor: 0.5}, "Window"},
		{"no half-life", Decay{Kind: "halflife", Floor: 0.5}, "HalfLife"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.d.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("Validate(%+v) = %v, want an error naming %s", tc.d, err, tc.field)
			}
		})
	}
	if err := (Decay{Kind: "linear", Window: time.Hour, Floor: 1}).Validate(); err != nil {
		t.Errorf("floor 1: %v", err)
	}
}

func TestParseDecay(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want Decay
	}{
		{"linear:24h:0.5", DefaultDecay()},
		{"", DefaultDecay()},
		{"linear", DefaultDecay()},
		{"linear:12h", Decay{Kind: "linear", Window: 12 * time.Hour, Floor: 0.5}},
		{" LINEAR : 90m : 0.25 ", Decay{Kind: "linear", Window: 90 * time.Minute, Floor: 0.25}},
		{"halflife:168h:0.3", Decay{Kind: "halflife", HalfLife: 168 * time.Hour, Floor: 0.3}},
		{"halflife:720h", Decay{Kind: "halflife", HalfLife: 720 * time.Hour, Floor: 0.5}},
		{"none", Decay{Kind: "none", Floor: 1}},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			got, err := ParseDecay(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("ParseDecay(%q) = %+v, want %+v", tc.spec, got, tc.want)
			}
			back, err := ParseDecay(got.String())
			if err != nil || back != got {
				t.Fatalf("ParseDecay(%q.String() = %q) = %+v, %v", tc.spec, got.String(), back, err)
			}
		})
	}
}

func TestParseDecayErrors(t *testing.T) {
	for _, tc := range []struct{ spec, mention string }{
		{"exp:24h:0.5", "unknown kind"},
		{"linear:24h:0", "Floor"},
		{"linear:24h:-0.5", "Floor"},
		{"linear:24h:1.5", "Floor"},
		{"linear:24h:abc", "bad floor"},
		{"linear:1 day:0.5", "bad duration"},
		{"linear:0s:0.5", "Window"},
		{"linear:-1h:0.5", "Window"},
		{"linear:24h:0.5:x", "too many"},
		{"halflife", "half-life"},
		{"halflife:0s:0.3", "HalfLife"},
		{"halflife:168h:0", "Floor"},
		{"none:24h", "no parameters"},
		{":24h:0.5", "unknown kind"},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			d, err := ParseDecay(tc.spec)
			if err == nil {
				t.Fatalf("ParseDecay(%q) = %+v, want an error", tc.spec, d)
			}
			if !strings.Contains(err.Error(), tc.mention) || !strings.Contains(err.Error(), tc.spec) {
				t.Errorf("error %q does not mention %q and the spec", err, tc.mention)
			}
		})
	}
}

func FuzzParseDecay(f *testing.F) {
	for _, s := range []string{"linear:24h:0.5", "halflife:168h:0.3", "none", "", "linear:1ns:1e-300", "halflife:9999999h:NaN"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		d, err := ParseDecay(spec)
		if err != nil {
			return
		}
		if err := d.Validate(); err != nil {
			t.Fatalf("ParseDecay(%q) = %+v, invalid: %v", spec, d, err)
		}
		if back, err := ParseDecay(d.String()); err != nil || back != d {
			t.Fatalf("round trip of %q via %q: %+v, %v", spec, d.String(), back, err)
		}
		for _, age := range []time.Duration{0, time.Hour, math.MaxInt64} {
			if f := d.Factor(age); f < d.Floor && d.Kind != "none" || f > 1 {
				t.Fatalf("%+v: Factor(%s) = %v", d, age, f)
			}
		}
	})
}

func TestSourceWeight(t *testing.T) {
	for src, want := range map[string]float64{SourceShort: 1, SourceLong: 1.2, SourceArchive: 1, "": 1, "other": 1} {
		if got := SourceWeight(src); got != want {
			t.Errorf("SourceWeight(%q) = %v, want %v", src, got, want)
		}
	}
}
