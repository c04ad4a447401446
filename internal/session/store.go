package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/agentmem/agentmem/internal/archive"
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
type Store struct {
	js      jetstream.JetStream
	headers jetstream.KeyValue
	chunks  jetstream.KeyValue
	now     func() time.Time
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
	return &Store{js: js, headers: h, chunks: c, now: time.Now}, nil
}

// Header reads a session's stored header and its revision; ErrNotFound when there is none.
func (st *Store) Header(ctx context.Context, key Key) (Header, uint64, error) {
	e, err := st.headers.Get(ctx, key.String())
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Header{}, 0, ErrNotFound
	}
	if err != nil {
		return Header{}, 0, fmt.Errorf("reading header %q: %w", key, err)
	}
	var h Header
	if err := json.Unmarshal(e.Value(), &h); err != nil {
		return Header{}, 0, fmt.Errorf("decoding header %q: %w", key, err)
	}
	return h, e.Revision(), nil
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
func (st *Store) Refresh(ctx context.Context, s *State) (bool, error) {
	if len(s.ops) > 0 {
		return false, errors.New("session: refresh with uncommitted operations")
	}
	h, rev, err := st.Header(ctx, s.Key)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if rev == s.rev {
		return false, nil
	}
	var chain []Chunk
	key := h.Head
	for key != "" && key != s.Header.Head {
		c, err := st.chunk(ctx, key)
		if err != nil {
			return false, err
		}
		chain = append(chain, c)
		key = c.Prev
	}
	if key != s.Header.Head {
		// The stored chain does not extend what s holds (the session was forgotten and started
		// again): rebuild from the first chunk.
		*s = *NewState(s.Key, s.Short.Budget())
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
	s.rev = rev
	return true, nil
}

func (st *Store) chunk(ctx context.Context, key string) (Chunk, error) {
	e, err := st.chunks.Get(ctx, key)
	if err != nil {
		return Chunk{}, fmt.Errorf("reading chunk %q: %w", key, err)
	}
	var c Chunk
	if err := json.Unmarshal(e.Value(), &c); err != nil {
		return Chunk{}, fmt.Errorf("decoding chunk %q: %w", key, err)
	}
	return c, nil
}

// Commit writes the operations recorded since the last commit as new chunks, then the header
// (revision-checked). It returns ErrConflict when another writer got there first; s must then be
// discarded. Writes counts the KV writes made.
func (st *Store) Commit(ctx context.Context, s *State) (writes int, err error) {
	h := s.Header
	prev, n := h.Head, h.Chunks
	for _, part := range split(s.ops) {
		n++
		data, err := json.Marshal(Chunk{Prev: prev, N: n, Ops: part})
		if err != nil {
			return writes, fmt.Errorf("encoding chunk: %w", err)
		}
		key := s.Key.String() + "." + nuid.Next()
		if _, err := st.chunks.Create(ctx, key, data); err != nil {
			return writes, fmt.Errorf("writing chunk %q: %w", key, err)
		}
		writes++
		prev = key
	}
	h.Head, h.Chunks = prev, n
	h.Updated = st.now().UTC()
	data, err := json.Marshal(h)
	if err != nil {
		return writes, fmt.Errorf("encoding header: %w", err)
	}
	var rev uint64
	if s.rev == 0 {
		rev, err = st.headers.Create(ctx, s.Key.String(), data)
		if errors.Is(err, jetstream.ErrKeyExists) {
			return writes, fmt.Errorf("%w: %s was created meanwhile", ErrConflict, s.Key)
		}
	} else {
		rev, err = st.headers.Update(ctx, s.Key.String(), data, s.rev)
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) {
			return writes, fmt.Errorf("%w: %s (expected revision %d)", ErrConflict, s.Key, s.rev)
		}
	}
	if err != nil {
		return writes, fmt.Errorf("writing header %q: %w", s.Key, err)
	}
	writes++
	s.Header, s.rev, s.ops = h, rev, nil
	return writes, nil
}

// split cuts ops into parts whose JSON stays under maxChunkBytes.
func split(ops []Op) [][]Op {
	if len(ops) == 0 {
		return nil
	}
	var parts [][]Op
	start, size := 0, 0
	for i, op := range ops {
		b, _ := json.Marshal(op)
		if size+len(b) > maxChunkBytes && i > start {
			parts = append(parts, ops[start:i])
			start, size = i, 0
		}
		size += len(b) + 1
	}
	return append(parts, ops[start:])
}

// List calls fn with every stored header (tombstones included), reading the bucket's stream
// with batched direct gets.
func (st *Store) List(ctx context.Context, fn func(Header) error) error {
	bucket := st.headers.Bucket()
	latest := map[string][]byte{}
	var order []string
	err := archive.NewReader(st.js, "KV_"+bucket).Scan(ctx, "$KV."+bucket+".>", 1, 0, func(m *jetstream.RawStreamMsg) error {
		if op := m.Header.Get("KV-Operation"); op == "DEL" || op == "PURGE" {
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
		var h Header
		if err := json.Unmarshal(data, &h); err != nil {
			return fmt.Errorf("decoding header %q: %w", subj, err)
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
