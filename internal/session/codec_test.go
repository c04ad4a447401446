package session

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/wire"
	"github.com/agentmem/agentmem/pkg/memory"
)

// randomChunk makes a chunk with every kind of operation and every optional field sometimes set.
func randomChunk(r *rand.Rand) Chunk {
	str := func() string {
		if r.IntN(4) == 0 {
			return ""
		}
		const alphabet = "abc-_.:xyz 中文"
		b := []rune{}
		for range r.IntN(12) + 1 {
			b = append(b, []rune(alphabet)[r.IntN(len([]rune(alphabet)))])
		}
		return string(b)
	}
	when := func() time.Time {
		switch r.IntN(4) {
		case 0:
			return time.Time{}
		case 1:
			return time.Unix(r.Int64N(4e9), r.Int64N(1e9)).In(time.FixedZone("", 8*3600))
		}
		return time.Unix(r.Int64N(4e9), r.Int64N(1e9)).UTC()
	}
	strs := func() []string {
		var out []string
		for range r.IntN(3) {
			out = append(out, str()+"x")
		}
		return out
	}
	c := Chunk{Tenant: str(), Session: str(), Prev: str(), N: r.IntN(1000)}
	kinds := []string{OpAdd, OpReject, OpName, OpSummary, OpEnd, "future"}
	for range r.IntN(8) {
		op := Op{Kind: kinds[r.IntN(len(kinds))], Seq: uint64(r.IntN(3)) * r.Uint64N(1<<40), ID: str(), Budget: r.IntN(3) * r.IntN(1<<20),
			User: str(), IDs: strs(), Reason: str(), Time: when()}
		if r.IntN(3) > 0 {
			e := &memory.Entry{ID: str(), Type: memory.Type(str()), Content: str(), Timestamp: when(), Tokens: r.IntN(3) * r.IntN(5000),
				Role: str(), Seq: uint64(r.IntN(2)) * r.Uint64N(1<<40), Provenance: strs()}
			if r.IntN(3) == 0 {
				e.Metadata = map[string]any{"status": "summarized", "n": float64(r.IntN(100)), "usage": map[string]any{"calls": float64(1)}}
			}
			op.Entry = e
		}
		c.Ops = append(c.Ops, op)
	}
	return c
}

// sameChunk compares two decoded chunks, times by instant and zone offset.
func sameChunk(t *testing.T, got, want Chunk) {
	t.Helper()
	norm := func(c Chunk) Chunk {
		c.Ops = append([]Op(nil), c.Ops...)
		for i := range c.Ops {
			op := &c.Ops[i]
			if op.Time.IsZero() {
				op.Time = time.Time{}
			} else {
				_, off := op.Time.Zone()
				op.Time = time.Unix(0, op.Time.UnixNano()).In(time.FixedZone("", off))
			}
			if op.Entry != nil {
				e := *op.Entry
				if e.Timestamp.IsZero() {
					e.Timestamp = time.Time{}
				} else {
					_, off := e.Timestamp.Zone()
					e.Timestamp = time.Unix(0, e.Timestamp.UnixNano()).In(time.FixedZone("", off))
				}
				op.Entry = &e
			}
		}
		return c
	}
	if g, w := norm(got), norm(want); !reflect.DeepEqual(g, w) {
		t.Fatalf("decoded\n%+v\nwant\n%+v", g, w)
	}
}

// The binary form decodes to what the JSON form decodes to, for every kind of operation and
// field: readers see the same chunk whichever form it was written in.
func TestBinaryChunkDecodesLikeJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for i := range 3000 {
		c := randomChunk(r)
		js, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		fromJSON, err := DecodeChunk(js)
		if err != nil {
			t.Fatalf("chunk %d: JSON: %v", i, err)
		}
		bin, err := EncodeChunk(c)
		if err != nil {
			t.Fatal(err)
		}
		fromBin, err := DecodeChunk(bin)
		if err != nil {
			t.Fatalf("chunk %d: binary: %v", i, err)
		}
		sameChunk(t, fromBin, fromJSON)
	}
}

func TestBadBinaryChunksAreErrors(t *testing.T) {
	good, err := EncodeChunk(Chunk{Tenant: "acme", Session: "s1", N: 1, Ops: []Op{{Kind: OpAdd, ID: "t1", Seq: 3,
		Entry: &memory.Entry{ID: "t1", Type: memory.Conversation, Timestamp: time.Unix(1, 0).UTC(), Tokens: 4}}}})
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{
		"truncated":         good[:len(good)-1],
		"trailing bytes":    append(append([]byte{}, good...), 0),
		"another version":   append([]byte{chunkMagic, chunkVersion + 1}, good[2:]...),
		"a huge count":      {chunkMagic, chunkVersion, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"only the magic":    {chunkMagic},
		"an unknown field":  append(append([]byte{chunkMagic, chunkVersion, 0, 0, 0, 1, 1}, wire.AppendText(nil, "add")...), 0x80, 0x02),
		"bad metadata JSON": chunkWithMetadata(`{"a":`),
	} {
		if _, err := DecodeChunk(b); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

// chunkWithMetadata is a binary chunk whose one entry carries metadata md.
func chunkWithMetadata(md string) []byte {
	b := []byte{chunkMagic, chunkVersion, 0, 0, 0, 1, 1}
	b = wire.AppendText(b, OpSummary)
	b = binary.AppendUvarint(b, opEntry)
	b = binary.AppendUvarint(b, entMetadata)
	return wire.AppendText(b, md)
}

func FuzzDecodeChunk(f *testing.F) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		b, _ := EncodeChunk(randomChunk(r))
		f.Add(b)
	}
	f.Add([]byte(`{"n":1,"ops":[{"k":"add","id":"t1"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeChunk(b)
		if err != nil || len(b) == 0 || b[0] != chunkMagic {
			return
		}
		// What decodes encodes again to a value that decodes the same.
		again, err := EncodeChunk(c)
		if err != nil {
			t.Fatal(err)
		}
		c2, err := DecodeChunk(again)
		if err != nil {
			t.Fatalf("re-encoded chunk does not decode: %v", err)
		}
		sameChunk(t, c2, c)
	})
}

// BenchmarkDecodeChunk compares the two forms on a chunk of 10 applied turns, as ingest writes
// them for a batch.
func BenchmarkDecodeChunk(b *testing.B) {
	c := Chunk{Tenant: "acme", Session: "s-0123456789", Prev: "acme.s-0123456789.abcdefghijklmnopqrstuv", N: 7}
	for i := range 10 {
		id := fmt.Sprintf("8f14e45f-ceea-467f-a7d5-%012d", i)
		c.Ops = append(c.Ops, Op{Kind: OpAdd, Seq: uint64(100000 + i), ID: id, Budget: 160000, Entry: &memory.Entry{
			ID: id, Type: memory.Conversation, Timestamp: time.Date(2026, 12, 1, 9, 0, i, 0, time.UTC), Tokens: 120, Role: "user", Seq: uint64(100000 + i)}})
	}
	js, _ := json.Marshal(c)
	bin, _ := EncodeChunk(c)
	for _, form := range []struct {
		name string
		b    []byte
	}{{"json", js}, {"binary", bin}} {
		b.Run(form.name, func(b *testing.B) {
			b.ReportMetric(float64(len(form.b)), "bytes")
			for b.Loop() {
				if _, err := DecodeChunk(form.b); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
