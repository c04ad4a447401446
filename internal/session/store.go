package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
	"github.com/synadia-io/orbit.go/jetstreamext"

	"github.com/agentmem/agentmem/internal/archive"
	"github.com/agentmem/agentmem/internal/integrity"
	"github.com/agentmem/agentmem/pkg/events"
)

// ErrConflict is returned by Commit when another writer changed the session first; the caller
// drops its state, reloads and decides again.
var ErrConflict = errors.New("session: header changed by another writer")

// ErrNotFound is returned when a session has no stored header.
var ErrNotFound = errors.New("session: not found")

// maxChunkBytes keeps every chunk well under the KV value limit (1 MiB).
const maxChunkBytes = 256 << 10

// Store reads and writes session headers and chunks.
//
// Every value read is checked against its key: a header must name the tenant and session of its
// key, a chunk must be one of the session's (its key under the session's, its tenant and session
// when it names them, its place in the chain). A value that does not decode or does not match is
// corrupt: it is reported (Instrument) and the session reads as absent, never as an error.
type Store struct {
	js      jetstream.JetStream
	headers jetstream.KeyValue
	chunks  jetstream.KeyValue
	// turns is the turns stream, whose last sequence a forgotten session's tombstone holds.
	turns string
	now   func() time.Time
	rep   *integrity.Reporter
	// group writes concurrent commits together (group.go).
	group *committer
}

// NewStore binds to the session and chunk buckets of topo, which must exist (Topology.Ensure).
func NewStore(ctx context.Context, js jetstream.JetStream, topo events.Topology) (*Store, error) {
	h, err := js.KeyValue(ctx, topo.SessionBucket())
	if err != nil {
		return nil, fmt.Errorf("binding bucket %q: %w", topo.SessionBucket(), err)
	}
	c, err := js.KeyValue(ctx, topo.ChunkBucket())
	if err != nil {
		return nil, fmt.Errorf("binding bucket %q: %w", topo.ChunkBucket(), err)
	}
	st := &Store{js: js, headers: h, chunks: c, turns: topo.TurnsStream(), now: time.Now}
	batches, err := atomicBatches(ctx, h, c)
	if err != nil {
		return nil, err
	}
	st.group = &committer{st: st, batches: batches}
	return st, nil
}

// atomicBatches reports whether every one of the buckets allows atomic batches: a bucket
// persisted lazily (events.Topology.Lazy) does not, and there commits are written one by one,
// which syncs nothing.
func atomicBatches(ctx context.Context, kvs ...jetstream.KeyValue) (bool, error) {
	for _, kv := range kvs {
		st, err := kv.Status(ctx)
		if err != nil {
			return false, fmt.Errorf("reading bucket %q: %w", kv.Bucket(), err)
		}
		bs, ok := st.(*jetstream.KeyValueBucketStatus)
		if !ok || !bs.StreamInfo().Config.AllowAtomicPublish {
			return false, nil
		}
	}
	return true, nil
}

// Instrument returns a copy of st that reports the corrupt values it reads to r.
func (st *Store) Instrument(r *integrity.Reporter) *Store {
	c := *st
	c.rep = r
	return &c
}

// Header reads a session's stored header and its revision; ErrNotFound when there is none. A
// corrupt header (undecodable, or naming another tenant or session) is reported and reads as
// absent: the error then matches both ErrNotFound and integrity.ErrCorrupt.
func (st *Store) Header(ctx context.Context, key Key) (Header, uint64, error) {
	h, rev, cerr, err := st.header(ctx, key)
	if err != nil {
		return Header{}, 0, err
	}
	if cerr != nil {
		st.rep.Report(cerr)
		return Header{}, 0, fmt.Errorf("%w: %w", ErrNotFound, cerr)
	}
	return h, rev, nil
}

// Stored is a session's header as stored, with its revision.
type Stored struct {
	Header Header
	Rev    uint64
}

// headersPerRequest bounds the keys of one batched read (the server answers at most 1,024).
const headersPerRequest = 256

// SyncQueueLen is the channel length (nats.SyncQueueLen) that memoryd's connections give a
// synchronous subscription. A batched read (Headers, through natsext.RequestMany) subscribes
// synchronously once per call, and nats.go's default of 65,536 messages is a channel of 512 KB
// allocated, zeroed and dropped each time: half a megabyte of garbage and about 130 page faults
// for each cold user a retriever loads, for a reply of at most headersPerRequest+1 messages.
// Nothing in memoryd reads a synchronous subscription that receives more than one such reply.
const SyncQueueLen = 1024

// Headers reads the stored headers of keys in batched direct gets (one request for up to
// headersPerRequest keys, where Header makes one each): a key without a header, or with a
// corrupt one (reported), is not in the map. It fails as a whole when a batch cannot be read,
// and with jetstreamext.ErrBatchUnsupported from a server older than 2.11: the caller then
// reads the headers one by one.
func (st *Store) Headers(ctx context.Context, keys []Key) (map[Key]Stored, error) {
	out := make(map[Key]Stored, len(keys))
	bucket := st.headers.Bucket()
	prefix := "$KV." + bucket + "."
	for len(keys) > 0 {
		batch := keys[:min(len(keys), headersPerRequest)]
		keys = keys[len(batch):]
		subjects := make([]string, len(batch))
		byKey := make(map[string]Key, len(batch))
		for i, k := range batch {
			subjects[i] = prefix + k.String()
			byKey[k.String()] = k
		}
		msgs, err := jetstreamext.GetLastMsgsFor(ctx, st.js, "KV_"+bucket, subjects)
		if err != nil {
			return nil, fmt.Errorf("reading %d headers: %w", len(batch), err)
		}
		for m, err := range msgs {
			if errors.Is(err, jetstreamext.ErrNoMessages) {
				break // none of the batch has a header
			}
			if err != nil {
				return nil, fmt.Errorf("reading %d headers: %w", len(batch), err)
			}
			k, ok := byKey[strings.TrimPrefix(m.Subject, prefix)]
			if !ok {
				continue
			}
			if archive.KVRemoved(m) {
				continue
			}
			h, cerr := st.checkHeader(k, m.Data)
			if cerr != nil {
				st.rep.Report(cerr)
				continue
			}
			out[k] = Stored{Header: h, Rev: m.Sequence}
		}
	}
	return out, nil
}

// header reads and checks a session's header. A corrupt one comes back as cerr, with its
// revision; err is a failure to read.
func (st *Store) header(ctx context.Context, key Key) (h Header, rev uint64, cerr *integrity.Error, err error) {
	e, err := st.headers.Get(ctx, key.String())
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Header{}, 0, nil, ErrNotFound
	}
	if err != nil {
		return Header{}, 0, nil, fmt.Errorf("reading header %q: %w", key, err)
	}
	h, cerr = st.checkHeader(key, e.Value())
	return h, e.Revision(), cerr, nil
}

// checkHeader decodes the header stored under key and checks that it is key's.
func (st *Store) checkHeader(key Key, data []byte) (Header, *integrity.Error) {
	bucket := st.headers.Bucket()
	var h Header
	if err := json.Unmarshal(data, &h); err != nil {
		return Header{}, integrity.Undecoded(bucket, key.String(), err)
	}
	if cerr := integrity.Mismatch(bucket, key.String(), integrity.Tenant, h.Tenant, key.Tenant); cerr != nil {
		return Header{}, cerr
	}
	if cerr := integrity.Mismatch(bucket, key.String(), integrity.Session, h.Session, key.Session); cerr != nil {
		return Header{}, cerr
	}
	return h, nil
}

// Load reads a session: its header and every chunk of its chain, replayed in order. A session
// that was never stored gives a fresh State with the given budget.
func (st *Store) Load(ctx context.Context, key Key, budget int) (*State, error) {
	s := NewState(key, budget)
	if _, err := st.Refresh(ctx, s); err != nil {
		return nil, err
	}
	return s, nil
}

// Refresh brings s up to the stored header: it reads the chunks written since s.Header.Head and
// replays them. It reports whether anything changed. s must have no uncommitted operations.
//
// A corrupt header or chain (see Store) is reported and the session reads as absent: s becomes
// a fresh state (Revision 0) whose first Commit replaces the corrupt header, revision-checked.
// Ingest, which decides from the turns stream, then rebuilds the session from the stream as it
// does for a session without a header; a reader sees no session.
func (st *Store) Refresh(ctx context.Context, s *State) (bool, error) {
	if len(s.ops) > 0 {
		return false, errors.New("session: refresh with uncommitted operations")
	}
	for attempt := 0; ; attempt++ {
		changed, retry, err := st.refresh(ctx, s)
		if !retry || attempt == 2 {
			return changed, err
		}
	}
}

// refresh is one attempt of Refresh; retry asks for another when a chunk went missing because
// the header moved on meanwhile (a forget purges chunks after writing the tombstone).
func (st *Store) refresh(ctx context.Context, s *State) (changed, retry bool, err error) {
	h, rev, cerr, err := st.header(ctx, s.Key)
	if errors.Is(err, ErrNotFound) {
		return false, false, nil
	}
	if err != nil {
		return false, false, err
	}
	if rev == s.rev || (s.rev == 0 && rev == s.replaces) {
		return false, false, nil // unchanged, or the corrupt header s already stands in for
	}
	if cerr != nil {
		return st.corrupt(s, rev, cerr), false, nil
	}
	var chain []Chunk
	key, n := h.Head, h.Chunks
	var fetched map[string][]byte
	if s.Header.Head == "" && h.Chunks > 1 {
		// A state read for the first time (a cold load): every chunk of the session in one
		// batched read rather than one read per link of the chain.
		if fetched, err = st.sessionChunks(ctx, s.Key); err != nil {
			return false, false, err
		}
	}
	for key != "" && key != s.Header.Head {
		var c Chunk
		var cerr *integrity.Error
		if data, ok := fetched[key]; ok {
			c, cerr = st.checkChunk(s.Key, key, n, data)
		} else {
			c, cerr, err = st.chunk(ctx, s.Key, key, n)
		}
		if err != nil {
			return false, false, err
		}
		if cerr != nil {
			if cerr.Err != nil && errors.Is(cerr.Err, jetstream.ErrKeyNotFound) {
				if _, now, _, herr := st.header(ctx, s.Key); (herr == nil && now != rev) || errors.Is(herr, ErrNotFound) {
					return false, true, nil
				}
			}
			return st.corrupt(s, rev, cerr), false, nil
		}
		chain = append(chain, c)
		key, n = c.Prev, n-1
	}
	if key != s.Header.Head {
		// The stored chain does not extend what s holds (the session was forgotten and started
		// again): rebuild from the first chunk.
		*s = *s.fresh()
	}
	for i := len(chain) - 1; i >= 0; i-- {
		for _, op := range chain[i].Ops {
			s.apply(op)
		}
	}
	// The header is the source of the watermarks and pressure state; counters come from replay.
	counters := s.Header
	s.Header = h
	s.Header.Kept, s.Header.Tokens = counters.Kept, counters.Tokens
	s.Header.Pending, s.Header.PendingTokens = counters.Pending, counters.PendingTokens
	if h.Budget > 0 && h.Budget != s.Short.Budget() {
		s.Short.SetBudget(h.Budget)
	}
	s.rev, s.replaces = rev, 0
	return true, false, nil
}

// corrupt reports cerr and turns s into a fresh state standing in for the corrupt header at
// revision rev; it reports whether s changed.
func (st *Store) corrupt(s *State, rev uint64, cerr *integrity.Error) bool {
	st.rep.Report(cerr)
	changed := s.rev != 0 || s.Header.Head != ""
	*s = *s.fresh()
	s.replaces = rev
	return changed
}

// chunk reads and checks the chunk at key, which a header (or the next chunk) of session sk names
// as its n-th. A chunk that is missing, undecodable or not the session's comes back as cerr; err
// is a failure to read.
func (st *Store) chunk(ctx context.Context, sk Key, key string, n int) (Chunk, *integrity.Error, error) {
	bucket := st.chunks.Bucket()
	if !strings.HasPrefix(key, sk.String()+".") {
		return Chunk{}, &integrity.Error{Bucket: st.headers.Bucket(), Key: sk.String(), Reason: integrity.Chain,
			Detail: fmt.Sprintf("the chain names chunk %q of another session", key)}, nil
	}
	e, err := st.chunks.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Chunk{}, &integrity.Error{Bucket: bucket, Key: key, Reason: integrity.Chain, Detail: "the chain names a missing chunk", Err: err}, nil
	}
	if err != nil {
		return Chunk{}, nil, fmt.Errorf("reading chunk %q: %w", key, err)
	}
	c, cerr := st.checkChunk(sk, key, n, e.Value())
	return c, cerr, nil
}

// sessionChunks reads every chunk stored under session sk, by key (the latest value of each;
// deleted ones left out), with batched direct gets on the bucket's stream.
func (st *Store) sessionChunks(ctx context.Context, sk Key) (map[string][]byte, error) {
	bucket := st.chunks.Bucket()
	prefix := "$KV." + bucket + "."
	out := map[string][]byte{}
	err := archive.NewReader(st.js, "KV_"+bucket).Scan(ctx, prefix+sk.String()+".>", 1, 0, func(m *jetstream.RawStreamMsg) error {
		key := strings.TrimPrefix(m.Subject, prefix)
		if archive.KVRemoved(m) {
			delete(out, key)
			return nil
		}
		out[key] = m.Data
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the chunks of %s: %w", sk, err)
	}
	return out, nil
}

// checkChunk decodes and checks the value of chunk key, the n-th of session sk's chain.
func (st *Store) checkChunk(sk Key, key string, n int, value []byte) (Chunk, *integrity.Error) {
	bucket := st.chunks.Bucket()
	if !strings.HasPrefix(key, sk.String()+".") {
		return Chunk{}, &integrity.Error{Bucket: st.headers.Bucket(), Key: sk.String(), Reason: integrity.Chain,
			Detail: fmt.Sprintf("the chain names chunk %q of another session", key)}
	}
	c, err := DecodeChunk(value)
	if err != nil {
		return Chunk{}, integrity.Undecoded(bucket, key, err)
	}
	if c.Tenant != "" || c.Session != "" {
		if cerr := integrity.Mismatch(bucket, key, integrity.Tenant, c.Tenant, sk.Tenant); cerr != nil {
			return Chunk{}, cerr
		}
		if cerr := integrity.Mismatch(bucket, key, integrity.Session, c.Session, sk.Session); cerr != nil {
			return Chunk{}, cerr
		}
	}
	if c.N != n {
		return Chunk{}, &integrity.Error{Bucket: bucket, Key: key, Reason: integrity.Chain,
			Detail: fmt.Sprintf("chunk number %d where the chain expects %d", c.N, n)}
	}
	return c, nil
}

// Commit writes the operations recorded since the last commit as new chunks, then the header
// (revision-checked). It returns ErrConflict when another writer got there first; s must then be
// discarded. Writes counts the KV writes made.
func (st *Store) Commit(ctx context.Context, s *State) (writes int, err error) {
	if s.decisions {
		return 0, errors.New("session: a decisions-only state cannot be committed")
	}
	h := s.Header
	prev, n := h.Head, h.Chunks
	var chunks []kvWrite
	for _, part := range split(s.ops) {
		n++
		data, err := EncodeChunk(Chunk{Tenant: s.Key.Tenant, Session: s.Key.Session, Prev: prev, N: n, Ops: part})
		if err != nil {
			return 0, fmt.Errorf("encoding chunk: %w", err)
		}
		key := s.Key.String() + "." + nuid.Next()
		chunks = append(chunks, kvWrite{key: key, data: data})
		prev = key
	}
	h.Head, h.Chunks = prev, n
	h.Updated = st.now().UTC()
	data, err := json.Marshal(h)
	if err != nil {
		return 0, fmt.Errorf("encoding header: %w", err)
	}
	// s.replaces: the corrupt header s stands in for, replaced only if it is still there.
	create, expect := s.rev == 0 && s.replaces == 0, s.rev
	if expect == 0 {
		expect = s.replaces
	}
	r := &commitReq{ctx: ctx, chunks: chunks, header: kvWrite{key: s.Key.String(), data: data}, create: create, expect: expect}
	st.group.commit(r)
	if r.err != nil {
		return len(chunks), r.err
	}
	s.Header, s.rev, s.replaces, s.ops = h, r.rev, 0, nil
	return len(chunks) + 1, nil
}

// split cuts ops into parts whose encoding stays under maxChunkBytes.
func split(ops []Op) [][]Op {
	if len(ops) == 0 {
		return nil
	}
	var parts [][]Op
	var scratch []byte
	start, size := 0, 0
	for i, op := range ops {
		b, _ := appendOp(scratch[:0], op)
		scratch = b
		if size+len(b) > maxChunkBytes && i > start {
			parts = append(parts, ops[start:i])
			start, size = i, 0
		}
		size += len(b) + 1
	}
	return append(parts, ops[start:])
}

// List calls fn with every stored header (tombstones included), reading the bucket's stream
// with batched direct gets. Corrupt headers are reported and left out.
func (st *Store) List(ctx context.Context, fn func(Header) error) error {
	bucket := st.headers.Bucket()
	prefix := "$KV." + bucket + "."
	latest := map[string][]byte{}
	var order []string
	err := archive.NewReader(st.js, "KV_"+bucket).Scan(ctx, "$KV."+bucket+".>", 1, 0, func(m *jetstream.RawStreamMsg) error {
		if archive.KVRemoved(m) {
			delete(latest, m.Subject)
			return nil
		}
		if _, ok := latest[m.Subject]; !ok {
			order = append(order, m.Subject)
		}
		latest[m.Subject] = m.Data
		return nil
	})
	if err != nil {
		return fmt.Errorf("listing sessions: %w", err)
	}
	for _, subj := range order {
		data, ok := latest[subj]
		if !ok {
			continue
		}
		k, err := ParseKey(strings.TrimPrefix(subj, prefix))
		if err != nil {
			continue // not a session's key
		}
		h, cerr := st.checkHeader(k, data)
		if cerr != nil {
			st.rep.Report(cerr)
			continue
		}
		if err := fn(h); err != nil {
			return err
		}
	}
	return nil
}

// WatchHeader returns a watcher of one session's header, for waiting on ingest progress.
func (st *Store) WatchHeader(ctx context.Context, key Key) (jetstream.KeyWatcher, error) {
	w, err := st.headers.Watch(ctx, key.String(), jetstream.UpdatesOnly())
	if err != nil {
		return nil, fmt.Errorf("watching header %q: %w", key, err)
	}
	return w, nil
}

// IsTombstone reports whether a stored header is a forget's tombstone (a corrupt one is not). The
// commit watch asks it of every header written: only a value holding the "forgotten" key (other
// headers omit it) is decoded, a 3.7 µs decode of a usual 450-byte header skipped.
func IsTombstone(value []byte) bool {
	if !bytes.Contains(value, []byte(`"forgotten"`)) {
		return false
	}
	var h struct {
		Forgotten time.Time `json:"forgotten"`
	}
	return json.Unmarshal(value, &h) == nil && !h.Forgotten.IsZero()
}

// Tombstone replaces a forgotten session's header by one that holds nothing but the watermark:
// every message of the session up to lastSeq counts as decided, so turns in flight when the
// session was forgotten are not applied again, while later turns start a new session. The write
// is unconditional: forgetting wins over a concurrent writer, whose commit then conflicts.
func (st *Store) Tombstone(ctx context.Context, key Key, lastSeq uint64) error {
	h := Header{V: 1, Tenant: key.Tenant, Session: key.Session, Partition: -1, LastSeq: lastSeq,
		Forgotten: st.now().UTC(), Updated: st.now().UTC()}
	data, err := json.Marshal(h)
	if err != nil {
		return err
	}
	if _, err := st.headers.Put(ctx, key.String(), data); err != nil {
		return fmt.Errorf("writing the tombstone of %q: %w", key, err)
	}
	return nil
}

// Forget forgets sessions of tenant: each one's header is replaced by a tombstone (Tombstone)
// holding the turns stream's last sequence, so that turns in flight are not applied again, and
// its chunks are purged, history included. It returns how many of the sessions had chunks. This
// and Commit are the only writes of short-term state: ingest commits, forget forgets.
func (st *Store) Forget(ctx context.Context, tenant string, sessions []string) (int, error) {
	// Binding the stream reads its info; a second request would read the same.
	turns, err := st.js.Stream(ctx, st.turns)
	if err != nil {
		return 0, fmt.Errorf("reading %q: %w", st.turns, err)
	}
	last := turns.CachedInfo().State.LastSeq
	n := 0
	for _, sess := range sessions {
		k := Key{Tenant: tenant, Session: sess}
		if err := st.Tombstone(ctx, k, last); err != nil {
			return n, err
		}
		purged, err := archive.PurgeKV(ctx, st.js, st.chunks.Bucket(), k.String()+".>")
		if err != nil {
			return n, err
		}
		if purged > 0 {
			n++
		}
	}
	return n, nil
}

// Reset removes a session's short-term state so that a replay of its turns rebuilds it (package
// recovery, after an unclean stop): its header and chunks are purged, history included. A
// forgotten session's tombstone stays, with its watermark, as the replay must skip what the
// forget removed. It reports whether the session was a tombstone.
func (st *Store) Reset(ctx context.Context, key Key) (bool, error) {
	entry, err := st.headers.Get(ctx, key.String())
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
	case err != nil:
		return false, fmt.Errorf("reading the header of %q: %w", key, err)
	case IsTombstone(entry.Value()):
		return true, nil
	default:
		if _, err := archive.PurgeKV(ctx, st.js, st.headers.Bucket(), key.String()); err != nil {
			return false, err
		}
	}
	if _, err := archive.PurgeKV(ctx, st.js, st.chunks.Bucket(), key.String()+".>"); err != nil {
		return false, err
	}
	return false, nil
}

// WatchCommits calls fn with the key of every session whose header is written from now on (a
// commit, a forget), and whether the header written is a forget's tombstone, until ctx ends: for
// a reader that waits for ingest to decide a turn, so it need not poll, and that must drop what
// it keeps of a forgotten session. fn runs on the watcher's goroutine and must not block.
func (st *Store) WatchCommits(ctx context.Context, fn func(k Key, forgotten bool)) error {
	w, err := st.headers.WatchAll(ctx, jetstream.UpdatesOnly())
	if err != nil {
		return fmt.Errorf("watching bucket %q: %w", st.headers.Bucket(), err)
	}
	go func() {
		defer func() { _ = w.Stop() }()
		for {
			select {
			case <-ctx.Done():
				return
			case e, ok := <-w.Updates():
				if !ok {
					return
				}
				if e == nil {
					continue
				}
				if k, err := ParseKey(e.Key()); err == nil {
					fn(k, IsTombstone(e.Value()))
				}
			}
		}
	}()
	return nil
}
