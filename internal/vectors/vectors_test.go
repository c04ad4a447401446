package vectors

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/internal/integrity"
	"github.com/agentmem/agentmem/pkg/events"
)

func TestKeysAreValidAndReversible(t *testing.T) {
	for _, id := range []string{"s1-000", "6f1c2b9e-4a43-4f1e-9d8a-1f2e3d4c5b6a", "a.b", "x y/z:ü", strings.Repeat("k", 300), "=abc"} {
		key := Key("acme", "alice", "openai-compatible:text-embedding-3-small@256", id)
		parts := strings.Split(key, ".")
		if len(parts) != 4 {
			t.Fatalf("key %q of id %q has %d tokens, want 4", key, id, len(parts))
		}
		for _, p := range parts {
			for _, r := range p {
				if !(r == '-' || r == '_' || r == '=' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
					t.Fatalf("key %q: %q is not a KV key character", key, r)
				}
			}
		}
		if got, ok := EntryID(parts[3]); !ok || got != id {
			t.Fatalf("EntryID(%q) = %q, %v, want %q", parts[3], got, ok, id)
		}
	}
	if ModelToken("a") == ModelToken("b") || ModelToken("openai-compatible:m") != "m4c750015b00ca5c8" {
		t.Fatalf("model tokens must tell models apart and be stable: %s", ModelToken("openai-compatible:m"))
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(Encode(Vector{Tenant: "acme", User: "alice", Model: "m", ID: "x", Kind: KindTurn, Scale: 0.1, Q: []int8{1, -2, 3}}))
	f.Add([]byte{'V', 1, 1, 't', 200})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := Decode(b)
		if err != nil {
			return
		}
		if w, err := Decode(Encode(v)); err != nil || !slices.Equal(w.Q, v.Q) || w.ID != v.ID || math.Float32bits(w.Scale) != math.Float32bits(v.Scale) {
			t.Fatalf("round trip of %+v: %+v, %v", v, w, err)
		}
	})
}

// TestForeignValuesAreCorrupt: a value naming another tenant, user, model or entry than its key
// is treated as absent, as in every other bucket (package integrity).
func TestForeignValuesAreCorrupt(t *testing.T) {
	s := &Store{bucket: "AGENTMEM_VECTORS"}
	v := Vector{Tenant: "acme", User: "alice", Model: "m1", ID: "t1", Kind: KindTurn, Scale: 1, Q: []int8{1, 2}}
	if _, cerr := s.Check(Key("acme", "alice", "m1", "t1"), Encode(v)); cerr != nil {
		t.Fatalf("own value: %v", cerr)
	}
	for _, c := range []struct {
		key, reason string
	}{
		{Key("beta", "alice", "m1", "t1"), integrity.Tenant},
		{Key("acme", "bob", "m1", "t1"), integrity.User},
		{Key("acme", "alice", "m2", "t1"), integrity.ID},
		{Key("acme", "alice", "m1", "t2"), integrity.ID},
		{"acme.alice.x", integrity.Undecodable},
	} {
		_, cerr := s.Check(c.key, Encode(v))
		if cerr == nil || cerr.Reason != c.reason || !errors.Is(cerr, integrity.ErrCorrupt) {
			t.Fatalf("value of acme/alice/m1/t1 under %s: %v, want %s", c.key, cerr, c.reason)
		}
	}
	if _, cerr := s.Check(Key("acme", "alice", "m1", "t1"), []byte("{}")); cerr == nil || cerr.Reason != integrity.Undecodable {
		t.Fatalf("undecodable value: %v", cerr)
	}
}

// TestInt8KeepsRecall: top-10 neighbours by cosine over int8 vectors are those over float32
// (clustered data like sentence embeddings, 384 and 1536 dimensions); it also reports the bytes
// a stored vector takes.
func TestInt8KeepsRecall(t *testing.T) {
	for _, dim := range []int{384, 1536} {
		rng := rand.New(rand.NewPCG(1, uint64(dim)))
		const n, queries, k, clusters = 1000, 50, 10, 40
		centres := make([][]float32, clusters)
		for i := range centres {
			centres[i] = randVec(rng, dim, nil, 1)
		}
		data := make([][]float32, n)
		quant := make([][]float32, n)
		for i := range data {
			data[i] = randVec(rng, dim, centres[i%clusters], 0.6)
			q, scale := Quantize(data[i])
			quant[i] = unit(Vector{Scale: scale, Q: q}.Float32())
			data[i] = unit(data[i])
		}
		var hits int
		for range queries {
			q := randVec(rng, dim, centres[rng.IntN(clusters)], 0.6)
			want := topK(q, data, k)
			got := topK(q, quant, k)
			for _, id := range got {
				if slices.Contains(want, id) {
					hits++
				}
			}
		}
		recall := float64(hits) / float64(queries*k)
		size := len(Encode(Vector{Tenant: "acme", User: "alice", Model: "openai-compatible:text-embedding-3-small", ID: "6f1c2b9e-4a43-4f1e-9d8a-1f2e3d4c5b6a", Kind: KindTurn, Q: make([]int8, dim)}))
		t.Logf("dim %d: recall@10 of int8 against float32 %.3f; %d bytes a stored value (float32 would be %d)", dim, recall, size, 4*dim)
		if recall < 0.97 {
			t.Fatalf("dim %d: recall@10 %.3f with int8, want ≥ 0.97", dim, recall)
		}
	}
}

func unit(v []float32) []float32 {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	n = math.Sqrt(n)
	for i := range v {
		v[i] = float32(float64(v[i]) / n)
	}
	return v
}

func randVec(rng *rand.Rand, dim int, centre []float32, noise float64) []float32 {
	v := make([]float32, dim)
	for i := range v {
		x := rng.NormFloat64() * noise
		if centre != nil {
			x += float64(centre[i])
		}
		v[i] = float32(x)
	}
	return v
}

func topK(q []float32, data [][]float32, k int) []int {
	type hit struct {
		i int
		s float64
	}
	hits := make([]hit, len(data))
	for i, d := range data {
		var dot float32
		for j := range q {
			dot += q[j] * d[j]
		}
		hits[i] = hit{i, float64(dot)}
	}
	slices.SortFunc(hits, func(a, b hit) int {
		if a.s > b.s {
			return -1
		}
		if a.s < b.s {
			return 1
		}
		return 0
	})
	out := make([]int, k)
	for i := range out {
		out[i] = hits[i].i
	}
	return out
}

func TestParseKey(t *testing.T) {
	model := "openai-compatible:text-embedding-3-small@256"
	for _, id := range []string{"s1-000", "a.b", "x y/z:ü", "=abc"} {
		key := Key("acme", "alice", model, id)
		k, err := ParseKey(key)
		if err != nil || k.Tenant != "acme" || k.User != "alice" || k.Model != ModelToken(model) || k.Entry != EntryToken(id) {
			t.Fatalf("ParseKey(%q) = %+v, %v", key, k, err)
		}
		if got, ok := k.ID(); !ok || got != id {
			t.Errorf("ParseKey(%q).ID() = %q, %v; want %q", key, got, ok, id)
		}
	}
	for _, tt := range []struct{ key, errHas string }{
		{MarkerKey(model), "want <tenant>.<user>.<model>.<entry>"},
		{"acme.alice.m1", "want <tenant>.<user>.<model>.<entry>"},
		{"acme.alice.m1.e.x", "want <tenant>.<user>.<model>.<entry>"},
		{"a%b.alice.m1.e", `tenant "a%b"`},
		{"acme..m1.e", `user ""`},
		{"acme.alice..e", "model: must not be empty"},
		{"acme.alice.m1.", "entry: must not be empty"},
	} {
		k, err := ParseKey(tt.key)
		if err == nil || !errors.Is(err, events.ErrInvalid) || !strings.Contains(err.Error(), tt.errHas) || k != (Ref{}) {
			t.Errorf("ParseKey(%q) = %+v, %v; want ErrInvalid mentioning %q", tt.key, k, err, tt.errHas)
		}
	}
	if _, ok := (Ref{Entry: "=!!"}).ID(); ok {
		t.Error("an entry token that is not base64 gave an id")
	}
}
