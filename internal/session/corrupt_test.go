package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/integrity"
	"github.com/agentmem/agentmem/internal/metrics"
	"github.com/agentmem/agentmem/internal/metrics/metricstest"
	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/pkg/events"
)

// corruptEnv is a store that reports corrupt values to its own metrics, and raw handles on the
// buckets to write into them as a confused deputy would have.
type corruptEnv struct {
	store           *session.Store
	headers, chunks jetstream.KeyValue
	metrics         string // URL of the metrics endpoint
}

func newCorruptEnv(t *testing.T) *corruptEnv {
	t.Helper()
	st, env := newStore(t)
	m := metrics.New()
	srv := httptest.NewServer(m.Handler())
	t.Cleanup(srv.Close)
	ctx := context.Background()
	topo := events.DefaultTopology()
	h, err := env.JS.KeyValue(ctx, topo.SessionBucket())
	if err != nil {
		t.Fatal(err)
	}
	c, err := env.JS.KeyValue(ctx, topo.ChunkBucket())
	if err != nil {
		t.Fatal(err)
	}
	return &corruptEnv{store: st.Instrument(integrity.NewReporter(m, zerolog.Nop())), headers: h, chunks: c, metrics: srv.URL + "/metrics"}
}

func (e *corruptEnv) corrupt(t *testing.T, reason string) float64 {
	t.Helper()
	return metricstest.Scrape(t, e.metrics).Value("agentmem_kv_corrupt_total", "reason", reason)
}

// seedSession commits a session of alice with three turns.
func seedSession(t *testing.T, st *session.Store, key session.Key) *session.State {
	t.Helper()
	ctx := context.Background()
	s, err := st.Load(ctx, key, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range []string{"t1", "t2", "t3"} {
		s.Add(entry(id, "user", 10, uint64(i+1)), 1000, "alice")
		s.Advance(uint64(i+1), time.Now())
	}
	if _, err := st.Commit(ctx, s); err != nil {
		t.Fatal(err)
	}
	return s
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCorruptHeaderReadsAsAbsentAndIsReplacedByTheNextCommit(t *testing.T) {
	key := session.Key{Tenant: "beta", Session: "s1"}
	for _, c := range []struct {
		name, reason string
		value        func(t *testing.T) []byte
	}{
		{"another tenant's header", integrity.Tenant, func(t *testing.T) []byte {
			return mustJSON(t, session.Header{V: 1, Tenant: "alpha", Session: "s1", User: "mallory", Partition: -1})
		}},
		{"another session's header", integrity.Session, func(t *testing.T) []byte {
			return mustJSON(t, session.Header{V: 1, Tenant: "beta", Session: "s2", Partition: -1})
		}},
		{"a header without owner fields", integrity.Tenant, func(*testing.T) []byte { return []byte(`{"v":1,"turns":0}`) }},
		{"not a header", integrity.Undecodable, func(*testing.T) []byte { return []byte("garbage") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newCorruptEnv(t)
			ctx := context.Background()
			cached := seedSession(t, e.store, key)
			if _, err := e.headers.Put(ctx, key.String(), c.value(t)); err != nil {
				t.Fatal(err)
			}

			_, _, err := e.store.Header(ctx, key)
			if !errors.Is(err, session.ErrNotFound) || !errors.Is(err, integrity.ErrCorrupt) {
				t.Fatalf("Header: %v, want not found and corrupt", err)
			}
			if got := e.corrupt(t, c.reason); got != 1 {
				t.Fatalf("agentmem_kv_corrupt_total{reason=%q} = %v after one read, want 1", c.reason, got)
			}
			s, err := e.store.Load(ctx, key, 1000)
			if err != nil {
				t.Fatalf("Load: %v, want the session to read as absent", err)
			}
			if s.Revision() != 0 || s.Short.Len() != 0 || s.Header.User != "" {
				t.Fatalf("loaded revision %d with %d entries and owner %q, want an absent session", s.Revision(), s.Short.Len(), s.Header.User)
			}
			// A reader holding the genuine state sees the session go absent, once.
			changed, err := e.store.Refresh(ctx, cached)
			if err != nil || !changed || cached.Revision() != 0 || cached.Short.Len() != 0 {
				t.Fatalf("Refresh of a cached state: changed %v err %v revision %d entries %d", changed, err, cached.Revision(), cached.Short.Len())
			}
			before := e.corrupt(t, c.reason)
			if changed, err := e.store.Refresh(ctx, cached); err != nil || changed {
				t.Fatalf("second Refresh: changed %v err %v", changed, err)
			}
			if got := e.corrupt(t, c.reason); got != before {
				t.Fatalf("the same corrupt revision was reported again (%v, then %v)", before, got)
			}
			var listed []string
			if err := e.store.List(ctx, func(h session.Header) error {
				listed = append(listed, h.Tenant+"."+h.Session)
				return nil
			}); err != nil {
				t.Fatalf("List: %v", err)
			}
			if len(listed) != 0 {
				t.Fatalf("List gave %v, want the corrupt header left out", listed)
			}

			// The owner's next commit (ingest rebuilding from the stream) replaces the corrupt
			// header; the corrupt one is never taken for the owner's.
			s.Add(entry("t1", "user", 10, 1), 1000, "alice")
			s.Advance(1, time.Now())
			if _, err := e.store.Commit(ctx, s); err != nil {
				t.Fatalf("Commit over the corrupt header: %v", err)
			}
			h, _, err := e.store.Header(ctx, key)
			if err != nil || h.Tenant != "beta" || h.Session != "s1" || h.User != "alice" || h.Turns != 1 {
				t.Fatalf("header after the commit: %+v, %v", h, err)
			}
		})
	}
}

func TestCommitOverACorruptHeaderIsRevisionChecked(t *testing.T) {
	e := newCorruptEnv(t)
	ctx := context.Background()
	key := session.Key{Tenant: "beta", Session: "s1"}
	if _, err := e.headers.Put(ctx, key.String(), []byte("garbage")); err != nil {
		t.Fatal(err)
	}
	s, err := e.store.Load(ctx, key, 1000)
	if err != nil {
		t.Fatal(err)
	}
	// The key changes after the load: the commit must not overwrite what it did not read.
	if _, err := e.headers.Put(ctx, key.String(), []byte("other garbage")); err != nil {
		t.Fatal(err)
	}
	s.Add(entry("t1", "user", 10, 1), 1000, "alice")
	if _, err := e.store.Commit(ctx, s); !errors.Is(err, session.ErrConflict) {
		t.Fatalf("Commit: %v, want a conflict", err)
	}
}

func TestCorruptChunkMakesTheSessionAbsent(t *testing.T) {
	key := session.Key{Tenant: "beta", Session: "s1"}
	for _, c := range []struct {
		name, reason string
		value        func(t *testing.T, head session.Chunk) []byte
	}{
		{"another tenant's chunk", integrity.Tenant, func(t *testing.T, head session.Chunk) []byte {
			head.Tenant = "alpha"
			return mustChunk(t, head)
		}},
		{"another tenant's chunk, JSON", integrity.Tenant, func(t *testing.T, head session.Chunk) []byte {
			head.Tenant = "alpha"
			return mustJSON(t, head)
		}},
		{"a chunk out of its place", integrity.Chain, func(t *testing.T, head session.Chunk) []byte {
			head.N += 5
			return mustChunk(t, head)
		}},
		{"not a chunk", integrity.Undecodable, func(*testing.T, session.Chunk) []byte { return []byte("[1,2,3]") }},
		{"a truncated binary chunk", integrity.Undecodable, func(t *testing.T, head session.Chunk) []byte {
			b := mustChunk(t, head)
			return b[:len(b)-3]
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newCorruptEnv(t)
			ctx := context.Background()
			s := seedSession(t, e.store, key)
			entry, err := e.chunks.Get(ctx, s.Header.Head)
			if err != nil {
				t.Fatal(err)
			}
			head, err := session.DecodeChunk(entry.Value())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.chunks.Put(ctx, s.Header.Head, c.value(t, head)); err != nil {
				t.Fatal(err)
			}
			got, err := e.store.Load(ctx, key, 1000)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if got.Revision() != 0 || got.Short.Len() != 0 {
				t.Fatalf("revision %d, %d entries: want an absent session", got.Revision(), got.Short.Len())
			}
			if n := e.corrupt(t, c.reason); n != 1 {
				t.Fatalf("agentmem_kv_corrupt_total{reason=%q} = %v, want 1", c.reason, n)
			}
		})
	}
}

func TestHeaderNamingAnotherSessionsChunkIsCorrupt(t *testing.T) {
	e := newCorruptEnv(t)
	ctx := context.Background()
	victim := seedSession(t, e.store, session.Key{Tenant: "beta", Session: "s1"})
	mine := seedSession(t, e.store, session.Key{Tenant: "alpha", Session: "s1"})
	// alpha's header, made to look like its own, points into beta's chain.
	h := mine.Header
	h.Head = victim.Header.Head
	if _, err := e.headers.Put(ctx, "alpha.s1", mustJSON(t, h)); err != nil {
		t.Fatal(err)
	}
	got, err := e.store.Load(ctx, session.Key{Tenant: "alpha", Session: "s1"}, 1000)
	if err != nil || got.Revision() != 0 || got.Short.Len() != 0 {
		t.Fatalf("Load: revision %d entries %d err %v, want an absent session", got.Revision(), got.Short.Len(), err)
	}
	if n := e.corrupt(t, integrity.Chain); n != 1 {
		t.Fatalf("agentmem_kv_corrupt_total{reason=chain} = %v, want 1", n)
	}
	// beta's own session is untouched.
	b, err := e.store.Load(ctx, session.Key{Tenant: "beta", Session: "s1"}, 1000)
	if err != nil || b.Header.Turns != 3 || b.Header.User != "alice" {
		t.Fatalf("beta's session: %+v, %v", b.Header, err)
	}
}

func TestChunksWithoutOwnerFieldsStillLoad(t *testing.T) {
	e := newCorruptEnv(t)
	ctx := context.Background()
	key := session.Key{Tenant: "beta", Session: "s1"}
	s := seedSession(t, e.store, key)
	entry, err := e.chunks.Get(ctx, s.Header.Head)
	if err != nil {
		t.Fatal(err)
	}
	c, err := session.DecodeChunk(entry.Value())
	if err != nil {
		t.Fatal(err)
	}
	if c.Tenant != "beta" || c.Session != "s1" {
		t.Fatalf("a new chunk names %q/%q, want its session", c.Tenant, c.Session)
	}
	c.Tenant, c.Session = "", "" // as written, in JSON, before chunks named their session
	if _, err := e.chunks.Put(ctx, s.Header.Head, mustJSON(t, c)); err != nil {
		t.Fatal(err)
	}
	got, err := e.store.Load(ctx, key, 1000)
	if err != nil || got.Header.Turns != 3 || got.Short.Len() != 3 {
		t.Fatalf("Load: %+v, %v", got.Header, err)
	}
	if n := e.corrupt(t, integrity.Tenant) + e.corrupt(t, integrity.Session); n != 0 {
		t.Fatalf("an old chunk was reported corrupt")
	}
}

func mustChunk(t *testing.T, c session.Chunk) []byte {
	t.Helper()
	b, err := session.EncodeChunk(c)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Headers reads many sessions' headers in batched requests and gives what Header gives for
// each: the header and its revision; nothing for a session never stored, deleted, or whose
// header is corrupt (reported).
func TestHeadersReadsInBatchesWhatHeaderReads(t *testing.T) {
	e := newCorruptEnv(t)
	ctx := context.Background()
	var keys []session.Key
	for i := range 300 { // more than one batch
		k := session.Key{Tenant: "acme", Session: fmt.Sprintf("h%03d", i)}
		keys = append(keys, k)
		if i%3 == 0 {
			seedSession(t, e.store, k)
		}
	}
	if err := e.headers.Delete(ctx, keys[3].String()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.headers.Put(ctx, keys[6].String(), []byte("{not json")); err != nil {
		t.Fatal(err)
	}
	keys = append(keys, session.Key{Tenant: "other", Session: "h000"}) // another tenant's key
	before := e.corrupt(t, "undecodable")
	got, err := e.store.Headers(ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, k := range keys {
		h, rev, err := e.store.Header(ctx, k)
		s, ok := got[k]
		switch {
		case err != nil && ok:
			t.Errorf("%s: Headers gave %+v, Header %v", k, s, err)
		case err == nil && (!ok || s.Rev != rev || s.Header != h):
			t.Errorf("%s: Headers gave %+v (%v), Header %+v at %d", k, s, ok, h, rev)
		case err == nil:
			want++
		}
	}
	if want != 98 || len(got) != want {
		t.Fatalf("%d headers read, %d by Header; want 98 (100 stored, one deleted, one corrupt)", len(got), want)
	}
	if after := e.corrupt(t, "undecodable"); after < before+1 {
		t.Fatalf("corrupt header not reported: %v → %v", before, after)
	}
	none, err := e.store.Headers(ctx, []session.Key{{Tenant: "acme", Session: "never"}})
	if err != nil || len(none) != 0 {
		t.Fatalf("a batch of no stored session: %v, %v", none, err)
	}
}
