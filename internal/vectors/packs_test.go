package vectors

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/integrity"
	"github.com/agentmem/agentmem/internal/wire"
	"github.com/agentmem/agentmem/pkg/events"
)

func packOf(tenant, user, model string, ids ...string) []Vector {
	var vs []Vector
	for i, id := range ids {
		vs = append(vs, Vector{Tenant: tenant, User: user, Model: model, ID: id, Kind: KindTurn, Scale: 0.5 + float32(i), Q: []int8{int8(i), -3, 127}})
	}
	return vs
}

func TestPackRoundTripAndBadPacks(t *testing.T) {
	vs := packOf("acme", "alice", "openai-compatible:m@256", "s1-000", "a.b c", "x")
	vs[1].Kind, vs[2].Q = KindSummary, nil
	got, err := DecodePack(EncodePack(vs))
	if err != nil || len(got) != len(vs) {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	for i := range vs {
		w, g := vs[i], got[i]
		if g.Tenant != w.Tenant || g.User != w.User || g.Model != w.Model || g.ID != w.ID || g.Kind != w.Kind || g.Scale != w.Scale || !slices.Equal(g.Q, w.Q) {
			t.Fatalf("vector %d: %+v, want %+v", i, g, w)
		}
	}
	good := EncodePack(vs)
	for name, b := range map[string][]byte{
		"empty":        nil,
		"a vector":     Encode(vs[0]),
		"version 2":    append([]byte{packMagic, 2}, good[2:]...),
		"truncated":    good[:len(good)-1],
		"trailing":     append(slices.Clone(good), 0),
		"huge count":   binary.AppendUvarint(wire.AppendText(wire.AppendText(wire.AppendText([]byte{packMagic, codecVersion, encodingInt8}, "acme"), "alice"), "m"), 1<<40),
		"header only":  good[:3],
		"cut in an id": good[:40],
	} {
		if _, err := DecodePack(b); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

func FuzzDecodePack(f *testing.F) {
	f.Add(EncodePack(packOf("acme", "alice", "m", "a", "b")))
	f.Add([]byte{packMagic, codecVersion, encodingInt8, 0, 0, 0, 200})
	f.Fuzz(func(t *testing.T, b []byte) {
		vs, err := DecodePack(b)
		if err != nil || len(vs) == 0 {
			return
		}
		again, err := DecodePack(EncodePack(vs))
		if err != nil || len(again) != len(vs) {
			t.Fatalf("round trip of %d vectors: %d, %v", len(vs), len(again), err)
		}
		for i := range vs {
			if again[i].ID != vs[i].ID || !slices.Equal(again[i].Q, vs[i].Q) || math.Float32bits(again[i].Scale) != math.Float32bits(vs[i].Scale) {
				t.Fatalf("vector %d: %+v, want %+v", i, again[i], vs[i])
			}
		}
	})
}

// TestForeignPacksAreCorrupt: a pack naming another tenant, user or model than its key is corrupt
// as a whole, like a single vector.
func TestForeignPacksAreCorrupt(t *testing.T) {
	s := &Store{bucket: "AGENTMEM_VECTORS"}
	pack := EncodePack(packOf("acme", "alice", "m1", "t1", "t2"))
	vs, cerr := s.Entries(PackKey("acme", "alice", "m1", "P1"), pack)
	if cerr != nil || len(vs) != 2 || vs[1].ID != "t2" {
		t.Fatalf("own pack: %+v, %v", vs, cerr)
	}
	for _, c := range []struct {
		key, reason string
	}{
		{PackKey("beta", "alice", "m1", "P1"), integrity.Tenant},
		{PackKey("acme", "bob", "m1", "P1"), integrity.User},
		{PackKey("acme", "alice", "m2", "P1"), integrity.ID},
		{"acme.alice." + ModelToken("m1") + ".p.", integrity.Undecodable},
		{Key("acme", "alice", "m1", "t1"), integrity.Undecodable}, // a pack under a vector's key
	} {
		vs, cerr := s.Entries(c.key, pack)
		if cerr == nil || cerr.Reason != c.reason || !errors.Is(cerr, integrity.ErrCorrupt) || vs != nil {
			t.Fatalf("pack of acme/alice/m1 under %s: %v, %v; want %s", c.key, vs, cerr, c.reason)
		}
	}
	if _, cerr := s.Entries(PackKey("acme", "alice", "m1", "P1"), Encode(packOf("acme", "alice", "m1", "t1")[0])); cerr == nil {
		t.Fatal("a single vector under a pack key was read")
	}
}

func TestParsePackKey(t *testing.T) {
	k, err := ParseKey(PackKey("acme", "alice", "m1", "abc"))
	if err != nil || k.Tenant != "acme" || k.User != "alice" || k.Model != ModelToken("m1") || k.Pack != "abc" || k.Entry != "" {
		t.Fatalf("ParseKey of a pack key: %+v, %v", k, err)
	}
	if _, ok := k.ID(); ok {
		t.Fatal("a pack key names an entry")
	}
	if !strings.HasSuffix(PackFilter("acme", "alice", "m1"), ".p.*") {
		t.Fatalf("PackFilter %s", PackFilter("acme", "alice", "m1"))
	}
}

// TestPutPacksWritesOneAtomicBatch: the topology lets the vector bucket take atomic batches, and
// PutPacks writes the packs of several owners in one (consecutive stream sequences, every vector
// found by Scan); without atomic publish (a bucket from an older server) every pack is still
// written, one at a time; a pack of mixed owners fails alone.
func TestPutPacksWritesOneAtomicBatch(t *testing.T) {
	env := brokertest.Start(t)
	ctx := context.Background()
	topo := events.DefaultTopology()
	if err := topo.Ensure(ctx, env.JS); err != nil {
		t.Fatal(err)
	}
	stream, err := env.JS.Stream(ctx, "KV_"+topo.VectorBucket())
	if err != nil {
		t.Fatal(err)
	}
	if !stream.CachedInfo().Config.AllowAtomicPublish {
		t.Fatal("the vector bucket's stream does not allow atomic batches")
	}
	store, err := Open(ctx, env.JS, topo)
	if err != nil {
		t.Fatal(err)
	}
	found := func(user, model string) []string {
		t.Helper()
		var ids []string
		if err := store.Scan(ctx, "acme", user, model, func(v Vector) { ids = append(ids, v.ID) }); err != nil {
			t.Fatal(err)
		}
		slices.Sort(ids)
		return ids
	}
	before, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mixed := append(packOf("acme", "carol", "m1", "x"), packOf("acme", "dave", "m1", "y")...)
	errs := store.PutPacks(ctx, [][]Vector{packOf("acme", "alice", "m1", "a", "b"), mixed, packOf("acme", "bob", "m1", "c"),
		packOf("acme", "erin", "m1", "e1"), packOf("acme", "fred", "m1", "f1")})
	if errs[0] != nil || errs[1] == nil || errs[2] != nil || errs[3] != nil || errs[4] != nil {
		t.Fatalf("errors %v: want only the mixed pack's", errs)
	}
	after, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after.State.LastSeq != before.State.LastSeq+4 || after.State.Msgs != before.State.Msgs+4 {
		t.Fatalf("stream went from %+v to %+v: want four packs", before.State, after.State)
	}
	// Stored as one atomic batch: the messages keep the batch's id.
	batchIDs := map[string]bool{}
	for seq := before.State.LastSeq + 1; seq <= after.State.LastSeq; seq++ {
		m, err := stream.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		batchIDs[m.Header.Get("Nats-Batch-Id")] = true
	}
	if len(batchIDs) != 1 || batchIDs[""] {
		t.Fatalf("batch ids of the four packs: %v, want one", batchIDs)
	}
	if got := found("alice", "m1"); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("alice's vectors %v", got)
	}
	if got := found("bob", "m1"); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("bob's vectors %v", got)
	}

	// A bucket without atomic batches.
	cfg := after.Config
	cfg.AllowAtomicPublish = false
	if _, err := env.JS.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	errs = store.PutPacks(ctx, [][]Vector{packOf("acme", "alice", "m2", "d"), packOf("acme", "bob", "m2", "e", "f")})
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("without atomic batches: %v", errs)
	}
	if got := found("alice", "m2"); !slices.Equal(got, []string{"d"}) {
		t.Fatalf("alice's m2 vectors %v", got)
	}
	if got := found("bob", "m2"); !slices.Equal(got, []string{"e", "f"}) {
		t.Fatalf("bob's m2 vectors %v", got)
	}
}
