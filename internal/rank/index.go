package rank

import (
	"cmp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/agentmem/agentmem/internal/search"
	"github.com/agentmem/agentmem/internal/thesaurus"
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
	// Context is the text the turn answers: the previous turn of the session when another
	// speaker said it. Its last MaxContextTerms terms are a second, down-weighted field of the
	// turn (Config.Context), so that a reply is found by the words of its question.
	Context string
	// Speaker names who said the turn in a conversation of named speakers ("" when unknown):
	// its terms are a low-weight field of the turn (Config.Speaker), so the first-person
	// words of a turn count for its speaker.
	Speaker string
	// Addressee names the speaker the turn answers when it is not the turn's own speaker:
	// its name's terms in the turn (a reply that addresses or mentions that person) count at
	// Config.Mention, so a question about a person ranks the person's own turns first.
	Addressee string
}

// MaxContextTerms bounds the terms of a Doc's Context that are indexed: the end of the turn
// answered, where its question usually is.
const MaxContextTerms = 32

// Prefixes of the terms of a document's other fields, in the same postings as its own terms
// (search.Terms never yields a control character): the context, the speaker's name and the
// names of the person addressed.
const (
	contextPrefix = "\x01"
	speakerPrefix = "\x02"
	mentionPrefix = "\x03"
	relatedPrefix = "\x04"
	wordPrefix    = "\x05" // a Chinese word of the text (Config.ChineseWords)
)

// Index ranks the documents of one user for a query; see the package comment for the method.
// It is safe for concurrent use: searches share a read lock; Add, AddPrepared and Remove take
// the write lock for a time proportional to the documents' terms (the text is split into terms
// before the lock, by Prepare). Everything it needs is kept up to date by Add and Remove:
// there is nothing to rebuild.
type Index struct {
	cfg  Config
	thes *thesaurus.Table // the related words, when cfg.Related is on

	mu       sync.RWMutex
	slots    map[string]int32 // document id → slot
	docs     []doc            // by slot; a free slot is the zero doc
	lens     []int32          // by slot: the document's length, compact for the scoring loop
	grpOf    []int32          // by slot: the document's group number, -1 for none
	free     []int32
	terms    termTable        // term → term id
	words    termStore        // term id → term
	postings []posting        // by term id
	ents     []entry          // every posting's entries, each posting a window of it
	entWaste int              // entries of ents in no posting's window
	freeTerm []int32          // ids of empty postings, for reuse
	groups   map[string]int32 // group id → group number
	grps     []group          // by group number
	freeGrp  []int32
	live     int // documents
	totalLen int // sum of the documents' lengths
	groupLen int // sum of the lengths of the documents in a group
	bytes    int // estimate of the variable-size memory held, see Bytes
	// hasField[f]: a document was indexed with terms of field f, which a search looks up.
	hasField [numFields]bool
}

// doc is what the index keeps of one document. It keeps no list of its terms (4 bytes per
// distinct term and a slice header, about a fifth of what the index holds per turn): a document
// is removed by its text's terms (RemoveDocs), or by looking through every posting (Remove).
type doc struct {
	id     string
	group  int32   // group number, -1 for none
	length int32   // terms, repeats included
	weight float32 // multiplies its own score: AgentTurn for agent turns, else 1
	nterms int32   // distinct terms: how many posting entries it has
}

// posting lists the documents containing a term, by slot: one entry per document, its slot and
// the term's frequency in it packed in 32 bits. Kept in slot order, an entry is found by binary
// search: a new document's slot is the highest and its entries are appended; a reused slot's are
// inserted and a removed document's deleted, moving the entries after it (a memmove of 4 bytes
// each).
//
// The entries of all postings are in one array (Index.ents), each posting a window of it: n
// entries from off, room for cap. A posting that outgrows its window moves to the end of the
// array with twice the room; once more than half of the array is in no window, the postings
// are copied to a new one (compactEntries). So a posting is 12 bytes with no pointer, where a
// term string and a slice of its own took 40 and two pointers for the garbage collector to
// follow, and a cold load's postings, sized to their final length beforehand, are one
// allocation.
type posting struct {
	off, n, cap uint32
}

// maxEntries bounds the entries of an index, which windows address with 32-bit offsets.
const maxEntries = 1<<32 - 1

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
	postingBytes   = int(unsafe.Sizeof(posting{}) + unsafe.Sizeof(termRef{}))
	groupBytes     = int(unsafe.Sizeof(group{}))
	pairBytes      = 5 // a posting entry (4, with a quarter of slack for growth)
)

// NewIndex returns an empty index that ranks with cfg, zero fields taking their defaults.
// It panics if cfg is invalid (see [Config.Validate]): configs are validated at start-up.
func NewIndex(cfg Config) *Index {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	cfg = cfg.withDefaults()
	var thes *thesaurus.Table
	if cfg.Related > 0 {
		thes = thesaurus.Default()
	}
	return &Index{
		cfg:    cfg,
		thes:   thes,
		slots:  make(map[string]int32),
		terms:  newTermTable(),
		groups: make(map[string]int32),
	}
}

// Add indexes docs, each replacing any document with the same id; a later document in docs
// replaces an earlier one with its id. A document whose text has no terms still counts in
// [Index.Len] and in the statistics, and never matches.
func (ix *Index) Add(docs ...Doc) {
	prep := make([]Prepared, len(docs))
	for i := range docs {
		prep[i] = ix.Prepare(docs[i])
	}
	ix.AddPrepared(prep...)
}

// Prepared is a document split into terms, ready to be added to an index (AddPrepared).
// Splitting is most of the cost of adding a document, and needs no index: Prepare may run on
// any goroutine, e.g. where the document is read.
type Prepared struct {
	Doc   Doc
	terms []string // every term of the text, in text order, repeats included
	// vocab and ids, when set (PrepareVocab), number terms in vocab: AddPrepared then finds
	// each term of vocab in the index once per call, not once per occurrence.
	vocab *Vocab
	ids   []uint32
	// The terms of the other fields: of the end of the context, of the speaker's name, and
	// the text's terms that name the addressee (also in terms).
	context, speaker, mention []string
	// The terms of the text's Chinese words (wordTerms), when segmented says they were looked
	// for: an index with Config.ChineseWords on looks for them if Prepare did not.
	words     []string
	segmented bool
}

// Prepare splits a document into terms for AddPrepared.
func Prepare(d Doc) Prepared { return PrepareTerms(d, search.Terms(d.Text)) }

// PrepareTerms is Prepare for a document whose text's terms are known: terms must be
// search.Terms(d.Text) as Prepare would find them (a view stored with [Prepared.Terms] and read
// back, for instance), which saves splitting the text again.
func PrepareTerms(d Doc, terms []string) Prepared {
	p := Prepared{Doc: d, terms: terms}
	p.fields()
	return p
}

// Terms returns the terms of the document's text, in text order, repeats included: what
// PrepareTerms takes back. The slice is the prepared document's own; it must not be changed.
func (p *Prepared) Terms() []string { return p.textTerms() }

// textTerms returns the terms of the document's text, making them from its vocabulary's numbers
// the first time for a document prepared by PrepareVocab (which most such documents, indexed by
// their numbers alone, never need).
func (p *Prepared) textTerms() []string {
	if p.terms == nil && len(p.ids) > 0 {
		p.terms = make([]string, len(p.ids))
		for i, id := range p.ids {
			p.terms[i] = p.vocab.Terms[id]
		}
	}
	return p.terms
}

// numTerms is len(p.textTerms()), without making them.
func (p *Prepared) numTerms() int {
	if p.terms == nil {
		return len(p.ids)
	}
	return len(p.terms)
}

// fields finds the terms of the document's fields other than its text (its context, speaker
// and addressee), its text's terms being found.
func (p *Prepared) fields() {
	d := &p.Doc
	if d.Context != "" && asks(d.Context) {
		ct := search.Terms(tail(d.Context, contextBytes))
		p.context = ct[max(0, len(ct)-MaxContextTerms):]
	}
	if d.Speaker != "" {
		p.speaker = search.Terms(d.Speaker)
		slices.Sort(p.speaker)
		p.speaker = slices.Compact(p.speaker)
	}
	if d.Addressee != "" && d.Addressee != d.Speaker {
		names := nameTerms(d.Addressee)
		for _, t := range p.textTerms() {
			if slices.Contains(names, t) {
				p.mention = append(p.mention, t)
			}
		}
	}
}

// Vocab is a table of terms by which documents number the terms of their text (PrepareVocab):
// a stored view's, for instance, whose documents share most of their terms.
type Vocab struct {
	Terms []string
	// Base, when set, is a string of which every term of Terms is a substring, that lives as
	// long as the documents' texts anyway (a stored view's terms and texts are substrings of
	// one string): an index with no terms yet refers to the terms where they are in it instead
	// of copying them.
	Base string
}

// PrepareVocab is PrepareTerms for a document whose text's terms are given as numbers into v
// (each below len(v.Terms)). AddPrepared looks each term of v up in the index once per call,
// however many of the call's documents have it.
func (ix *Index) PrepareVocab(d Doc, v *Vocab, ids []uint32) Prepared {
	p := Prepared{Doc: d, vocab: v, ids: ids}
	p.fields()
	return ix.withWords(p)
}

// PrepareTerms is PrepareTerms for this index, as Index.Prepare is Prepare.
func (ix *Index) PrepareTerms(d Doc, terms []string) Prepared {
	return ix.withWords(PrepareTerms(d, terms))
}

// Prepare splits a document into terms for AddPrepared to this index: as [Prepare] does, and
// with the text's Chinese words when the index's Config has ChineseWords on (AddPrepared would
// otherwise look for them under the index's lock).
func (ix *Index) Prepare(d Doc) Prepared { return ix.withWords(Prepare(d)) }

// withWords adds the text's Chinese words to p when the index's Config has ChineseWords on.
func (ix *Index) withWords(p Prepared) Prepared {
	if ix.cfg.ChineseWords > 0 {
		p.words, p.segmented = wordTerms(p.Doc.Text), true
	}
	return p
}

// minWordChars is the fewest characters of a Chinese word indexed as a term of its own: a word
// of two is one of the text's bigrams already (as a term of its own too it measured worse,
// docs/retrieval.md).
const minWordChars = 3

// wordTerms returns the terms of the Chinese words of text (search.Words) of minWordChars or
// more characters, in text order, repeats included: each word behind wordPrefix, all of them
// in one allocation.
func wordTerms(text string) []string {
	words := search.Words(text)
	size := 0
	words = slices.DeleteFunc(words, func(w string) bool {
		if utf8.RuneCountInString(w) < minWordChars {
			return true
		}
		size += len(wordPrefix) + len(w)
		return false
	})
	if len(words) == 0 {
		return nil
	}
	var b strings.Builder
	b.Grow(size)
	for _, w := range words {
		b.WriteString(wordPrefix)
		b.WriteString(w)
	}
	all := b.String()
	for i, w := range words {
		n := len(wordPrefix) + len(w)
		words[i], all = all[:n], all[n:]
	}
	return words
}

// asks reports whether a text ends by asking something: a question mark (ASCII or full-width)
// in its last sentences, the part of it that a reply answers. (Not strings.ContainsAny: with a
// character outside ASCII in its set it looks each rune of the text up in the set: 4 % of
// memoryd's CPU while it loaded cold users.)
func asks(text string) bool {
	t := tail(text, questionBytes)
	return strings.IndexByte(t, '?') >= 0 || strings.Contains(t, "？")
}

const (
	questionBytes = 240 // how far from its end a question in a context is looked for
	contextBytes  = 480 // the end of a context split into terms: more than MaxContextTerms
)

// tail returns the last n bytes of s, or a little fewer so as to start at a character.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := len(s) - n
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return s[i:]
}

// nameTerms returns the terms of a name that identify it in a text: its words, and of a Han
// name its character pairs (a single character is a part of too many other words).
func nameTerms(name string) []string {
	ts := search.Terms(name)
	if len(ts) > 1 {
		ts = slices.DeleteFunc(ts, func(t string) bool {
			r := []rune(t)
			return len(r) == 1 && r[0] >= 0x2E80
		})
	}
	return ts
}

// fieldTerms returns the terms a prepared document is indexed with under the index's config,
// its length (of its own text), and the fields it has terms in: its own terms, but those naming
// the addressee moved to their field when Mention is on, then the context's and the speaker's
// when those are on, then related, its related words (see relatedWords).
func (ix *Index) fieldTerms(p *Prepared, related []string) (terms []string, length int, used [numFields]bool) {
	cfg := &ix.cfg
	if cfg.ChineseWords > 0 && !p.segmented {
		p.words, p.segmented = wordTerms(p.Doc.Text), true
	}
	own := p.textTerms()
	if ix.plain(p, related) {
		return own, len(own), used
	}
	words, mention, context := ix.fieldsOf(p)
	out := make([]string, 0, len(own)+len(p.words)+len(p.context)+len(p.speaker)+len(related))
	for _, t := range own {
		if mention && slices.Contains(p.mention, t) {
			out = append(out, mentionPrefix+t)
			used[fieldMention] = true
		} else {
			out = append(out, t)
		}
	}
	if context {
		for _, t := range p.context {
			out = append(out, contextPrefix+t)
			used[fieldContext] = true
		}
	}
	if cfg.Speaker > 0 {
		for _, t := range p.speaker {
			out = append(out, speakerPrefix+t)
			used[fieldSpeaker] = true
		}
	}
	for _, t := range related {
		out = append(out, relatedPrefix+t)
		used[fieldRelated] = true
	}
	if words {
		out = append(out, p.words...)
	}
	return out, len(own), used
}

// plain reports whether a prepared document is indexed by its text's terms alone under the
// index's config (no field of it has terms to add, and its Chinese words were looked for when
// they count).
func (ix *Index) plain(p *Prepared, related []string) bool {
	cfg := &ix.cfg
	if cfg.ChineseWords > 0 && !p.segmented {
		return false
	}
	words, mention, context := ix.fieldsOf(p)
	return !words && !mention && !context && (cfg.Speaker == 0 || len(p.speaker) == 0) && len(related) == 0
}

// fieldsOf reports which fields besides its own terms a prepared document is indexed with under the
// index's config: its Chinese words, the terms naming its addressee (moved to their field), its
// context's terms.
func (ix *Index) fieldsOf(p *Prepared) (words, mention, context bool) {
	cfg := &ix.cfg
	words = cfg.ChineseWords > 0 && len(p.words) > 0
	mention = cfg.Mention < 1 && len(p.mention) > 0
	context = cfg.Context > 0 && len(p.context) > 0 && (cfg.ContextUpTo < 0 || p.numTerms() <= cfg.ContextUpTo)
	return words, mention, context
}

// relatedWords returns the related words of each of docs (nil when Related is off): the WordNet
// synonyms and hypernyms of the words of a document that is not an agent's turn (a user's turn,
// a named speaker's, an entry), which an agent's turn, counting for half, does not need; they
// are found before the index is locked, as its terms are.
func (ix *Index) relatedWords(docs []Prepared) [][]string {
	if ix.thes == nil {
		return nil
	}
	out := make([][]string, len(docs))
	for i := range docs {
		if d := &docs[i].Doc; d.Role == "" || d.Role == "user" || d.Speaker != "" {
			out[i] = ix.thes.Expand(nil, docs[i].textTerms(), relatedDepth)
		}
	}
	return out
}

// at returns rel[i], or nil when rel is nil.
func at(rel [][]string, i int) []string {
	if rel == nil {
		return nil
	}
	return rel[i]
}

// AddPrepared indexes prepared documents as Add indexes documents.
//
// Documents new to the index (no id already indexed, none twice) are added in two passes: the
// first finds every term's id once per occurrence and counts the occurrences by id, the second
// appends each document's entries to postings grown once, to their final size, beforehand. A
// cold user's turns are added this way: no map per document to count its terms, and no series
// of doublings per posting (both were most of what indexing allocated).
func (ix *Index) AddPrepared(docs ...Prepared) {
	related := ix.relatedWords(docs)
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if !ix.allNew(docs) {
		for i := range docs {
			ix.addCounted(&docs[i], at(related, i))
		}
		ix.compactEntries()
		return
	}
	sc := addScratchPool.Get().(*addScratch)
	defer addScratchPool.Put(sc)
	sc.tids, sc.tfs, sc.ends = sc.tids[:0], sc.tfs[:0], sc.ends[:0]
	lengths := make([]int, len(docs))
	count := func(tid int32) {
		if int(tid) >= len(sc.count) {
			sc.count = slices.Grow(sc.count, int(tid)+1-len(sc.count))[:tid+1]
			sc.adds = slices.Grow(sc.adds, int(tid)+1-len(sc.adds))[:tid+1]
		}
		if sc.count[tid] == 0 {
			sc.tids = append(sc.tids, tid)
		}
		sc.count[tid]++
	}
	defer sc.forgetVocab()
	ix.adoptVocab(docs)
	for i := range docs {
		touched := len(sc.tids)
		if p := &docs[i]; p.vocab != nil && ix.plain(p, at(related, i)) {
			// Each term of the vocabulary is looked up once per call (no document is removed
			// meanwhile, so a term's id stays its own).
			if sc.vocab != p.vocab {
				ix.reserveTerms(len(p.vocab.Terms))
			}
			sc.useVocab(p.vocab)
			for _, v := range p.ids {
				tid := sc.vtid[v]
				if tid < 0 {
					tid = ix.termID(p.vocab.Terms[v])
					sc.vtid[v] = tid
					sc.vset = append(sc.vset, v)
				}
				count(tid)
			}
			lengths[i] = len(p.ids)
		} else {
			terms, length, used := ix.fieldTerms(p, at(related, i))
			lengths[i] = length
			ix.markFields(used)
			for _, t := range terms {
				count(ix.termID(t))
			}
		}
		for _, tid := range sc.tids[touched:] {
			sc.tfs = append(sc.tfs, sc.count[tid])
			sc.count[tid] = 0
			if sc.adds[tid] == 0 {
				sc.grown = append(sc.grown, tid)
			}
			sc.adds[tid]++
		}
		sc.ends = append(sc.ends, len(sc.tids))
	}
	// Room for the entries this call adds is made before any is added: the postings new in
	// this call get windows of their final size, one after another at the end of ents (a cold
	// load adds thousands of terms, most in one or two documents: one allocation each was most
	// of what indexing allocated); then a posting whose window is too small moves.
	fresh := 0
	for _, tid := range sc.grown {
		if ix.postings[tid].cap == 0 {
			fresh += int(sc.adds[tid])
		}
	}
	off := ix.extend(fresh)
	for _, tid := range sc.grown {
		if p := &ix.postings[tid]; p.cap == 0 {
			p.off, p.cap = uint32(off), uint32(sc.adds[tid])
			off += int(sc.adds[tid])
			sc.adds[tid] = 0
		}
	}
	for _, tid := range sc.grown {
		if sc.adds[tid] > 0 {
			ix.room(tid, int(sc.adds[tid]))
			sc.adds[tid] = 0
		}
	}
	sc.grown = sc.grown[:0]
	from := 0
	for i := range docs {
		to := sc.ends[i]
		ix.add(&docs[i].Doc, lengths[i], sc.tids[from:to], sc.tfs[from:to])
		from = to
	}
	ix.compactEntries()
}

// adoptVocab makes the string of the first vocabulary of docs with one (Vocab.Base) the one
// the index refers to its terms in, when it has no terms yet: a cold load's.
func (ix *Index) adoptVocab(docs []Prepared) {
	if ix.terms.len() > 0 {
		return
	}
	for i := range docs {
		if v := docs[i].vocab; v != nil && v.Base != "" {
			ix.words.adopt(v.Base)
			return
		}
	}
}

// addScratch is AddPrepared's working memory, reused across calls and indexes.
type addScratch struct {
	count, adds []int32 // by term id: occurrences in the document at hand; entries to add
	tids, tfs   []int32 // each document's distinct term ids and frequencies, one after another
	ends        []int   // where each document's ids end in tids
	grown       []int32 // the term ids with entries to add
	// vocab is the vocabulary of the call's documents (PrepareVocab), vtid the index's id of
	// each of its terms looked up so far (-1: not yet), vset those looked up.
	vocab *Vocab
	vtid  []int32
	vset  []uint32
}

// useVocab makes v the vocabulary whose terms' ids vtid holds.
func (sc *addScratch) useVocab(v *Vocab) {
	if sc.vocab == v {
		return
	}
	sc.forgetVocab()
	sc.vocab = v
	if len(sc.vtid) < len(v.Terms) {
		n := len(sc.vtid)
		sc.vtid = slices.Grow(sc.vtid, len(v.Terms)-n)[:len(v.Terms)]
		for i := n; i < len(sc.vtid); i++ {
			sc.vtid[i] = -1
		}
	}
}

// forgetVocab clears what vtid holds (at the end of a call: ids are only valid under its lock).
func (sc *addScratch) forgetVocab() {
	for _, v := range sc.vset {
		sc.vtid[v] = -1
	}
	sc.vset, sc.vocab = sc.vset[:0], nil
}

var addScratchPool = sync.Pool{New: func() any { return new(addScratch) }}

// allNew reports whether no document of docs is in the index and none is there twice.
func (ix *Index) allNew(docs []Prepared) bool {
	var seen map[string]struct{} // for many documents: comparing every pair grows as their square
	if len(docs) > 16 {
		seen = make(map[string]struct{}, len(docs))
	}
	for i := range docs {
		id := docs[i].Doc.ID
		if _, ok := ix.slots[id]; ok {
			return false
		}
		if seen != nil {
			if _, dup := seen[id]; dup {
				return false
			}
			seen[id] = struct{}{}
			continue
		}
		for j := range i {
			if docs[j].Doc.ID == id {
				return false
			}
		}
	}
	return true
}

// addCounted adds one document, replacing any with its id: its terms counted in a map, then
// their ids found (after the replaced document is gone, which may free some).
func (ix *Index) addCounted(p *Prepared, related []string) {
	if slot, ok := ix.slots[p.Doc.ID]; ok {
		ix.remove([]int32{slot})
	}
	terms, length, used := ix.fieldTerms(p, related)
	ix.markFields(used)
	tf := make(map[string]int32, len(terms))
	for _, t := range terms {
		tf[t]++
	}
	tids, tfs := make([]int32, 0, len(tf)), make([]int32, 0, len(tf))
	for t, n := range tf {
		tids, tfs = append(tids, ix.termID(t)), append(tfs, n)
	}
	ix.add(&p.Doc, length, tids, tfs)
}

// markFields records the fields a document has terms in, which searches then look up.
func (ix *Index) markFields(used [numFields]bool) {
	for f, u := range used {
		ix.hasField[f] = ix.hasField[f] || u
	}
}

// termID returns the id of term, adding it (with an empty posting) when it is new. The index
// keeps its own copy of a new term (terms may be substrings of a document's text, which the
// index must not keep alive) unless it lies in the kept string of a vocabulary (Vocab.Base).
func (ix *Index) termID(t string) int32 {
	tid, ok, slot := ix.terms.lookup(&ix.words, t)
	if ok {
		return tid
	}
	if k := len(ix.freeTerm); k > 0 {
		tid = ix.freeTerm[k-1]
		ix.freeTerm = ix.freeTerm[:k-1]
	} else {
		tid = int32(len(ix.postings))
		ix.postings = append(ix.postings, posting{})
	}
	ix.words.set(tid, t)
	if !ix.terms.insertAt(tid, slot) { // the table must grow first
		ix.terms.insert(&ix.words, tid)
	}
	ix.bytes += len(t) + termEntryBytes + postingBytes
	return tid
}

// reserveTerms makes room for the n terms of a vocabulary (PrepareVocab) about to be added: the
// term table grows once; an index without terms (a cold load) also gets its postings' room.
func (ix *Index) reserveTerms(n int) {
	ix.terms.reserve(&ix.words, n)
	if len(ix.postings) == 0 {
		ix.postings = slices.Grow(ix.postings, n)
		ix.words.refs = slices.Grow(ix.words.refs, n)
	}
}

// entsOf returns the entries of posting p.
func (ix *Index) entsOf(p *posting) []entry { return ix.ents[p.off : p.off+p.n : p.off+p.n] }

// extend adds room for n entries at the end of ents, in no window yet, and returns where it
// begins.
func (ix *Index) extend(n int) int {
	off := len(ix.ents)
	if off+n > maxEntries {
		panic("rank: more than 4,294,967,295 posting entries in one index")
	}
	ix.ents = slices.Grow(ix.ents, n)[:off+n]
	return off
}

// room makes posting tid's window hold k more entries: one too small moves to the end of ents,
// with room for twice its entries or for the k, whichever is more.
func (ix *Index) room(tid int32, k int) {
	p := &ix.postings[tid]
	if int(p.n)+k <= int(p.cap) {
		return
	}
	c := max(int(p.n)+k, 2*int(p.cap))
	off := ix.extend(c)
	copy(ix.ents[off:], ix.ents[p.off:p.off+p.n])
	ix.entWaste += int(p.cap)
	p.off, p.cap = uint32(off), uint32(c)
}

// compactEntries copies the postings' windows to a new array when more than half of ents is in
// none (moved and freed postings'), so that ents stays within twice what the windows hold.
func (ix *Index) compactEntries() {
	if ix.entWaste > 1024 && 2*ix.entWaste > len(ix.ents) {
		ix.copyEntries(false)
	}
}

// copyEntries copies every posting's window to a new array of their total size, one after
// another: each window with its room, or, when trim is set, with its entries alone.
func (ix *Index) copyEntries(trim bool) {
	size := 0
	for i := range ix.postings {
		if p := &ix.postings[i]; trim {
			size += int(p.n)
		} else {
			size += int(p.cap)
		}
	}
	ents := make([]entry, 0, size)
	for i := range ix.postings {
		p := &ix.postings[i]
		if trim {
			p.cap = p.n
		}
		off := len(ents)
		ents = append(ents, ix.ents[p.off:p.off+p.cap]...)
		p.off = uint32(off)
	}
	ix.ents, ix.entWaste = ents, 0
}

// add adds a document that is not in the index, of length terms, whose distinct terms have
// the ids tids (each with a posting) and frequencies tfs.
func (ix *Index) add(d *Doc, length int, tids, tfs []int32) {
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
	id := ix.own(d.ID)
	ix.slots[id] = slot
	nd := doc{id: id, group: -1, length: int32(length), weight: 1, nterms: int32(len(tids))}
	if d.Role != "" && d.Role != "user" && d.Speaker == "" {
		nd.weight = float32(ix.cfg.AgentTurn)
	}
	for ti, tid := range tids {
		ix.room(tid, 1) // made beforehand by AddPrepared's bulk path
		p := &ix.postings[tid]
		w, e := ix.ents[p.off:p.off+p.n+1], newEntry(slot, tfs[ti])
		if k := p.n; k == 0 || w[k-1].slot() < slot {
			w[k] = e
		} else {
			i, _ := slices.BinarySearchFunc(w[:k], slot, bySlot)
			copy(w[i+1:], w[i:k])
			w[i] = e
		}
		p.n++
	}
	ix.bytes += len(id) + mapEntryBytes + docBytes + pairBytes*len(tids)
	if d.Group != "" {
		g, ok := ix.groups[d.Group]
		if !ok {
			gid := ix.own(d.Group)
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

// own returns s, or a copy of it when it does not lie in the string the index keeps (a stored
// view's, Vocab.Base, whose turns' ids and session ids are substrings of it): the index must
// not keep a caller's larger string alive by a substring.
func (ix *Index) own(s string) string {
	if ix.words.isKept(s) {
		return s
	}
	return strings.Clone(s)
}

// Remove deletes the documents ids; unknown ids are ignored. It looks through every posting for
// their entries (once for all of ids): when the texts the documents were added with are at
// hand, RemoveDocs is cheaper on a large index (BenchmarkAddRemove).
func (ix *Index) Remove(ids ...string) {
	var slots []int32
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for _, id := range ids {
		if slot, ok := ix.slots[id]; ok {
			slots = append(slots, slot)
		}
	}
	ix.remove(slots)
}

// RemoveDocs deletes documents given as they were added (ID, Text, Role, and Context, Speaker
// and Addressee): their entries are found through their fields' terms. A document whose entries the
// fields do not all name (it was added with other ones) is then removed as Remove does, so it is
// removed whole either way; unknown ids are ignored.
func (ix *Index) RemoveDocs(docs ...Doc) {
	terms := make([][]string, len(docs))
	for i := range docs {
		p := ix.Prepare(docs[i])
		terms[i], _, _ = ix.fieldTerms(&p, at(ix.relatedWords([]Prepared{p}), 0))
		terms[i] = slices.Clone(terms[i])
		slices.Sort(terms[i])
		terms[i] = slices.Compact(terms[i])
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	var rest []int32
	for i := range docs {
		slot, ok := ix.slots[docs[i].ID]
		if !ok {
			continue
		}
		found := int32(0)
		for _, t := range terms[i] {
			if tid, ok := ix.terms.find(&ix.words, t); ok && ix.removeEntry(tid, slot) {
				found++
			}
		}
		if found == ix.docs[slot].nterms {
			ix.removeRecord(slot)
		} else {
			rest = append(rest, slot)
		}
	}
	ix.remove(rest)
	ix.compactEntries()
}

// removeEntry deletes slot's entry from posting tid, freeing the term when it was the last, and
// reports whether there was one.
func (ix *Index) removeEntry(tid int32, slot int32) bool {
	p := &ix.postings[tid]
	w := ix.entsOf(p)
	i, found := slices.BinarySearchFunc(w, slot, bySlot)
	if !found {
		return false
	}
	copy(w[i:], w[i+1:])
	p.n--
	ix.bytes -= pairBytes
	if p.n == 0 {
		ix.freePosting(tid)
	}
	return true
}

// freePosting returns the empty posting tid's term id for reuse, its window to the waste.
func (ix *Index) freePosting(tid int32) {
	t := ix.words.term(tid)
	ix.terms.remove(&ix.words, t)
	ix.bytes -= len(t) + termEntryBytes + postingBytes
	ix.entWaste += int(ix.postings[tid].cap)
	ix.postings[tid] = posting{}
	ix.words.free(tid)
	ix.freeTerm = append(ix.freeTerm, tid)
}

// remove deletes the documents in slots: their entries, found in one pass over the postings,
// then their records.
func (ix *Index) remove(slots []int32) {
	if len(slots) == 0 {
		return
	}
	slices.Sort(slots)
	slots = slices.Compact(slots)
	for tid := range ix.postings {
		p := &ix.postings[tid]
		w := ix.entsOf(p)
		n := len(w)
		if n == 0 || w[0].slot() > slots[len(slots)-1] || w[n-1].slot() < slots[0] {
			continue // a free term, or no slot of slots within its range
		}
		if len(slots) == 1 {
			ix.removeEntry(int32(tid), slots[0])
			continue
		}
		w = slices.DeleteFunc(w, func(e entry) bool {
			_, found := slices.BinarySearch(slots, e.slot())
			return found
		})
		p.n = uint32(len(w))
		ix.bytes -= pairBytes * (n - len(w))
		if len(w) == 0 {
			ix.freePosting(int32(tid))
		}
	}
	for _, slot := range slots {
		ix.removeRecord(slot)
	}
	ix.compactEntries()
}

// removeRecord deletes the record of the document in slot, whose entries are gone.
func (ix *Index) removeRecord(slot int32) {
	d := &ix.docs[slot]
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
	ix.bytes -= len(d.id) + mapEntryBytes + docBytes
	delete(ix.slots, d.id)
	*d = doc{}
	ix.lens[slot], ix.grpOf[slot] = 0, -1
	ix.free = append(ix.free, slot)
}

// Compact copies the postings' entries, and the terms' bytes the index keeps a copy of, to
// arrays of their exact size, dropping the room that postings grown one call at a time keep
// for more (up to twice their entries, and as much again in windows moved out of). It is for
// an index that was just built and will mostly be searched: a cold load that added a session
// at a time (in a synthetic set of 500 turns in 47 sessions, the array of entries held 2.4
// times the entries before, exactly them after). The next document added to a posting moves
// it to the end, with room to grow.
func (ix *Index) Compact() {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.words.compact()
	live := 0
	for i := range ix.postings {
		live += int(ix.postings[i].n)
	}
	if live != len(ix.ents) { // else the windows are full and nothing is wasted: a cold load in one call
		ix.copyEntries(true)
	}
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
