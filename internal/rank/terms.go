package rank

import "hash/maphash"

// termTable maps a term to its id in an index: open addressing with linear probing over the
// ids, each term read from its posting. A Go map[string]int32 keeps a second string header and
// about twenty bytes of overhead per entry; this table keeps 4 bytes per slot at a load of at
// most three quarters. It is guarded by the index's lock.
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
func (t *termTable) find(postings []posting, term string) (int32, bool) {
	if t.n == 0 {
		return 0, false // nothing to hash the term for
	}
	tid, ok, _ := t.lookup(postings, term)
	return tid, ok
}

// reserve makes room for n more terms without growing.
func (t *termTable) reserve(postings []posting, n int) {
	need := t.n + n
	if need*4 <= len(t.slots)*3 {
		return
	}
	size := max(16, len(t.slots))
	for need*4 > size*3 {
		size *= 2
	}
	t.resize(postings, size)
}

// lookup returns the id of term, or, when it is not there, the empty slot where its probe
// ended: where insertAt puts it, if nothing was inserted meanwhile. One hash serves both.
func (t *termTable) lookup(postings []posting, term string) (tid int32, ok bool, slot int) {
	if len(t.slots) == 0 {
		return 0, false, -1
	}
	mask := len(t.slots) - 1
	for i := t.home(term); ; i = (i + 1) & mask {
		s := t.slots[i]
		if s == 0 {
			return 0, false, i
		}
		if postings[s-1].term == term {
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

// insert adds term id tid, whose posting already names the term; the term must not be there.
func (t *termTable) insert(postings []posting, tid int32) {
	if (t.n+1)*4 > len(t.slots)*3 {
		t.grow(postings)
	}
	t.place(postings[tid].term, tid)
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

func (t *termTable) grow(postings []posting) { t.resize(postings, max(16, 2*len(t.slots))) }

// resize moves the terms to a table of size slots (a power of two).
func (t *termTable) resize(postings []posting, size int) {
	old := t.slots
	t.slots = make([]int32, size)
	for _, s := range old {
		if s != 0 {
			t.place(postings[s-1].term, s-1)
		}
	}
}

// remove takes term out; every other term's posting must still name its term. Later entries of
// the probe run move back into the hole, so that no lookup stops short of them.
func (t *termTable) remove(postings []posting, term string) {
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
		if postings[s-1].term == term {
			break
		}
		i = (i + 1) & mask
	}
	t.n--
	for j := (i + 1) & mask; t.slots[j] != 0; j = (j + 1) & mask {
		// The entry at j may fill the hole at i unless its home lies cyclically in (i, j].
		k := t.home(postings[t.slots[j]-1].term)
		if (j > i && (k <= i || k > j)) || (j < i && k <= i && k > j) {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = 0
}
