package rank

import (
	"cmp"
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
	Group string    // session id; "" for a document of its own (a fact, a summary)
	Pos   int       // position within the group; not used by the ranking (see the package comment)
	Role  string    // user, assistant, tool, system, or "" for an entry that is not a turn
	Time  time.Time // not used by the ranking: time decay is the caller's
	Kind  string    // "turn", "fact", "summary"; not used by the ranking
}

// Index ranks the documents of one user for a query; see the package comment for the method.
// It is safe for concurrent use: searches share a read lock; Add and Remove take the write
// lock for a time proportional to the documents' distinct terms (the text is split into terms
// before the lock). Everything it needs is kept up to date by Add and Remove: there is
// nothing to rebuild.
type Index struct {
	cfg Config

	mu       sync.RWMutex
	slots    map[string]int32 // document id → slot
	docs     []doc            // by slot; a free slot is the zero doc
	lens     []int32          // by slot: the document's length, compact for the scoring loop
	grpOf    []int32          // by slot: the document's group number, -1 for none
	free     []int32
	terms    termTable        // term → term id
	postings []posting        // by term id
	freeTerm []int32          // ids of empty postings, for reuse
	groups   map[string]int32 // group id → group number
	grps     []group          // by group number
	freeGrp  []int32
	live     int // documents
	totalLen int // sum of the documents' lengths
	groupLen int // sum of the lengths of the documents in a group
	bytes    int // estimate of the variable-size memory held, see Bytes
}

// doc is what the index keeps of one document.
type doc struct {
	id     string
	group  int32   // group number, -1 for none
	length int32   // terms, repeats included
	weight float32 // multiplies its own score: AgentTurn for agent turns, else 1
	terms  []int32 // the ids of its distinct terms
}

// posting lists the documents containing a term, by slot: one entry per document, its slot and
// the term's frequency in it packed in 32 bits, 4 bytes where two int32 slices took 8 and a
// second slice header. Kept in slot order, an entry is found by binary search, so a document
// keeps only its terms' ids (4 bytes each) rather than its place in each posting too (8): a
// new document's slot is the highest and its entries are appended; a reused slot's are inserted
// and a removed document's deleted, moving the entries after it (a memmove of 4 bytes each).
type posting struct {
	term string
	ents []entry
}

// entry packs a document's slot (below maxSlots) and the term's frequency in it, saturated at
// maxTF.
type entry uint32

// maxTF is the highest term frequency an entry records: BM25 saturates long before (past 255
// occurrences in one document a term's weight hardly grows).
const maxTF = 255

// maxSlots bounds the slots of an index, which entries keep in 24 bits: sixteen million documents
// of one user, far beyond any memory cap.
const maxSlots = 1 << 24

func newEntry(slot, tf int32) entry { return entry(uint32(slot)<<8 | uint32(min(tf, maxTF))) }

// bySlot orders a posting's entries by slot (for binary search).
func bySlot(e entry, slot int32) int { return cmp.Compare(e.slot(), slot) }

func (e entry) slot() int32 { return int32(e >> 8) }
func (e entry) tf() int32   { return int32(e & maxTF) }

// group is a session: the number and total length of its documents.
type group struct {
	id     string
	n      int
	length int
}

// Approximate sizes, for Bytes: a map entry with its share of the buckets, and the
// slice headers and fields of the per-document and per-term records.
const (
	mapEntryBytes  = 40
	termEntryBytes = 8                             // a termTable slot (4) at a load between three eighths and three quarters
	docBytes       = int(unsafe.Sizeof(doc{})) + 8 // and lens, grpOf
	postingBytes   = int(unsafe.Sizeof(posting{}))
	groupBytes     = int(unsafe.Sizeof(group{}))
	pairBytes      = 9 // a posting entry (4, with a quarter of slack for growth) and a term id (4)
)

// NewIndex returns an empty index that ranks with cfg, zero fields taking their defaults.
// It panics if cfg is invalid (see [Config.Validate]): configs are validated at start-up.
func NewIndex(cfg Config) *Index {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	return &Index{
		cfg:    cfg.withDefaults(),
		slots:  make(map[string]int32),
		terms:  newTermTable(),
		groups: make(map[string]int32),
	}
}

// Add indexes docs, each replacing any document with the same id; a later document in docs
// replaces an earlier one with its id. A document whose text has no terms still counts in
// [Index.Len] and in the statistics, and never matches.
func (ix *Index) Add(docs ...Doc) {
	type prepared struct {
		length int
		tf     map[string]int32
	}
	prep := make([]prepared, len(docs))
	for i := range docs {
		terms := search.Terms(docs[i].Text)
		tf := make(map[string]int32, len(terms))
		for _, t := range terms {
			tf[t]++
		}
		prep[i] = prepared{len(terms), tf}
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for i := range docs {
		ix.add(&docs[i], prep[i].length, prep[i].tf)
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
		if slot >= maxSlots {
			panic("rank: more than 16,777,216 documents in one index")
		}
		ix.docs = append(ix.docs, doc{})
		ix.lens = append(ix.lens, 0)
		ix.grpOf = append(ix.grpOf, -1)
	}
	id := strings.Clone(d.ID)
	ix.slots[id] = slot
	nd := doc{id: id, group: -1, length: int32(length), weight: 1, terms: make([]int32, 0, len(tf))}
	if d.Role != "" && d.Role != "user" {
		nd.weight = float32(ix.cfg.AgentTurn)
	}
	for t, n := range tf {
		tid, ok := ix.terms.find(ix.postings, t)
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
			ix.terms.insert(ix.postings, tid)
			ix.bytes += len(t) + termEntryBytes + postingBytes
		}
		p := &ix.postings[tid]
		nd.terms = append(nd.terms, tid)
		if k := len(p.ents); k == 0 || p.ents[k-1].slot() < slot {
			p.ents = append(p.ents, newEntry(slot, n))
		} else {
			i, _ := slices.BinarySearchFunc(p.ents, slot, bySlot)
			p.ents = slices.Insert(p.ents, i, newEntry(slot, n))
		}
	}
	ix.bytes += len(id) + mapEntryBytes + docBytes + pairBytes*len(nd.terms)
	if d.Group != "" {
		g, ok := ix.groups[d.Group]
		if !ok {
			gid := strings.Clone(d.Group)
			if k := len(ix.freeGrp); k > 0 {
				g = ix.freeGrp[k-1]
				ix.freeGrp = ix.freeGrp[:k-1]
			} else {
				g = int32(len(ix.grps))
				ix.grps = append(ix.grps, group{})
			}
			ix.grps[g] = group{id: gid}
			ix.groups[gid] = g
			ix.bytes += len(gid) + mapEntryBytes + groupBytes
		}
		ix.grps[g].n++
		ix.grps[g].length += length
		ix.groupLen += length
		nd.group = g
	}
	ix.docs[slot] = nd
	ix.lens[slot] = nd.length
	ix.grpOf[slot] = nd.group
	ix.live++
	ix.totalLen += length
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
	for _, tid := range d.terms {
		p := &ix.postings[tid]
		if i, found := slices.BinarySearchFunc(p.ents, slot, bySlot); found {
			p.ents = slices.Delete(p.ents, i, i+1)
		}
		if len(p.ents) == 0 {
			ix.terms.remove(ix.postings, p.term)
			ix.bytes -= len(p.term) + termEntryBytes + postingBytes
			*p = posting{}
			ix.freeTerm = append(ix.freeTerm, tid)
		}
	}
	if g := d.group; g >= 0 {
		gr := &ix.grps[g]
		gr.n--
		gr.length -= int(d.length)
		ix.groupLen -= int(d.length)
		if gr.n == 0 {
			delete(ix.groups, gr.id)
			ix.bytes -= len(gr.id) + mapEntryBytes + groupBytes
			*gr = group{}
			ix.freeGrp = append(ix.freeGrp, g)
		}
	}
	ix.live--
	ix.totalLen -= int(d.length)
	ix.bytes -= len(d.id) + mapEntryBytes + docBytes + pairBytes*len(d.terms)
	delete(ix.slots, d.id)
	*d = doc{}
	ix.lens[slot], ix.grpOf[slot] = 0, -1
	ix.free = append(ix.free, slot)
}

// Len returns the number of documents in the index.
func (ix *Index) Len() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.live
}

// Bytes returns an estimate of the memory the index holds, for the retriever's memory cap:
// ids, terms and group ids, the per-document, per-term and per-group records with their map
// entries, and 13 bytes per (document, distinct term) pair: its posting entry, with an
// allowance for the slack of growing postings, and the document's own record of it.
func (ix *Index) Bytes() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return int(unsafe.Sizeof(*ix)) + ix.bytes
}

// numGroups returns the number of groups.
func (ix *Index) numGroups() int { return len(ix.groups) }
