package retrieve

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/integrity"
	"github.com/agentmem/agentmem/internal/metrics"
	"github.com/agentmem/agentmem/internal/rank"
	"github.com/agentmem/agentmem/pkg/memory"
)

// Stored views: a cold user's archive read from one value instead of every session's turns.
//
// A user's first request reads, per session of the user, the session's header, its chunks (which
// turns ingest applied) and its turns from the turns stream, then splits every turn into terms:
// most of a cold request's time. Once the view holds the archive, the retriever writes it to the
// view bucket (events.Topology.ViewBucket, key "<tenant>.<user>"), or to a file of its own
// directory (Config.ViewDir, viewfiles.go), in the background: per session
// the header's revision, last sequence and head chunk as the view read them, and the turns read
// (id, role, text, time, sequence, own metadata) with their text's terms as numbers into one
// table of the user's terms; encoded as viewcodec.go says (whose magic names the format: a
// value of another is not used), compressed with S2. The next cold load of the user (after a
// restart, an eviction or an idle drop) reads that value, then only the headers of the user's
// sessions (batched): a session whose header still has the stored revision, last sequence and
// head chunk takes its turns and terms from the value; any other is read from the stream as
// before.
//
// It is a cache, never a source of truth, and what it holds can only be used while the session
// it came from is unchanged:
//
//   - A session's header changes with every commit of ingest (its revision is its bucket's
//     sequence); a forget tombstones the header; a rebuild after an unclean stop resets it. Any
//     of these makes the stored part of the session unused. The rebuild also purges the bucket.
//   - A session taken from the value has no session state behind it in the view (its chunks were
//     not read): the first time it changes, the view drops what it holds of it and reads it
//     again from the start, as after a reset.
//   - A user's forget purges the user's value (package forget), and so does the retriever when
//     the forget's announcement reaches it (after any write of the user's view in flight), so
//     forgotten text does not stay in the bucket; a value that does not decode, or names another
//     tenant or user than its key, is reported (agentmem_kv_corrupt_total) and not used.
//   - A value larger than the bucket takes (the server's max payload) is not written: such a
//     user is read from the stream every time.
//
// Config.NoStoredViews turns both the reads and the writes off.

// storedView is the value of a user in the view bucket.
type storedView struct {
	Tenant, User string
	// Terms are the user's terms, which the turns' Terms number.
	Terms    []string
	Sessions []storedSession
	vocab    *rank.Vocab // Terms, for rank.Index.PrepareVocab (set by decodeView)
}

// storedSession is one session of a stored view: what the view read of it, up to the header it
// read.
type storedSession struct {
	Session string
	// Rev, LastSeq and Head are the header's revision, last sequence and head chunk when the
	// view read the session: the value serves while the header still has all three.
	Rev, LastSeq uint64
	Head         string
	Turns        []storedTurn
}

// storedTurn is an archived turn, as the view read it from the turns stream.
type storedTurn struct {
	ID, Role, Content string
	At                time.Time
	Seq               uint64
	Meta              []byte   // the turn's own metadata as JSON; nil for none
	Terms             []uint32 // the text's terms (search.Terms), numbers into storedView.Terms
}

// viewKey is a user's key in the view bucket.
func viewKey(k userKey) string { return k.tenant + "." + k.user }

// viewStore reads and writes stored views.
type viewStore struct {
	back viewBackend
	rep  *integrity.Reporter
	// writing bounds the writes in flight to one: a write that would wait is skipped (the
	// next cold load of the user writes it).
	writing chan struct{}
	// maxBytes is the largest value written (the server's max payload, less headers).
	maxBytes int
	log      zerolog.Logger
	m        *metrics.Metrics
	// forgetting are the users a forget announcement named whose value is being purged:
	// neither read nor written meanwhile.
	mu         sync.Mutex
	forgetting map[userKey]int
	// forgets counts the forget announcements seen: a view whose load began before one is not
	// written (it may hold what the forget removed, read before its tombstones).
	forgets atomic.Uint64
	// large are the users whose view was too large to store: the warmer does not load them
	// again (a cold load still tries, and a forget clears the mark).
	large map[userKey]bool
}

// forgotSomeone makes the views whose load began before now unstored, as a forget announcement
// does, for an announcement that was lost (whom it named is not known); files of stored views
// are all removed, after any write in flight (viewfiles.go).
func (vs *viewStore) forgotSomeone() {
	if vs == nil {
		return
	}
	vs.forgets.Add(1)
	vs.afterWrites(func(ctx context.Context) {
		if err := vs.back.purgeAll(ctx); err != nil {
			vs.log.Warn().Err(err).Msg("removing the stored views after a lost forget announcement")
		}
	})
}

// afterWrites runs f on a goroutine of its own once no write is in flight, holding the writing
// slot (so no write starts meanwhile), with 10 s to do it.
func (vs *viewStore) afterWrites(f func(ctx context.Context)) {
	go func() {
		vs.writing <- struct{}{}
		defer func() { <-vs.writing }()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		f(ctx)
	}()
}

// isLarge reports whether k's view was too large to store.
func (vs *viewStore) isLarge(k userKey) bool {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	return vs.large[k]
}

// markLarge records that k's view is too large to store, and counts it the first time: two
// loads of the user at once (a request's and the warmer's, which checked the mark before the
// other set it) find the same view too large.
func (vs *viewStore) markLarge(k userKey) {
	vs.mu.Lock()
	if vs.large == nil {
		vs.large = map[userKey]bool{}
	}
	known := vs.large[k]
	vs.large[k] = true
	vs.mu.Unlock()
	if !known {
		vs.count("too_large", 1)
	}
}

func newViewStore(back viewBackend, maxBytes int, log zerolog.Logger, m *metrics.Metrics) *viewStore {
	return &viewStore{back: back, writing: make(chan struct{}, 1), maxBytes: maxBytes, log: log, m: m, forgetting: map[userKey]int{}}
}

// count counts n sessions of a cold load, or n views, by outcome
// (agentmem_retrieve_stored_view_sessions_total).
func (vs *viewStore) count(outcome string, n int) {
	if vs != nil {
		vs.m.StoredView(outcome, n)
	}
}

// skips reports whether k's value is being purged.
func (vs *viewStore) skips(k userKey) bool {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	return vs.forgetting[k] > 0
}

// forget purges k's value, after any write in flight (a view loaded before a user's forget may
// be written after the forget's own purge, package forget). From the call until the purge is
// done, k's value is neither read nor written.
func (vs *viewStore) forget(k userKey) {
	if vs == nil {
		return
	}
	vs.mu.Lock()
	vs.forgetting[k]++
	delete(vs.large, k)
	vs.mu.Unlock()
	vs.forgets.Add(1)
	vs.afterWrites(func(ctx context.Context) {
		if err := vs.back.purge(ctx, k); err != nil {
			vs.log.Warn().Err(err).Str("tenant", k.tenant).Str("user", k.user).Msg("purging a forgotten user's stored view")
		}
		vs.mu.Lock()
		if vs.forgetting[k]--; vs.forgetting[k] <= 0 {
			delete(vs.forgetting, k)
		}
		vs.mu.Unlock()
	})
}

// read returns the stored view of k, or nil when there is none or it cannot be used.
func (vs *viewStore) read(ctx context.Context, k userKey) *storedView {
	if vs == nil || vs.skips(k) {
		return nil
	}
	data, err := vs.back.get(ctx, k)
	if err != nil {
		return nil // none, or unreadable now: the stream serves
	}
	v, err := decodeView(k, data)
	if errors.Is(err, errViewFormat) {
		vs.count("old_format", 1)
		return nil // written by another version: the load reads the stream and writes it anew
	}
	if err != nil {
		if vs.rep != nil {
			vs.rep.Report(integrity.Undecoded(vs.back.name(), viewKey(k), err))
		}
		return nil
	}
	return v
}

// write stores the view b builds, in the background, unless a write is in flight or the view is
// too large.
func (vs *viewStore) write(b *viewBuilder) {
	if vs == nil || vs.skips(b.key) || vs.tooLarge(b) {
		return
	}
	select {
	case vs.writing <- struct{}{}:
	default:
		return
	}
	go func() {
		defer func() { <-vs.writing }()
		vs.store(b)
	}()
}

// writeNow stores the view b builds once no other write is in flight, and returns when it is
// written (or given up: ctx ended, too large, failed).
func (vs *viewStore) writeNow(ctx context.Context, b *viewBuilder) {
	if vs == nil || vs.skips(b.key) || vs.tooLarge(b) {
		return
	}
	select {
	case vs.writing <- struct{}{}:
	case <-ctx.Done():
		return
	}
	defer func() { <-vs.writing }()
	vs.store(b)
}

// tooLarge reports (and counts) a view whose text alone would not compress below the limit.
func (vs *viewStore) tooLarge(b *viewBuilder) bool {
	if b.textBytes() > 2*vs.maxBytes {
		vs.markLarge(b.key)
		return true
	}
	return false
}

// store encodes and writes the view b builds; the caller holds the writing slot.
func (vs *viewStore) store(b *viewBuilder) {
	k := b.key
	if vs.skips(k) || vs.forgets.Load() != b.forgets {
		return // a forget came since the load began
	}
	v, err := b.build()
	var data []byte
	if err == nil {
		data, err = encodeView(v)
	}
	if err != nil {
		vs.log.Warn().Err(err).Str("tenant", k.tenant).Str("user", k.user).Msg("encoding a stored view")
		return
	}
	if len(data) > vs.maxBytes {
		vs.markLarge(k)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := vs.back.put(ctx, k, data); err != nil {
		if !errors.Is(err, context.Canceled) {
			vs.log.Debug().Err(err).Str("tenant", k.tenant).Str("user", k.user).Msg("storing a view")
		}
		return
	}
	vs.count("written", 1)
}

// viewBuilder gathers what a cold load read, cheaply (references to what it read), for build to
// make the stored view of in the background.
type viewBuilder struct {
	key userKey
	// forgets is viewStore.forgets when the load began.
	forgets uint64
	from    *storedView // the stored view the load used, if any
	kept    []storedSession
	read    []readSession
	mu      sync.Mutex
}

// readSession is a session a cold load read from the stream from its start.
type readSession struct {
	session      string
	rev, lastSeq uint64
	head         string
	entries      []memory.Entry
	terms        [][]string
}

func newViewBuilder(vs *viewStore, k userKey, from *storedView) *viewBuilder {
	return &viewBuilder{key: k, from: from, forgets: vs.forgets.Load()}
}

// keep records a session taken from the stored view.
func (b *viewBuilder) keep(s storedSession) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.kept = append(b.kept, s)
}

// addRead records a session read from the stream from its start: its header's revision, last
// sequence and head, and its turns with their prepared documents (whose terms are kept).
func (b *viewBuilder) addRead(sess string, rev, lastSeq uint64, head string, entries []memory.Entry, docs []rank.Prepared) {
	terms := make([][]string, len(docs))
	for i := range docs {
		terms[i] = docs[i].Terms()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.read = append(b.read, readSession{session: sess, rev: rev, lastSeq: lastSeq, head: head, entries: entries, terms: terms})
}

// textBytes is the text of the turns the load read.
func (b *viewBuilder) textBytes() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, s := range b.kept {
		for _, t := range s.Turns {
			n += len(t.Content)
		}
	}
	for _, r := range b.read {
		for _, e := range r.entries {
			n += len(e.Content)
		}
	}
	return n
}

// fresh reports whether the load read a session from the stream: the stored view is out of date.
func (b *viewBuilder) fresh() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.read) > 0
}

// build makes the stored view of what the load read.
func (b *viewBuilder) build() (*storedView, error) {
	v := &storedView{Tenant: b.key.tenant, User: b.key.user}
	ids := map[string]uint32{}
	number := func(term string) uint32 {
		id, ok := ids[term]
		if !ok {
			id = uint32(len(v.Terms))
			ids[term] = id
			v.Terms = append(v.Terms, term)
		}
		return id
	}
	for _, s := range b.kept {
		turns := make([]storedTurn, len(s.Turns))
		for i, t := range s.Turns {
			old := t.Terms
			t.Terms = make([]uint32, len(old))
			for j, id := range old {
				t.Terms[j] = number(b.from.Terms[id])
			}
			turns[i] = t
		}
		s.Turns = turns
		v.Sessions = append(v.Sessions, s)
	}
	for _, r := range b.read {
		s := storedSession{Session: r.session, Rev: r.rev, LastSeq: r.lastSeq, Head: r.head, Turns: make([]storedTurn, len(r.entries))}
		for i, e := range r.entries {
			t := storedTurn{ID: e.ID, Role: e.Role, Content: e.Content, At: e.Timestamp, Seq: e.Seq, Terms: make([]uint32, len(r.terms[i]))}
			if len(e.Metadata) > 0 {
				md, err := json.Marshal(e.Metadata)
				if err != nil {
					return nil, err
				}
				t.Meta = md
			}
			for j, term := range r.terms[i] {
				t.Terms[j] = number(term)
			}
			s.Turns[i] = t
		}
		v.Sessions = append(v.Sessions, s)
	}
	return v, nil
}

// storedRead is what a stored session gives a cold load: its turns as the stream would have.
func storedRead(s storedSession) ([]memory.Entry, error) {
	entries := make([]memory.Entry, len(s.Turns))
	for i, t := range s.Turns {
		var md map[string]any
		if len(t.Meta) > 0 {
			if err := json.Unmarshal(t.Meta, &md); err != nil {
				return nil, err
			}
		}
		entries[i] = memory.Entry{ID: t.ID, Type: memory.TypeForRole(t.Role), Role: t.Role, Content: t.Content,
			Timestamp: t.At, Seq: t.Seq, Metadata: md}
	}
	return entries, nil
}
