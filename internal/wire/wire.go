// Package wire writes and reads the compact binary forms agentmem stores in its buckets (session
// chunks, vectors and vector packs): unsigned and signed varints, and texts as a uvarint length
// followed by their bytes. A Reader keeps the first error it meets, and every read after it
// returns zero, so a decoder reads all its fields and checks Err once.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrShort is the error of a read past the end of the input.
var ErrShort = errors.New("truncated")

// AppendText appends s as its length (uvarint) and its bytes.
func AppendText(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// Reader reads a binary form from the front of a byte slice.
type Reader struct {
	b   []byte
	err error
}

// NewReader reads b.
func NewReader(b []byte) *Reader { return &Reader{b: b} }

// Err is the first error met, or nil.
func (r *Reader) Err() error { return r.err }

// Len is the number of bytes not read yet.
func (r *Reader) Len() int { return len(r.b) }

// Fail records err (unless an error is recorded already) and stops reading.
func (r *Reader) Fail(err error) {
	if r.err == nil {
		r.err = err
	}
	r.b = nil
}

// Byte reads one byte.
func (r *Reader) Byte() byte {
	if r.err != nil || len(r.b) == 0 {
		r.Fail(ErrShort)
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

// Uvarint reads an unsigned varint.
func (r *Reader) Uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.Fail(errors.New("bad unsigned number"))
		return 0
	}
	r.b = r.b[n:]
	return v
}

// Varint reads a signed varint.
func (r *Reader) Varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.Fail(errors.New("bad number"))
		return 0
	}
	r.b = r.b[n:]
	return v
}

// Count reads a length, bounded by the bytes left (every element takes at least one).
func (r *Reader) Count() int {
	v := r.Uvarint()
	if v > uint64(len(r.b)) {
		r.Fail(fmt.Errorf("count %d exceeds the %d bytes left", v, len(r.b)))
		return 0
	}
	return int(v)
}

// Bytes reads the next n bytes; they share the input's memory.
func (r *Reader) Bytes(n uint64) []byte {
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) {
		r.Fail(ErrShort)
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

// Text reads a text written by AppendText.
func (r *Reader) Text() string {
	n := r.Count()
	if r.err != nil {
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}
