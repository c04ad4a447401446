package retrieve

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/klauspost/compress/s2"

	"github.com/agentmem/agentmem/internal/rank"
)

// The stored view's encoding (format 2), before S2 compression:
//
//	magic "AMV\x02"
//	uvarint L, then L bytes: every string of the view, one after another (the strings section)
//	the structure: unsigned varints, each string as its length (its bytes are the next ones of
//	the strings section), a time as the length and bytes of time.Time.MarshalBinary:
//	  tenant, user, the total of the turns' term numbers,
//	  the number of terms, each term,
//	  the number of sessions, each: session, rev, last sequence, head, the number of turns,
//	    each turn: id, role, content, time, sequence, metadata (the length and bytes of its
//	    JSON, 0 for none), the number of its terms, each term's number
//
// Format 1 was the same struct in gob: decoding it took as long as indexing what it held, and
// allocated every string and slice on its own. Format 2 is read in one pass, with one
// allocation for every string of the view (the strings section, converted once; the turns'
// ids, contents and the terms are substrings of it, so they live and go together, as a loaded
// view's do) and one for every turn's term numbers. A value of another format is not used: the
// next load reads the user from the stream and writes it again in this one.

// viewMagic opens a stored view of the current format.
const viewMagic = "AMV\x02"

// errViewFormat is a value of another format than viewMagic's: a stored view written by another
// version of agentmem, not a corrupt one.
var errViewFormat = errors.New("not a stored view of format 2")

// viewEncoder builds the two sections of an encoded view.
type viewEncoder struct{ strs, st []byte }

func (e *viewEncoder) uint(n uint64) { e.st = binary.AppendUvarint(e.st, n) }

func (e *viewEncoder) str(s string) {
	e.uint(uint64(len(s)))
	e.strs = append(e.strs, s...)
}

func (e *viewEncoder) bytes(b []byte) {
	e.uint(uint64(len(b)))
	e.st = append(e.st, b...)
}

// encodeView encodes v in format 2, compressed with S2.
func encodeView(v *storedView) ([]byte, error) {
	var e viewEncoder
	e.str(v.Tenant)
	e.str(v.User)
	total := 0
	for _, s := range v.Sessions {
		for _, t := range s.Turns {
			total += len(t.Terms)
		}
	}
	e.uint(uint64(total))
	e.uint(uint64(len(v.Terms)))
	for _, t := range v.Terms {
		e.str(t)
	}
	e.uint(uint64(len(v.Sessions)))
	for _, s := range v.Sessions {
		e.str(s.Session)
		e.uint(s.Rev)
		e.uint(s.LastSeq)
		e.str(s.Head)
		e.uint(uint64(len(s.Turns)))
		for _, t := range s.Turns {
			e.str(t.ID)
			e.str(t.Role)
			e.str(t.Content)
			at, err := t.At.MarshalBinary()
			if err != nil {
				return nil, fmt.Errorf("turn %q: %w", t.ID, err)
			}
			e.bytes(at)
			e.uint(t.Seq)
			e.bytes(t.Meta)
			e.uint(uint64(len(t.Terms)))
			for _, id := range t.Terms {
				e.uint(uint64(id))
			}
		}
	}
	raw := make([]byte, 0, len(viewMagic)+binary.MaxVarintLen64+len(e.strs)+len(e.st))
	raw = append(raw, viewMagic...)
	raw = binary.AppendUvarint(raw, uint64(len(e.strs)))
	raw = append(raw, e.strs...)
	raw = append(raw, e.st...)
	return s2.Encode(nil, raw), nil
}

// viewDecoder reads the structure of an encoded view, its strings from the strings section.
type viewDecoder struct {
	st   []byte
	strs string
	err  error
}

func (d *viewDecoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("truncated or malformed at %s", what)
	}
}

func (d *viewDecoder) uint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	n, k := binary.Uvarint(d.st)
	if k <= 0 {
		d.fail(what)
		return 0
	}
	d.st = d.st[k:]
	return n
}

// count reads a number of things each taking at least one byte of the structure: more than
// the bytes left is malformed (and would allocate without bound).
func (d *viewDecoder) count(what string) int {
	n := d.uint(what)
	if n > uint64(len(d.st)) {
		d.fail(what)
		return 0
	}
	return int(n)
}

func (d *viewDecoder) str(what string) string {
	n := d.uint(what)
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.strs)) {
		d.fail(what)
		return ""
	}
	s := d.strs[:n]
	d.strs = d.strs[n:]
	return s
}

func (d *viewDecoder) bytes(what string) []byte {
	n := d.uint(what)
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.st)) {
		d.fail(what)
		return nil
	}
	if n == 0 {
		return nil
	}
	b := d.st[:n:n]
	d.st = d.st[n:]
	return b
}

// rawPool holds the buffers values are decompressed into: a cold load's largest transient
// allocation (the size of the user's text and term numbers), which would otherwise be fresh
// memory for every load.
var rawPool sync.Pool

// maxPooledRaw bounds the buffers kept in rawPool.
const maxPooledRaw = 8 << 20

// rawBuffer returns a buffer of at least n bytes' capacity.
func rawBuffer(n int) *[]byte {
	if b, ok := rawPool.Get().(*[]byte); ok && cap(*b) >= n {
		return b
	}
	b := make([]byte, 0, n)
	return &b
}

func putRawBuffer(b *[]byte) {
	if cap(*b) <= maxPooledRaw {
		rawPool.Put(b)
	}
}

// decodeView decodes a value of the view bucket stored under k.
func decodeView(k userKey, data []byte) (*storedView, error) {
	n, err := s2.DecodedLen(data)
	if err != nil {
		return nil, err
	}
	buf := rawBuffer(n)
	defer putRawBuffer(buf)
	raw, err := s2.Decode((*buf)[:cap(*buf)], data)
	if err != nil {
		return nil, err
	}
	if len(raw) < len(viewMagic) || string(raw[:len(viewMagic)]) != viewMagic {
		return nil, errViewFormat
	}
	raw = raw[len(viewMagic):]
	ns, w := binary.Uvarint(raw)
	if w <= 0 || ns > uint64(len(raw)-w) {
		return nil, errors.New("truncated or malformed strings section")
	}
	// The strings are copied out of raw once, as one string; raw goes back to the pool, so
	// nothing decoded may keep a slice of it (metadata is cloned).
	base := string(raw[w : w+int(ns)])
	d := &viewDecoder{strs: base, st: raw[w+int(ns):]}
	v := &storedView{Tenant: d.str("tenant"), User: d.str("user")}
	if d.err == nil && (v.Tenant != k.tenant || v.User != k.user) {
		return nil, fmt.Errorf("the value is of tenant %q user %q", v.Tenant, v.User)
	}
	all := make([]uint32, d.count("term numbers"))
	if n := d.count("terms"); n > 0 {
		v.Terms = make([]string, n)
	}
	for i := range v.Terms {
		v.Terms[i] = d.str("a term")
	}
	if n := d.count("sessions"); n > 0 {
		v.Sessions = make([]storedSession, n)
	}
	for si := range v.Sessions {
		s := &v.Sessions[si]
		s.Session, s.Rev, s.LastSeq, s.Head = d.str("a session"), d.uint("a revision"), d.uint("a sequence"), d.str("a head")
		if n := d.count("turns"); n > 0 { // none stays nil, as the view that was written
			s.Turns = make([]storedTurn, n)
		}
		for ti := range s.Turns {
			t := &s.Turns[ti]
			t.ID, t.Role, t.Content = d.str("a turn's id"), d.str("a role"), d.str("a content")
			if at := d.bytes("a time"); d.err == nil {
				if err := t.At.UnmarshalBinary(at); err != nil {
					return nil, fmt.Errorf("turn %q: %w", t.ID, err)
				}
			}
			t.Seq, t.Meta = d.uint("a sequence"), bytes.Clone(d.bytes("metadata"))
			nt := d.count("a turn's terms")
			if nt > len(all) {
				d.fail("a turn's terms")
			}
			if d.err != nil {
				return nil, d.err
			}
			if nt > 0 {
				t.Terms, all = all[:nt:nt], all[nt:]
			}
			for j := range t.Terms {
				id := d.uint("a term number")
				if id >= uint64(len(v.Terms)) {
					return nil, fmt.Errorf("turn %q names term %d of %d", t.ID, id, len(v.Terms))
				}
				t.Terms[j] = uint32(id)
			}
		}
	}
	switch {
	case d.err != nil:
		return nil, d.err
	case len(d.st) != 0 || len(d.strs) != 0 || len(all) != 0:
		return nil, errors.New("bytes left after the view")
	}
	// The terms are substrings of the strings section, as the texts are: the index refers to
	// them there instead of copying them.
	v.vocab = &rank.Vocab{Terms: v.Terms, Base: base}
	return v, nil
}
