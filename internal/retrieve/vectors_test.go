package retrieve

import (
	"testing"
	"unsafe"

	"github.com/agentmem/agentmem/internal/vectors"
)

// A view keeps each stored vector without the owner, model and id it was stored with (the view's
// and the map key): a third of the memory of a loaded vector went to them.
func TestStoredVectorsKeepComponentsOnly(t *testing.T) {
	if size := unsafe.Sizeof(storedVector{}); size > 32 {
		t.Fatalf("a stored vector takes %d bytes besides its components", size)
	}
	sv := newStoredVectors()
	sv.model = "m"
	v := vectors.Vector{Tenant: "acme", User: "u1", Model: "m", ID: "t1", Kind: vectors.KindTurn, Scale: 0.5, Q: []int8{2, -4, 6}}
	if n := sv.put(v); n <= 0 {
		t.Fatalf("put counted %d bytes", n)
	}
	if sv.put(vectors.Vector{Model: "other", ID: "t2", Q: []int8{1}}) != 0 {
		t.Fatal("a vector of another model was kept")
	}
	got, ok := sv.get("t1")
	if !ok {
		t.Fatal("t1 not kept")
	}
	f := got.float32s(make([]float32, 1, 8))
	if want := v.Float32(); len(f) != len(want) || f[0] != want[0] || f[1] != want[1] || f[2] != want[2] {
		t.Fatalf("components %v, want %v", f, want)
	}
}
