package session_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/pkg/events"
)

// TestForgetTombstonesAndPurgesChunks: Forget replaces each session's header by a tombstone that
// holds the turns stream's last sequence, purges its chunks (history included), counts only the
// sessions that had chunks, and leaves other sessions alone.
func TestForgetTombstonesAndPurgesChunks(t *testing.T) {
	store, env := newStore(t)
	ctx := context.Background()
	topo := events.DefaultTopology()
	for _, sess := range []string{"s1", "s2"} {
		s, err := store.Load(ctx, session.Key{Tenant: "acme", Session: sess}, 100)
		if err != nil {
			t.Fatal(err)
		}
		s.Add(entry(sess+"-t1", "user", 10, 1), 100, "alice")
		s.Advance(1, time.Now())
		if _, err := store.Commit(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		if _, err := env.JS.Publish(ctx, fmt.Sprintf("memory.turns.acme.x%d", i), []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	turns, err := env.JS.Stream(ctx, topo.TurnsStream())
	if err != nil {
		t.Fatal(err)
	}
	last := turns.CachedInfo().State.LastSeq
	chunks, err := env.JS.Stream(ctx, "KV_"+topo.ChunkBucket())
	if err != nil {
		t.Fatal(err)
	}
	chunksOf := func(sess string) uint64 {
		t.Helper()
		info, err := chunks.Info(ctx, jetstream.WithSubjectFilter("$KV."+topo.ChunkBucket()+".acme."+sess+".>"))
		if err != nil {
			t.Fatal(err)
		}
		var n uint64
		for _, c := range info.State.Subjects {
			n += c
		}
		return n
	}
	if chunksOf("s1") == 0 || chunksOf("s2") == 0 {
		t.Fatal("no chunks committed")
	}

	n, err := store.Forget(ctx, "acme", []string{"s1", "never"})
	if err != nil || n != 1 {
		t.Fatalf("Forget: %d sessions with chunks, %v; want 1", n, err)
	}
	h, _, err := store.Header(ctx, session.Key{Tenant: "acme", Session: "s1"})
	if err != nil || h.Forgotten.IsZero() || h.LastSeq != last || h.User != "" {
		t.Fatalf("s1's header after Forget: %+v, %v; want a tombstone at sequence %d", h, err, last)
	}
	if h, _, err := store.Header(ctx, session.Key{Tenant: "acme", Session: "never"}); err != nil || h.Forgotten.IsZero() {
		t.Fatalf("a session never stored, forgotten: %+v, %v; want a tombstone", h, err)
	}
	if c := chunksOf("s1"); c != 0 {
		t.Fatalf("%d chunk messages of s1 after Forget", c)
	}
	if h, _, err := store.Header(ctx, session.Key{Tenant: "acme", Session: "s2"}); err != nil || !h.Forgotten.IsZero() || h.User != "alice" {
		t.Fatalf("s2's header: %+v, %v; want it untouched", h, err)
	}
	if chunksOf("s2") == 0 {
		t.Fatal("s2's chunks were purged")
	}
	if n, err := store.Forget(ctx, "acme", []string{"s1"}); err != nil || n != 0 {
		t.Fatalf("Forget again: %d, %v; want 0 sessions with chunks", n, err)
	}
}

// Reset removes a session's header and chunks, history included, and leaves the other sessions
// and a forgotten session's tombstone alone.
func TestResetRemovesHeaderAndChunksButNotTombstones(t *testing.T) {
	store, _ := newStore(t)
	ctx := context.Background()
	for _, sess := range []string{"s1", "s2", "s3"} {
		s, err := store.Load(ctx, session.Key{Tenant: "acme", Session: sess}, 100)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 { // three commits: three chunks and three header revisions
			s.Add(entry(fmt.Sprintf("%s-t%d", sess, i), "user", 10, uint64(i+1)), 100, "alice")
			s.Advance(uint64(i+1), time.Now())
			if _, err := store.Commit(ctx, s); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := store.Forget(ctx, "acme", []string{"s3"}); err != nil {
		t.Fatal(err)
	}
	for _, sess := range []string{"s1", "s3", "never"} {
		forgotten, err := store.Reset(ctx, session.Key{Tenant: "acme", Session: sess})
		if err != nil || forgotten != (sess == "s3") {
			t.Fatalf("Reset(%s): tombstone %t, %v", sess, forgotten, err)
		}
	}
	if _, _, err := store.Header(ctx, session.Key{Tenant: "acme", Session: "s1"}); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("s1's header after Reset: %v, want ErrNotFound", err)
	}
	st, err := store.Load(ctx, session.Key{Tenant: "acme", Session: "s1"}, 100)
	if err != nil || st.Revision() != 0 || len(st.Short.Entries()) != 0 {
		t.Fatalf("s1 after Reset: revision %d, %d entries, %v; want nothing", st.Revision(), len(st.Short.Entries()), err)
	}
	if h, _, err := store.Header(ctx, session.Key{Tenant: "acme", Session: "s3"}); err != nil || h.Forgotten.IsZero() {
		t.Fatalf("s3's tombstone after Reset: %+v, %v", h, err)
	}
	st, err = store.Load(ctx, session.Key{Tenant: "acme", Session: "s2"}, 100)
	if err != nil || len(st.Short.Entries()) != 3 {
		t.Fatalf("s2, not reset: %d entries, %v; want 3", len(st.Short.Entries()), err)
	}
}
