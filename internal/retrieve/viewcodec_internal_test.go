package retrieve

import (
	"bytes"
	"encoding/gob"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
)

func sampleView() *storedView {
	paris := time.FixedZone("", 3600)
	return &storedView{Tenant: "acme", User: "ann",
		Terms: []string{"deploy", "rollback", "部署", ""},
		Sessions: []storedSession{
			{Session: "s1", Rev: 7, LastSeq: 42, Head: "c9", Turns: []storedTurn{
				{ID: "t1", Role: "user", Content: "deploy the rollback", At: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), Seq: 40, Terms: []uint32{0, 1}},
				{ID: "t2", Role: "assistant", Content: "部署", At: time.Date(2026, 1, 2, 4, 0, 0, 0, paris), Seq: 42, Meta: []byte(`{"name":"Bo"}`), Terms: []uint32{2, 2, 3}},
			}},
			{Session: "s2", Rev: 9, LastSeq: 50},
		}}
}

// A stored view comes back as it was written: every string, number, time (with its zone) and
// metadata.
func TestViewCodecRoundTrip(t *testing.T) {
	want := sampleView()
	data, err := encodeView(want)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeView(userKey{"acme", "ann"}, data)
	if err != nil {
		t.Fatal(err)
	}
	if got.vocab == nil || !reflect.DeepEqual(got.vocab.Terms, want.Terms) {
		t.Fatalf("vocabulary %+v", got.vocab)
	}
	got.vocab = nil
	for si := range got.Sessions {
		for ti := range got.Sessions[si].Turns {
			g, w := got.Sessions[si].Turns[ti], want.Sessions[si].Turns[ti]
			if !g.At.Equal(w.At) || g.At.Location().String() != w.At.Location().String() {
				t.Errorf("turn %s at %v, want %v", g.ID, g.At, w.At)
			}
			_, goff := g.At.Zone()
			_, woff := w.At.Zone()
			if goff != woff {
				t.Errorf("turn %s offset %d, want %d", g.ID, goff, woff)
			}
			got.Sessions[si].Turns[ti].At, want.Sessions[si].Turns[ti].At = time.Time{}, time.Time{}
		}
	}
	// Decoding another value (into the same pooled buffer) leaves the first one's alone.
	other := sampleView()
	other.Sessions[0].Turns[1].Meta = []byte(`{"name":"Zz"}`)
	otherData, err := encodeView(other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := decodeView(userKey{"acme", "ann"}, otherData); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded\n%+v\nwant\n%+v", got, want)
	}
	if _, err := decodeView(userKey{"acme", "bob"}, data); err == nil {
		t.Fatal("a view decoded under another user's key")
	}
}

// A value that is cut, bit-flipped or names a term it does not have fails with an error (never a
// panic); a value of format 1 (gob) is told apart as another format, not a corrupt value.
func TestViewCodecRejectsBadValues(t *testing.T) {
	data, err := encodeView(sampleView())
	if err != nil {
		t.Fatal(err)
	}
	raw, err := s2.Decode(nil, data)
	if err != nil {
		t.Fatal(err)
	}
	for n := range len(raw) {
		if _, err := decodeView(userKey{"acme", "ann"}, s2.Encode(nil, raw[:n])); err == nil {
			t.Fatalf("a value cut at %d of %d bytes decoded", n, len(raw))
		}
	}
	for i := len(viewMagic); i < len(raw); i++ {
		bad := bytes.Clone(raw)
		bad[i] ^= 0xff
		_, _ = decodeView(userKey{"acme", "ann"}, s2.Encode(nil, bad)) // must not panic
	}
	bad := sampleView()
	bad.Sessions[0].Turns[0].Terms = []uint32{9}
	data, err = encodeView(bad)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := decodeView(userKey{"acme", "ann"}, data); err == nil {
		t.Fatal("a turn naming a term the view does not have decoded")
	}
	var old bytes.Buffer
	if err := gob.NewEncoder(&old).Encode(struct {
		V            int
		Tenant, User string
	}{1, "acme", "ann"}); err != nil {
		t.Fatal(err)
	}
	if _, err := decodeView(userKey{"acme", "ann"}, s2.Encode(nil, old.Bytes())); !errors.Is(err, errViewFormat) {
		t.Fatalf("a format 1 value: %v, want errViewFormat", err)
	}
}

// FuzzDecodeView: no value read from the view bucket makes decoding panic or allocate without
// bound.
func FuzzDecodeView(f *testing.F) {
	data, err := encodeView(sampleView())
	if err != nil {
		f.Fatal(err)
	}
	raw, _ := s2.Decode(nil, data)
	f.Add(raw)
	f.Add([]byte(viewMagic))
	f.Fuzz(func(t *testing.T, raw []byte) {
		v, err := decodeView(userKey{"acme", "ann"}, s2.Encode(nil, raw))
		if err == nil {
			if _, err := encodeView(v); err != nil {
				t.Fatalf("a decoded view does not encode: %v", err)
			}
		}
	})
}
