package wire

import (
	"encoding/binary"
	"errors"
	"testing"
)

func TestReaderReadsWhatIsWrittenAndKeepsItsFirstError(t *testing.T) {
	b := AppendText(nil, "héllo")
	b = binary.AppendVarint(b, -42)
	b = append(b, 7)
	r := NewReader(b)
	if s, v, c := r.Text(), r.Varint(), r.Byte(); s != "héllo" || v != -42 || c != 7 || r.Err() != nil || r.Len() != 0 {
		t.Fatalf("read %q %d %d, err %v, %d left", s, v, c, r.Err(), r.Len())
	}
	r = NewReader(AppendText(nil, "abc")[:3])
	if s := r.Text(); s != "" || r.Err() == nil {
		t.Fatalf("a cut text read %q, err %v", s, r.Err())
	}
	first := r.Err()
	if r.Byte() != 0 || r.Uvarint() != 0 || r.Bytes(1) != nil || r.Err() != first {
		t.Fatalf("reads after an error: err %v, want the first (%v) kept", r.Err(), first)
	}
	if r := NewReader(nil); r.Byte() != 0 || !errors.Is(r.Err(), ErrShort) {
		t.Fatalf("reading past the end: %v", r.Err())
	}
}
