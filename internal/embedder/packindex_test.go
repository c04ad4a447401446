package embedder

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/vectors"
	"github.com/agentmem/agentmem/pkg/events"
)

func packOf(tenant, user, model string, ids ...string) []vectors.Vector {
	var vs []vectors.Vector
	for i, id := range ids {
		vs = append(vs, vectors.Vector{Tenant: tenant, User: user, Model: model, ID: id, Kind: vectors.KindTurn, Scale: 0.5 + float32(i), Q: []int8{int8(i), -3, 127}})
	}
	return vs
}

// constEmbedder embeds every text as the same short vector and counts its calls.
type constEmbedder struct{ calls int }

func (c *constEmbedder) Name() string { return "const" }
func (c *constEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	c.calls++
	out := make([][]float32, len(texts))
	for i := range out {
		out[i] = []float32{1, float32(i), -1}
	}
	return out, nil
}

// TestBatchStoresOnePackPerOwner: the texts of one batch to be stored are written one pack per
// owner and model; each caller learns its own pack's outcome, and a caller only embedding gets its
// vector.
func TestBatchStoresOnePackPerOwner(t *testing.T) {
	emb := &constEmbedder{}
	var (
		mu    sync.Mutex // the packs of a batch are written at once
		packs [][]vectors.Vector
	)
	b := &batcher{emb: emb, store: func(_ context.Context, ps [][]vectors.Vector) []error {
		mu.Lock()
		defer mu.Unlock()
		errs := make([]error, len(ps))
		for k, vs := range ps {
			packs = append(packs, vs)
			if vs[0].User == "bob" {
				errs[k] = errors.New("bob's pack not stored")
			}
		}
		return errs
	}}
	var batch []batchReq
	for i, user := range []string{"alice", "bob", "alice", "", "alice"} {
		r := batchReq{text: fmt.Sprint("text ", i), out: make(chan batchRes, 1)}
		if user != "" {
			r.put = &vectors.Vector{Tenant: "acme", User: user, Model: "const", ID: fmt.Sprint("t", i), Kind: vectors.KindTurn}
		}
		batch = append(batch, r)
	}
	b.call(context.Background(), batch)
	if emb.calls != 1 || len(packs) != 2 {
		t.Fatalf("%d embedding calls, %d packs; want 1 call and a pack for alice and one for bob", emb.calls, len(packs))
	}
	for _, p := range packs {
		var ids []string
		for _, v := range p {
			ids = append(ids, v.ID)
			if len(v.Q) != 3 || v.Scale == 0 {
				t.Fatalf("stored vector %+v is not quantised", v)
			}
		}
		want := map[string][]string{"alice": {"t0", "t2", "t4"}, "bob": {"t1"}}[p[0].User]
		if !slices.Equal(ids, want) {
			t.Fatalf("pack of %s holds %v, want %v", p[0].User, ids, want)
		}
	}
	for i, r := range batch {
		res := <-r.out
		switch {
		case i == 1 && (res.err == nil || !strings.Contains(res.err.Error(), "bob's pack")):
			t.Fatalf("bob's caller: %v, want the pack's error", res.err)
		case i != 1 && res.err != nil:
			t.Fatalf("caller %d: %v", i, res.err)
		case i == 3 && len(res.vec) != 3:
			t.Fatalf("the caller only embedding got %v", res.vec)
		}
	}
}

// TestPackIndexFindsStoredEntries: the index reads a user's packs once, learns the packs written
// afterwards, and keeps at most its bound of ids.
func TestPackIndexFindsStoredEntries(t *testing.T) {
	env := brokertest.Start(t)
	ctx := context.Background()
	topo := events.DefaultTopology()
	if err := topo.Ensure(ctx, env.JS); err != nil {
		t.Fatal(err)
	}
	store, err := vectors.Open(ctx, env.JS, topo)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.PutPack(ctx, packOf("acme", "alice", "m1", "a", "b")); err != nil {
		t.Fatal(err)
	}
	if _, err := store.PutPack(ctx, packOf("acme", "alice", "m2", "c")); err != nil {
		t.Fatal(err)
	}
	x := newPackIndex(store, 3)
	for _, c := range []struct {
		user, model, id string
		want            bool
	}{
		{"alice", "m1", "a", true}, {"alice", "m1", "b", true}, {"alice", "m1", "c", false},
		{"alice", "m2", "c", true}, {"bob", "m1", "a", false},
	} {
		if got, err := x.has(ctx, "acme", c.user, c.model, c.id); err != nil || got != c.want {
			t.Fatalf("has(%s, %s, %s) = %v, %v; want %v", c.user, c.model, c.id, got, err, c.want)
		}
	}
	// A pack written after alice's m1 ids were read is learnt from the writer (add), and found
	// by reading it when the ids are read anew.
	late := packOf("acme", "alice", "m1", "d")
	if _, err := store.PutPack(ctx, late); err != nil {
		t.Fatal(err)
	}
	x.add("acme", "alice", "m1", []string{"d"})
	if got, _ := x.has(ctx, "acme", "alice", "m1", "d"); !got {
		t.Fatal("an added id is not found")
	}
	x.mu.Lock()
	total, users := x.total, len(x.users)
	x.mu.Unlock()
	if total > 3 {
		t.Fatalf("the index holds %d ids in %d users, want at most 3", total, users)
	}
	fresh := newPackIndex(store, 100)
	if got, _ := fresh.has(ctx, "acme", "alice", "m1", "d"); !got {
		t.Fatal("a pack written before the ids were read is not found")
	}
}
