package retrieve

import (
	"cmp"
	"container/list"
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"

	"github.com/agentmem/agentmem/internal/archive"
	"github.com/agentmem/agentmem/internal/graph"
	"github.com/agentmem/agentmem/internal/integrity"
	"github.com/agentmem/agentmem/internal/longterm"
	"github.com/agentmem/agentmem/internal/rank"
	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/internal/vectors"
	"github.com/agentmem/agentmem/pkg/events"
	"github.com/agentmem/agentmem/pkg/memory"
)

// userKey identifies a user.
type userKey struct{ tenant, user string }

// userView is one user's long-term memory (facts and summaries) and archive (every turn the user
// published that ingest applied), each with its keyword index. Watchers of the long-term and
// session buckets mark it dirty; the next request refreshes only what changed.
type userView struct {
	mu  sync.Mutex
	key userKey

	longLoaded bool
	longDirty  bool
	facts      map[string]longterm.Fact
	summaries  []memory.Entry
	long       map[string]memory.Entry
	longIdx    *rank.Index
	longVecs   vectorSet
	// graph is the user's graph of entities and relations (package graph), read with the facts.
	graph *graph.View

	sessions map[string]*archiveSession
	archive  map[string]memory.Entry
	archIdx  *rank.Index
	archVecs vectorSet
	// vecs are the user's stored vectors of the retriever's model (package embedder), loaded
	// with the view and followed as they are written.
	vecs  *storedVectors
	bytes atomic.Int64 // approximate memory held, read by the cache without the view's lock
	// The parts of bytes, and the entries held (footprint.go).
	entries, entryBytes, indexBytes, vecBytes atomic.Int64
	used                                      atomic.Int64 // when a request last got it (unix ns), for Config.ViewIdle
	// meta holds one metadata map per session and role, shared (read-only) by the archived
	// turns that have no metadata of their own: most turns, which would otherwise each hold a
	// map of two keys.
	meta map[[2]string]map[string]any
	// archTried is set by the first reading of the archive, which alone uses and writes the
	// user's stored view (snapshot.go).
	archTried bool
	// warming: the view is the warmer's (warm.go), which waits for its stored view's write.
	warming bool
}

// turnMeta is the metadata of an archived turn: its own with its role and session added, or
// the shared map of its session and role.
func (u *userView) turnMeta(md map[string]any, role, sess string) map[string]any {
	if len(md) > 0 {
		return withSession(withRole(md, role), sess)
	}
	k := [2]string{sess, role}
	shared, ok := u.meta[k]
	if !ok {
		if u.meta == nil {
			u.meta = map[[2]string]map[string]any{}
		}
		shared = withSession(withRole(nil, role), sess)
		u.meta[k] = shared
	}
	return shared
}

// archiveSession is what the archive has read of one session.
type archiveSession struct {
	state   *session.State
	scanned uint64
	dirty   bool
	last    lastTurn // the last turn applied, the context of the next one
	// stored: the turns came from a stored view (snapshot.go), and state was not read; the
	// session is read again from its start when it changes.
	stored bool
}

func newUserView(k userKey, rc rank.Config) *userView {
	return &userView{
		key: k, long: map[string]memory.Entry{}, longIdx: rank.NewIndex(rc),
		sessions: map[string]*archiveSession{}, archive: map[string]memory.Entry{}, archIdx: rank.NewIndex(rc),
		vecs: newStoredVectors(),
	}
}

// refreshLong reloads facts, summaries and the session list when they changed.
func (u *userView) refreshLong(ctx context.Context, store *longterm.Store) error {
	if u.longLoaded && !u.longDirty {
		return nil
	}
	u.longDirty = false
	recs, err := store.User(ctx, u.key.tenant, u.key.user)
	if err != nil {
		u.longDirty = true
		return err
	}
	covered := map[string]bool{}
	for _, s := range recs.Summaries {
		for _, id := range s.Replaces {
			covered[id] = true
		}
	}
	long := map[string]memory.Entry{}
	for _, f := range recs.Facts {
		md := map[string]any{"category": f.Category, "confidence": f.Confidence, "extractor": f.Extractor}
		if src, ok := f.Metadata["source_text"].(string); ok {
			md["source_text"] = src
		}
		if f.Key != "" {
			md["key"] = f.Key
		}
		if f.ValidTo != nil {
			md["valid_to"] = f.ValidTo.UTC()
		}
		if f.SupersededBy != "" {
			md["superseded_by"] = f.SupersededBy
		}
		long[f.ID] = memory.Entry{ID: f.ID, Type: memory.Fact, Content: f.Content, Timestamp: f.ValidFrom.UTC(),
			Tokens: f.Tokens, Provenance: f.Provenance, Metadata: md}
	}
	u.graph = graph.Build(recs)
	u.facts = make(map[string]longterm.Fact, len(recs.Facts))
	for _, f := range recs.Facts {
		u.facts[f.ID] = f
	}
	u.summaries = u.summaries[:0]
	for _, s := range recs.Summaries {
		if covered[s.ID] {
			continue
		}
		md := map[string]any{"summarizer": s.Summarizer, "session": s.Session}
		e := memory.Entry{ID: s.ID, Type: memory.Summary, Content: s.Content, Timestamp: s.Timestamp.UTC(),
			Tokens: s.Tokens, Provenance: s.Provenance, Metadata: md}
		long[s.ID] = e
		u.summaries = append(u.summaries, e)
	}
	// The index is told the texts it was given (see view.refresh).
	var gone, added []rank.Doc
	for id, old := range u.long {
		if _, ok := long[id]; !ok {
			gone = append(gone, rank.Doc{ID: id, Text: searchText(old)})
			u.longVecs.remove(id)
		}
	}
	for id, e := range long {
		if old, ok := u.long[id]; !ok || old.Content != e.Content {
			if ok {
				gone = append(gone, rank.Doc{ID: id, Text: searchText(old)})
			}
			added = append(added, rank.Doc{ID: id, Text: searchText(e), Time: e.Timestamp, Kind: string(e.Type)})
		}
	}
	u.longIdx.RemoveDocs(gone...)
	u.longIdx.Add(added...)
	u.addEntries(int64(len(long)-len(u.long)), longBytes(long)-longBytes(u.long))
	u.long = long
	u.noteIndexes()
	for _, r := range recs.Sessions {
		if _, ok := u.sessions[r.Session]; !ok {
			u.sessions[r.Session] = &archiveSession{
				// Only which turns were applied: the text comes from the archive.
				state: session.NewDecisions(session.Key{Tenant: u.key.tenant, Session: r.Session}), dirty: true,
			}
		}
	}
	u.longLoaded = true
	return nil
}

// visibleAt reports whether a long-term entry is visible at t: summaries always (their time is
// checked by the caller), facts only while they were valid.
func (u *userView) visibleAt(id string, t time.Time) bool {
	if f, ok := u.facts[id]; ok {
		return f.LiveAt(t)
	}
	return true
}

// refreshArchive reads the turns of every session that changed since the last request. The
// first time, a session unchanged since the user's stored view was written is taken from it
// (prefetched returns the view, read while the long-term memory was; nil: none), and the view
// read is then stored in views (nil: stored views are off) for the next cold load (snapshot.go).
func (u *userView) refreshArchive(ctx context.Context, store *session.Store, reader *archive.Reader, views *viewStore, prefetched func() *storedView) error {
	var dirty []*archiveSession
	for _, as := range u.sessions {
		if as.dirty {
			dirty = append(dirty, as)
		}
	}
	var stored *storedView
	var build *viewBuilder
	storedOf := map[string]storedSession{}
	if views != nil && !u.archTried && len(dirty) > 0 {
		u.archTried = true
		if prefetched != nil {
			stored = prefetched()
		}
		build = newViewBuilder(views, u.key, stored)
		if stored != nil {
			turns := 0
			for _, ss := range stored.Sessions {
				storedOf[ss.Session] = ss
				turns += len(ss.Turns)
			}
			if len(u.archive) == 0 {
				// Sized once for the turns the view holds, rather than grown a doubling at a
				// time (each growth dropping the table before: half a megabyte of garbage per
				// cold user of 500 turns).
				u.archive = make(map[string]memory.Entry, turns)
			}
		}
	}
	// The headers of the sessions the stored view may serve, read in one batched request
	// rather than one each (nil: read one by one, as when the batch fails).
	var headers map[session.Key]session.Stored
	if len(storedOf) > 0 {
		var keys []session.Key
		for _, as := range dirty {
			if _, ok := storedOf[as.state.Key.Session]; ok && as.scanned == 0 {
				keys = append(keys, as.state.Key)
			}
		}
		if len(keys) > 1 {
			headers, _ = store.Headers(ctx, keys) // on failure, fromStored reads each
		}
	}
	// Sessions are read concurrently (each its own state and stream subject), their turns split
	// into terms where they are read (most of the cost of indexing), and each is added to the
	// view as soon as it is read, one at a time: indexing one session overlaps with reading
	// the others, on every core, instead of following them all.
	type read struct {
		as      *archiveSession
		entries []memory.Entry
		docs    []rank.Prepared // entries' documents, in the same order
		upTo    uint64
		last    lastTurn // the last turn read: the session's last once applied
		foreign bool
		// reset: the stored session no longer extends what the view read (a forget's
		// tombstone, or a corrupt state): what the view holds of it goes.
		reset bool
		// from is the sequence the read started after (0: the session's start); stored is
		// the stored view's session the turns came from, if they did.
		from   uint64
		stored *storedSession
	}
	var applying sync.Mutex // u's archive, index and sessions are changed under it
	// The documents of the sessions taken from the stored view, indexed together once every
	// session is read: one call of AddPrepared, which looks each term of the stored view's table
	// up once (rank.PrepareVocab), instead of one per session under the lock the others wait on.
	var fromStored []rank.Prepared
	added := 0 // documents indexed by this call
	apply := func(r read) {
		applying.Lock()
		defer applying.Unlock()
		if r.reset {
			u.dropSession(r.as.state.Key.Session)
		}
		r.as.stored = r.stored != nil
		if r.foreign {
			r.as.dirty = false
			return
		}
		if build != nil && r.from == 0 {
			switch {
			case r.stored != nil:
				build.keep(*r.stored)
			case r.as.state.Revision() != 0:
				build.addRead(r.as.state.Key.Session, r.as.state.Revision(), r.upTo, r.as.state.Header.Head, r.entries, r.docs)
			}
		}
		docs := r.docs[:0]
		for i, e := range r.entries {
			if _, dup := u.archive[e.ID]; dup {
				continue
			}
			e.Metadata = u.turnMeta(e.Metadata, e.Role, r.as.state.Key.Session)
			u.archive[e.ID] = e
			docs = append(docs, r.docs[i])
			u.addEntries(1, archivedBytes(e))
		}
		added += len(docs)
		if r.stored != nil {
			fromStored = append(fromStored, docs...)
		} else {
			u.archIdx.AddPrepared(docs...)
			u.noteIndexes()
		}
		u.bytes.Add(int64(r.last.size() - r.as.last.size()))
		r.as.last = r.last.kept()
		r.as.scanned = r.upTo
		r.as.dirty = false
	}
	var fromValue, stale, fromStream atomic.Int64 // a cold load's sessions, by where they were read
	var g errgroup.Group
	g.SetLimit(archiveReaders)
	for _, as := range dirty {
		g.Go(func() error {
			r := read{as: as}
			if ss, ok := storedOf[as.state.Key.Session]; ok && as.scanned == 0 {
				if r.stored, r.entries, r.docs, r.last, r.upTo = u.fromStored(ctx, store, headers, stored, ss); r.stored != nil {
					fromValue.Add(1)
					apply(r)
					return nil
				}
				stale.Add(1)
			} else if build != nil {
				fromStream.Add(1)
			}
			if as.stored {
				// Taken from a stored view without its state: read again from the start (it
				// stays marked until a read of it is applied, so a failed one resets it again).
				as.state = session.NewDecisions(as.state.Key)
				r.reset = true
			}
			resets := as.state.Resets()
			if _, err := store.Refresh(ctx, as.state); err != nil {
				return err
			}
			r.reset = r.reset || as.state.Resets() != resets
			h := as.state.Header
			if h.User != "" && h.User != u.key.user {
				r.foreign = true // the index named a session another user owns: never show it
				apply(r)
				return nil
			}
			from := as.scanned
			if r.reset {
				from = 0
			}
			r.from, r.upTo = from, from
			if from > 0 {
				r.last = as.last
			}
			if h.LastSeq > from {
				subject := events.SessionFilter(h.Tenant, h.Session)
				if h.Partition >= 0 {
					subject = events.PartitionedSubject(h.Partition, h.Tenant, h.Session)
				}
				err := reader.Scan(ctx, subject, from+1, h.LastSeq, func(m *jetstream.RawStreamMsg) error {
					t, err := decodeTurn(m)
					if err != nil || !as.state.AppliedAt(t.id, m.Sequence) {
						return nil // not a turn, rejected by ingest, or a late copy
					}
					e := memory.Entry{ID: t.id, Type: memory.TypeForRole(t.role), Role: t.role, Content: t.content,
						Timestamp: t.at, Seq: m.Sequence, Metadata: t.metadata} // completed by turnMeta below
					r.entries = append(r.entries, e)
					r.docs = append(r.docs, u.archIdx.Prepare(r.last.dialogueDoc(rank.Doc{ID: e.ID, Text: e.Content, Group: as.state.Key.Session,
						Pos: int(e.Seq), Role: e.Role, Time: e.Timestamp, Kind: "turn"}, e.Metadata)))
					return nil
				})
				if err != nil {
					return err
				}
				r.upTo = h.LastSeq
			}
			apply(r)
			return nil
		})
	}
	err := g.Wait()
	if !u.warming { // the counts are of the loads that serve requests
		views.count("stored", int(fromValue.Load()))
		views.count("stale", int(stale.Load()))
		views.count("stream", int(fromStream.Load()))
	}
	if len(fromStored) > 0 {
		u.archIdx.AddPrepared(fromStored...)
		u.noteIndexes()
	}
	if added > 0 && 2*added > u.archIdx.Len() {
		// Most of the index is new (a cold load, a session at a time): its postings are
		// trimmed to their size, as a view mostly searched from now on.
		u.archIdx.Compact()
	}
	if err != nil {
		return err // a session that failed stays dirty, for the next request to read
	}
	if build != nil && build.fresh() {
		if u.warming {
			views.writeNow(ctx, build)
		} else {
			views.write(build)
		}
	}
	return nil
}

// fromStored returns the turns of session ss of the stored view v, with their prepared
// documents, the session's last turn and the sequence they reach, when the session's header is
// still the one the view read (stored nil otherwise: the session is read from the stream). The
// header is taken from headers when they were read (a session not there has none), else read.
func (u *userView) fromStored(ctx context.Context, store *session.Store, headers map[session.Key]session.Stored, v *storedView, ss storedSession) (stored *storedSession, entries []memory.Entry, docs []rank.Prepared, last lastTurn, upTo uint64) {
	key := session.Key{Tenant: u.key.tenant, Session: ss.Session}
	var h session.Header
	var rev uint64
	var err error
	if headers != nil {
		hs, ok := headers[key]
		h, rev = hs.Header, hs.Rev
		if !ok {
			err = session.ErrNotFound
		}
	} else {
		h, rev, err = store.Header(ctx, key)
	}
	if err != nil || rev != ss.Rev || h.LastSeq != ss.LastSeq || h.Head != ss.Head || (h.User != "" && h.User != u.key.user) {
		return nil, nil, nil, lastTurn{}, 0
	}
	entries, err = storedRead(ss)
	if err != nil {
		return nil, nil, nil, lastTurn{}, 0
	}
	docs = make([]rank.Prepared, len(entries))
	for i, e := range entries {
		docs[i] = u.archIdx.PrepareVocab(last.dialogueDoc(rank.Doc{ID: e.ID, Text: e.Content, Group: ss.Session,
			Pos: int(e.Seq), Role: e.Role, Time: e.Timestamp, Kind: "turn"}, e.Metadata), v.vocab, ss.Turns[i].Terms)
	}
	return &ss, entries, docs, last, ss.LastSeq
}

// dropSession takes every archived turn of a session out of the view.
func (u *userView) dropSession(sess string) {
	var turns []memory.Entry
	for _, e := range u.archive {
		if s, _ := e.Metadata["session"].(string); s == sess {
			turns = append(turns, e)
		}
	}
	// The documents as they were indexed (text, and the dialogue context each had from the
	// turn before it), so that the index finds their terms.
	slices.SortFunc(turns, func(a, b memory.Entry) int { return cmp.Compare(a.Seq, b.Seq) })
	var last lastTurn
	gone := make([]rank.Doc, 0, len(turns))
	for _, e := range turns {
		id := e.ID
		gone = append(gone, last.dialogueDoc(rank.Doc{ID: id, Text: e.Content, Role: e.Role}, e.Metadata))
		delete(u.archive, id)
		u.archVecs.remove(id)
		u.addEntries(-1, -archivedBytes(e))
	}
	u.archIdx.RemoveDocs(gone...)
	u.noteIndexes()
}

// archiveReaders bounds the sessions a user's archive reads at once.
const archiveReaders = 32

// searchText is what a long-term entry is found by: its content and, for a fact, the words of
// the turns that stated it and its key ("user.favorite_language" reads "favorite language").
func searchText(e memory.Entry) string {
	if e.Type != memory.Fact {
		return e.Content
	}
	parts := []string{e.Content}
	if src, ok := e.Metadata["source_text"].(string); ok && src != "" {
		parts = append(parts, src)
	}
	if key, ok := e.Metadata["key"].(string); ok && key != "" {
		parts = append(parts, strings.NewReplacer(".", " ", "_", " ").Replace(key))
	}
	return strings.Join(parts, "\n")
}

func withSession(md map[string]any, sess string) map[string]any {
	out := clone(md)
	out["session"] = sess
	return out
}

// userCache keeps user views under a memory cap, least recently used evicted first.
type userCache struct {
	mu       sync.Mutex
	maxBytes int
	rank     rank.Config // of each user's long-term and archive index
	items    map[userKey]*list.Element
	order    *list.List
	// owners maps "<tenant>.<session>" to the users whose archive holds that session.
	owners map[string][]userKey
	// Under a process memory limit (footprint.go, capNow): the limit, how the Go heap is read,
	// and the heap the rest of the process held at the last garbage collection seen.
	memLimit int64
	heap     func() heapState
	gcSeen   uint64
	rest     int64
}

func newUserCache(maxBytes int, rc rank.Config) *userCache {
	return &userCache{maxBytes: maxBytes, rank: rc, items: map[userKey]*list.Element{}, order: list.New(), owners: map[string][]userKey{}}
}

func (c *userCache) get(k userKey) *userView {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[k]; ok {
		c.order.MoveToFront(el)
		v := el.Value.(*userView)
		v.used.Store(time.Now().UnixNano())
		return v
	}
	v := newUserView(k, c.rank)
	v.used.Store(time.Now().UnixNano())
	c.items[k] = c.order.PushFront(v)
	return v
}

// noteSessions records which sessions a view holds, for the session watcher, and evicts views
// beyond the memory cap.
func (c *userCache) noteSessions(v *userView, sessions []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range sessions {
		key := v.key.tenant + "." + s
		if !slices.Contains(c.owners[key], v.key) {
			c.owners[key] = append(c.owners[key], v.key)
		}
	}
	var total int64
	for el := c.order.Front(); el != nil; el = el.Next() {
		total += el.Value.(*userView).bytes.Load()
	}
	limit := c.capNow(total)
	for total > limit && c.order.Len() > 1 {
		last := c.order.Back()
		lv := last.Value.(*userView)
		if lv == v {
			break
		}
		total -= lv.bytes.Load()
		c.order.Remove(last)
		delete(c.items, lv.key)
	}
}

// peek returns a user's view if it is cached, without making it most recently used.
func (c *userCache) peek(k userKey) *userView {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[k]; ok {
		return el.Value.(*userView)
	}
	return nil
}

// markLong marks a user's long-term memory changed.
func (c *userCache) markLong(k userKey) {
	c.mu.Lock()
	el, ok := c.items[k]
	c.mu.Unlock()
	if !ok {
		return
	}
	v := el.Value.(*userView)
	v.mu.Lock()
	v.longDirty = true
	v.mu.Unlock()
}

// markSession marks a session changed in every view whose archive holds it.
func (c *userCache) markSession(tenant, sess string) {
	c.mu.Lock()
	var views []*userView
	for _, k := range c.owners[tenant+"."+sess] {
		if el, ok := c.items[k]; ok {
			views = append(views, el.Value.(*userView))
		}
	}
	c.mu.Unlock()
	for _, v := range views {
		v.mu.Lock()
		if as, ok := v.sessions[sess]; ok {
			as.dirty = true
		}
		v.mu.Unlock()
	}
}

// drop forgets a user's view entirely.
func (c *userCache) drop(k userKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[k]; ok {
		c.order.Remove(el)
		delete(c.items, k)
	}
}

// dropAll forgets every view (when a forget may have been missed).
func (c *userCache) dropAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.items)
	c.order.Init()
}

// watch keeps the cache current: every change to the long-term bucket marks its user's view,
// every session header update marks the views that hold the session. It also makes the stores
// report the corrupt values they read (see instrument).
func (s *Service) watch(ctx context.Context, js jetstream.JetStream) error {
	s.instrument()
	long, err := js.KeyValue(ctx, s.cfg.Topology.LongTermBucket())
	if err != nil {
		return err
	}
	sess, err := js.KeyValue(ctx, s.cfg.Topology.SessionBucket())
	if err != nil {
		return err
	}
	lw, err := long.WatchAll(ctx, jetstream.UpdatesOnly(), jetstream.IgnoreDeletes())
	if err != nil {
		return err
	}
	sw, err := sess.WatchAll(ctx, jetstream.UpdatesOnly())
	if err != nil {
		_ = lw.Stop()
		return err
	}
	// Vectors the embedding stage writes from now on go straight into the views of cached users;
	// a view made later reads them with the rest (storedVectors.load).
	var vw jetstream.KeyWatcher
	var vecUpdates <-chan jetstream.KeyValueEntry
	if s.cfg.Embedder != nil {
		if vw, err = s.vectors.Watch(ctx); err != nil {
			_ = lw.Stop()
			_ = sw.Stop()
			return err
		}
		vecUpdates = vw.Updates()
		s.ready.Store(s.cfg.PreviousEmbedder == nil)
		if !s.ready.Load() {
			// A model change: answer with the previous model until the new one is complete.
			_, done, err := s.vectors.Complete(ctx, s.cfg.Embedder.Name())
			if err != nil {
				_ = lw.Stop()
				_ = sw.Stop()
				_ = vw.Stop()
				return err
			}
			s.ready.Store(done)
			s.log.Info().Str("model", s.cfg.Embedder.Name()).Str("previous", s.cfg.PreviousEmbedder.Name()).Bool("complete", done).Msg("model change")
		}
	}
	go func() {
		defer func() {
			_ = lw.Stop()
			_ = sw.Stop()
			if vw != nil {
				_ = vw.Stop()
			}
		}()
		for {
			select {
			case <-ctx.Done():
				return
			case e, ok := <-vecUpdates:
				if !ok {
					return
				}
				if e != nil {
					s.followVector(e)
				}
			case e, ok := <-lw.Updates():
				if !ok {
					return
				}
				if e == nil {
					continue
				}
				if k, err := longterm.ParseKey(e.Key()); err == nil {
					s.users.markLong(userKey{k.Tenant, k.User})
				}
			case e, ok := <-sw.Updates():
				if !ok {
					return
				}
				if e == nil {
					continue
				}
				if k, err := session.ParseKey(e.Key()); err == nil {
					s.users.markSession(k.Tenant, k.Session)
					s.warm.note(k, e.Operation() != jetstream.KeyValuePut || session.IsTombstone(e.Value()), time.Now())
				}
			}
		}
	}()
	return nil
}

// followVector applies one change of the vector bucket to the view of its user, if that user is
// cached: a new vector of the retriever's model is added, a deleted one removed. Vectors of other
// models are never read.
func (s *Service) followVector(e jetstream.KeyValueEntry) {
	if token, ok := vectors.IsMarkerKey(e.Key()); ok {
		if token == vectors.ModelToken(s.cfg.Embedder.Name()) && e.Operation() == jetstream.KeyValuePut && !s.ready.Swap(true) {
			s.log.Info().Str("model", s.cfg.Embedder.Name()).Msg("the model's vectors are complete: answering with it")
		}
		return
	}
	emb := s.queryEmbedder()
	k, err := vectors.ParseKey(e.Key())
	if err != nil || k.Model != vectors.ModelToken(emb.Name()) {
		return
	}
	uv := s.users.peek(userKey{k.Tenant, k.User})
	if uv == nil {
		return
	}
	if e.Operation() != jetstream.KeyValuePut {
		if k.Pack != "" {
			uv.vecs.reset() // which entries a pack held is in its value only: read them again
		} else if id, ok := k.ID(); ok {
			uv.vecs.remove(id)
		}
		return
	}
	vs, cerr := s.vectors.Entries(e.Key(), e.Value())
	if cerr != nil {
		s.rep.Report(cerr)
		return
	}
	for _, v := range vs {
		uv.addVectors(uv.vecs.put(v))
	}
}

// instrument makes the session and long-term stores report the corrupt values they read (a value
// of another tenant, session or user than its key, or one that does not decode: logged at Warn,
// counted in agentmem_kv_corrupt_total). The stores read such a value as absent whether or not
// they report it, so a request is answered without it rather than with an error. It runs from
// Start, before the first request is served.
func (s *Service) instrument() {
	rep := integrity.NewReporter(s.cfg.Metrics, s.log)
	s.store, s.long, s.vectors = s.store.Instrument(rep), s.long.Instrument(rep), s.vectors.Instrument(rep)
	s.rep = rep
	if s.stored != nil {
		s.stored.rep = rep
	}
}
