package rank

import (
	"hash/maphash"
	"unsafe"
)

// termStore holds the terms of an index by id, without a pointer per term (which the garbage
// collector would visit, and a string header of 16 bytes): each term is 8 bytes of reference
// into one of two places. A term of a kept vocabulary (Vocab.Base, the string a stored view's
// texts and terms are substrings of) is an offset into that string, which the documents' texts
// keep alive anyway; any other term's bytes are copied into own, one growing arena. A freed
// term's bytes stay in own until more than half of it is unused, when the live terms are copied
// into a new arena (compact). It is guarded by the index's lock.
type termStore struct {
	kept  string    // the adopted vocabulary's bytes: terms at offsets below len(kept)
	own   []byte    // the other terms' bytes, at offsets len(kept) and up
	refs  []termRef // by term id; a free id's is the zero ref
	waste int       // bytes of own that no term uses
}

// termRef locates a term's bytes: n bytes at offset off of kept, then own, as if one string.
type termRef struct{ off, n uint32 }

// maxTermBytes bounds the bytes a termStore addresses with 32-bit offsets.
const maxTermBytes = 1<<32 - 1

// term returns the term of id tid. The string refers to the store's memory, which is never
// written again once a term is in it (compact copies to a new arena), so it stays valid.
func (ts *termStore) term(tid int32) string {
	r := ts.refs[tid]
	if int(r.off) < len(ts.kept) {
		return ts.kept[r.off : r.off+r.n]
	}
	if r.n == 0 {
		return ""
	}
	return unsafe.String(&ts.own[int(r.off)-len(ts.kept)], int(r.n))
}

// adopt makes base, whose substrings are the terms of a kept vocabulary, the store's kept
// string: the vocabulary's terms are then referred to where they are. The store must hold no
// term (a cold load's empty index).
func (ts *termStore) adopt(base string) {
	if len(base) > maxTermBytes {
		return
	}
	clear(ts.refs)
	ts.kept, ts.own, ts.waste = base, ts.own[:0], 0
}

// isKept reports whether s lies within the kept string.
func (ts *termStore) isKept(s string) bool {
	if len(ts.kept) == 0 || len(s) == 0 {
		return false
	}
	k, p := uintptr(unsafe.Pointer(unsafe.StringData(ts.kept))), uintptr(unsafe.Pointer(unsafe.StringData(s)))
	return p >= k && p+uintptr(len(s)) <= k+uintptr(len(ts.kept))
}

// set makes t the term of id tid (a new id, len(refs), or a free one): referred to in the kept
// string when it lies there, else copied into own.
func (ts *termStore) set(tid int32, t string) {
	if int(tid) == len(ts.refs) {
		ts.refs = append(ts.refs, termRef{})
	}
	if ts.isKept(t) {
		off := uintptr(unsafe.Pointer(unsafe.StringData(t))) - uintptr(unsafe.Pointer(unsafe.StringData(ts.kept)))
		ts.refs[tid] = termRef{off: uint32(off), n: uint32(len(t))}
		return
	}
	off := len(ts.kept) + len(ts.own)
	if off+len(t) > maxTermBytes {
		panic("rank: more than 4 GiB of terms in one index")
	}
	ts.own = append(ts.own, t...)
	ts.refs[tid] = termRef{off: uint32(off), n: uint32(len(t))}
}

// free forgets the term of id tid.
func (ts *termStore) free(tid int32) {
	if r := ts.refs[tid]; int(r.off) >= len(ts.kept) {
		ts.waste += int(r.n)
	}
	ts.refs[tid] = termRef{}
	if ts.waste > 4096 && 2*ts.waste > len(ts.own) {
		ts.compact()
	}
}

// compact copies the terms in own to a new arena of their size.
func (ts *termStore) compact() {
	if ts.waste == 0 && cap(ts.own) == len(ts.own) {
		return
	}
	own := make([]byte, 0, len(ts.own)-ts.waste)
	for i, r := range ts.refs {
		if int(r.off) >= len(ts.kept) && r.n > 0 {
			o := int(r.off) - len(ts.kept)
			ts.refs[i].off = uint32(len(ts.kept) + len(own))
			own = append(own, ts.own[o:o+int(r.n)]...)
		}
	}
	ts.own, ts.waste = own, 0
}

// termTable maps a term to its id in an index: open addressing with linear probing over the
// ids, each term read from the index's termStore. A Go map[string]int32 keeps a second string
// header and about twenty bytes of overhead per entry; this table keeps 4 bytes per slot at a
// load of at most three quarters. It is guarded by the index's lock.
type termTable struct {
	seed  maphash.Seed
	slots []int32 // a term id + 1; 0 is an empty slot
	n     int
}

func newTermTable() termTable { return termTable{seed: maphash.MakeSeed()} }

// len returns the number of terms.
func (t *termTable) len() int { return t.n }

func (t *termTable) home(term string) int {
	return int(maphash.String(t.seed, term) & uint64(len(t.slots)-1))
}

// find returns the id of term.
func (t *termTable) find(ts *termStore, term string) (int32, bool) {
	if t.n == 0 {
		return 0, false // nothing to hash the term for
	}
	tid, ok, _ := t.lookup(ts, term)
	return tid, ok
}

// reserve makes room for n more terms without growing.
func (t *termTable) reserve(ts *termStore, n int) {
	need := t.n + n
	if need*4 <= len(t.slots)*3 {
		return
	}
	size := max(16, len(t.slots))
	for need*4 > size*3 {
		size *= 2
	}
	t.resize(ts, size)
}

// lookup returns the id of term, or, when it is not there, the empty slot where its probe
// ended: where insertAt puts it, if nothing was inserted meanwhile. One hash serves both.
func (t *termTable) lookup(ts *termStore, term string) (tid int32, ok bool, slot int) {
	if len(t.slots) == 0 {
		return 0, false, -1
	}
	mask := len(t.slots) - 1
	for i := t.home(term); ; i = (i + 1) & mask {
		s := t.slots[i]
		if s == 0 {
			return 0, false, i
		}
		if ts.term(s-1) == term {
			return s - 1, true, i
		}
	}
}

// insertAt adds term id tid at slot, which lookup returned for its term, when the table has
// room for it without growing (reserve); it reports whether it did.
func (t *termTable) insertAt(tid int32, slot int) bool {
	if slot < 0 || (t.n+1)*4 > len(t.slots)*3 || t.slots[slot] != 0 {
		return false
	}
	t.slots[slot] = tid + 1
	t.n++
	return true
}

// insert adds term id tid, whose term the store already holds; the term must not be there.
func (t *termTable) insert(ts *termStore, tid int32) {
	if (t.n+1)*4 > len(t.slots)*3 {
		t.grow(ts)
	}
	t.place(ts.term(tid), tid)
	t.n++
}

func (t *termTable) place(term string, tid int32) {
	mask := len(t.slots) - 1
	i := t.home(term)
	for t.slots[i] != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = tid + 1
}

func (t *termTable) grow(ts *termStore) { t.resize(ts, max(16, 2*len(t.slots))) }

// resize moves the terms to a table of size slots (a power of two).
func (t *termTable) resize(ts *termStore, size int) {
	old := t.slots
	t.slots = make([]int32, size)
	for _, s := range old {
		if s != 0 {
			t.place(ts.term(s-1), s-1)
		}
	}
}

// remove takes term out; every other term must still be in the store. Later entries of the
// probe run move back into the hole, so that no lookup stops short of them.
func (t *termTable) remove(ts *termStore, term string) {
	if t.n == 0 {
		return
	}
	mask := len(t.slots) - 1
	i := t.home(term)
	for {
		s := t.slots[i]
		if s == 0 {
			return
		}
		if ts.term(s-1) == term {
			break
		}
		i = (i + 1) & mask
	}
	t.n--
	for j := (i + 1) & mask; t.slots[j] != 0; j = (j + 1) & mask {
		// The entry at j may fill the hole at i unless its home lies cyclically in (i, j].
		k := t.home(ts.term(t.slots[j] - 1))
		if (j > i && (k <= i || k > j)) || (j < i && k <= i && k > j) {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = 0
}
