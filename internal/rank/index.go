package rank

import (
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/agentmem/agentmem/internal/search"
)

// Doc is one document of a user's memory: an archived conversation turn or a long-term entry.
type Doc struct {
	ID    string
	Text  string
	Group string // session id; "" for a document of its own (a long-term entry)
	Pos   int    // position within the group (turn index), for neighbour context
	Role  string // user, assistant, tool, system, or ""
	Time  time.Time
	Kind  string // "turn", "fact", "summary"
}

// Index ranks the documents of one user for a query; see the package comment for the method.
// It is safe for concurrent use: searches share a read lock; Add and Remove take the write
// lock for a time proportional to the documents' distinct terms (plus, for a document of a
// group, a binary search among the group's members).
type Index struct {
	cfg Config

	mu       sync.RWMutex
	slots    map[string]int32 // document id → slot
	docs     []doc            // by slot; a free slot has id ""
	free     []int32
	terms    map[string]int32 // term → term id
	postings []posting        // by term id
	freeTerm []int32          // term ids whose posting is empty, for reuse
	groups   map[string]int32 // group id → group number
	grps     []group          // by group number
	freeGrp  []int32
	live     int // documents indexed
	totalLen int // sum of the documents' lengths
	nbLen    int // sum over documents of their neighbours' lengths
	nGroups  int // groups; a document without a group has one of its own
	strBytes int // bytes of ids and terms held
}

// doc is what the index keeps of one document.
type doc struct {
	id         string
	group      int32 // group number
	pos        int
	user       bool  // a user turn
	assistant  bool  // an assistant turn
	length     int32 // terms, repeats included
	prev, next int32 // neighbouring slots in the group by Pos, -1 for none
	terms      []termFreq
}

type termFreq struct {
	term int32
	tf   int32
}

// posting lists the documents that contain a term, in no particular order.
type posting struct {
	term  string
	slots []int32
	tfs   []int32
}

// group is a session: its members in Pos order.
type group struct {
	id      string
	members []int32 // slots, sorted by pos
	length  int     // sum of the members' lengths
}

// NewIndex returns an empty index that ranks with cfg (zero fields take their defaults).
func NewIndex(cfg Config) *Index {
	return &Index{
		cfg:    cfg.withDefaults(),
		slots:  make(map[string]int32),
		terms:  make(map[string]int32),
		groups: make(map[string]int32),
	}
}

// Add indexes docs, each replacing any document with the same id. A document whose text has
// no terms still counts in [Index.Len] and in the statistics, and never matches by itself.
func (ix *Index) Add(docs ...Doc) {
	type prepared struct {
		d     *Doc
		terms []string
		tf    map[string]int32
	}
	prep := make([]prepared, len(docs))
	for i := range docs {
		terms := search.Terms(docs[i].Text)
		tf := make(map[string]int32, len(terms))
		for _, t := range terms {
			tf[t]++
		}
		prep[i] = prepared{d: &docs[i], terms: terms, tf: tf}
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for _, p := range prep {
		ix.add(p.d, len(p.terms), p.tf)
	}
}

func (ix *Index) add(d *Doc, length int, tf map[string]int32) {
	if slot, ok := ix.slots[d.ID]; ok {
		ix.remove(slot)
	}
	var slot int32
	if n := len(ix.free); n > 0 {
		slot = ix.free[n-1]
		ix.free = ix.free[:n-1]
	} else {
		slot = int32(len(ix.docs))
		ix.docs = append(ix.docs, doc{})
	}
	id := strings.Clone(d.ID)
	ix.slots[id] = slot
	ix.strBytes += len(id)
	nd := doc{id: id, pos: d.Pos, user: d.Role == "user", assistant: d.Role == "assistant", length: int32(length), prev: -1, next: -1,
		terms: make([]termFreq, 0, len(tf))}
	for t, n := range tf {
		tid, ok := ix.terms[t]
		if !ok {
			t = strings.Clone(t) // terms may be substrings of the text: do not keep it alive
			if k := len(ix.freeTerm); k > 0 {
				tid = ix.freeTerm[k-1]
				ix.freeTerm = ix.freeTerm[:k-1]
				ix.postings[tid].term = t
			} else {
				tid = int32(len(ix.postings))
				ix.postings = append(ix.postings, posting{term: t})
			}
			ix.terms[t] = tid
			ix.strBytes += len(t)
		}
		p := &ix.postings[tid]
		p.slots = append(p.slots, slot)
		p.tfs = append(p.tfs, n)
		nd.terms = append(nd.terms, termFreq{term: tid, tf: n})
	}
	// A stable term order makes the index independent of map iteration order.
	slices.SortFunc(nd.terms, func(a, b termFreq) int { return int(a.term) - int(b.term) })
	ix.docs[slot] = nd
	ix.live++
	ix.totalLen += length
	g, ok := int32(-1), false
	if d.Group != "" {
		g, ok = ix.groups[d.Group]
	}
	if !ok {
		// A new group; a document without one has a group of its own, not named in groups.
		gid := ""
		if d.Group != "" {
			gid = strings.Clone(d.Group)
		}
		if k := len(ix.freeGrp); k > 0 {
			g = ix.freeGrp[k-1]
			ix.freeGrp = ix.freeGrp[:k-1]
			ix.grps[g] = group{id: gid}
		} else {
			g = int32(len(ix.grps))
			ix.grps = append(ix.grps, group{id: gid})
		}
		if gid != "" {
			ix.groups[gid] = g
			ix.strBytes += len(gid)
		}
		ix.nGroups++
	}
	gr := &ix.grps[g]
	ix.docs[slot].group = g
	at, _ := slices.BinarySearchFunc(gr.members, d.Pos, func(s int32, pos int) int { return ix.docs[s].pos - pos })
	// Equal positions keep insertion order: a new document goes after them.
	for at < len(gr.members) && ix.docs[gr.members[at]].pos == d.Pos {
		at++
	}
	gr.members = slices.Insert(gr.members, at, slot)
	gr.length += length
	var prev, next int32 = -1, -1
	if at > 0 {
		prev = gr.members[at-1]
	}
	if at+1 < len(gr.members) {
		next = gr.members[at+1]
	}
	ix.link(prev, next, slot)
}

// link puts slot between prev and next (either may be -1), keeping nbLen up to date.
func (ix *Index) link(prev, next, slot int32) {
	if prev >= 0 && next >= 0 { // the pair prev–next is split
		ix.nbLen -= int(ix.docs[prev].length) + int(ix.docs[next].length)
	}
	d := &ix.docs[slot]
	d.prev, d.next = prev, next
	if prev >= 0 {
		ix.docs[prev].next = slot
		ix.nbLen += int(ix.docs[prev].length) + int(d.length)
	}
	if next >= 0 {
		ix.docs[next].prev = slot
		ix.nbLen += int(ix.docs[next].length) + int(d.length)
	}
}

// unlink takes slot out of its group's chain, joining its neighbours.
func (ix *Index) unlink(slot int32) {
	d := &ix.docs[slot]
	prev, next := d.prev, d.next
	if prev >= 0 {
		ix.docs[prev].next = next
		ix.nbLen -= int(ix.docs[prev].length) + int(d.length)
	}
	if next >= 0 {
		ix.docs[next].prev = prev
		ix.nbLen -= int(ix.docs[next].length) + int(d.length)
	}
	if prev >= 0 && next >= 0 {
		ix.nbLen += int(ix.docs[prev].length) + int(ix.docs[next].length)
	}
	d.prev, d.next = -1, -1
}

// Remove deletes the documents ids; unknown ids are ignored.
func (ix *Index) Remove(ids ...string) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for _, id := range ids {
		if slot, ok := ix.slots[id]; ok {
			ix.remove(slot)
		}
	}
}

func (ix *Index) remove(slot int32) {
	d := &ix.docs[slot]
	for _, tf := range d.terms {
		p := &ix.postings[tf.term]
		i := slices.Index(p.slots, slot)
		last := len(p.slots) - 1
		p.slots[i], p.tfs[i] = p.slots[last], p.tfs[last]
		p.slots, p.tfs = p.slots[:last], p.tfs[:last]
		if last == 0 {
			delete(ix.terms, p.term)
			ix.strBytes -= len(p.term)
			*p = posting{}
			ix.freeTerm = append(ix.freeTerm, tf.term)
		}
	}
	ix.unlink(slot)
	gr := &ix.grps[d.group]
	gr.members = slices.DeleteFunc(gr.members, func(s int32) bool { return s == slot })
	gr.length -= int(d.length)
	if len(gr.members) == 0 {
		if gr.id != "" {
			delete(ix.groups, gr.id)
			ix.strBytes -= len(gr.id)
		}
		ix.grps[d.group] = group{}
		ix.freeGrp = append(ix.freeGrp, d.group)
		ix.nGroups--
	}
	ix.live--
	ix.totalLen -= int(d.length)
	delete(ix.slots, d.id)
	ix.strBytes -= len(d.id)
	ix.docs[slot] = doc{}
	ix.free = append(ix.free, slot)
}

// Len returns the number of documents in the index.
func (ix *Index) Len() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.live
}

// Bytes returns an estimate of the memory the index holds, for a memory cap: the documents,
// postings, groups and strings, with Go's map overhead approximated.
func (ix *Index) Bytes() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	const mapEntry = 48 // a map entry with a string key and a small value, overhead included
	n := int(unsafe.Sizeof(*ix))
	n += cap(ix.docs) * int(unsafe.Sizeof(doc{}))
	n += cap(ix.free)*4 + cap(ix.freeTerm)*4 + cap(ix.freeGrp)*4
	n += cap(ix.postings) * int(unsafe.Sizeof(posting{}))
	n += cap(ix.grps) * int(unsafe.Sizeof(group{}))
	n += (len(ix.slots) + len(ix.terms) + len(ix.groups)) * mapEntry
	n += ix.strBytes
	for i := range ix.docs {
		n += cap(ix.docs[i].terms) * int(unsafe.Sizeof(termFreq{}))
	}
	for i := range ix.postings {
		n += (cap(ix.postings[i].slots) + cap(ix.postings[i].tfs)) * 4
	}
	for i := range ix.grps {
		n += cap(ix.grps[i].members) * 4
	}
	return n
}
