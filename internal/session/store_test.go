package session_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/pkg/events"
	"github.com/agentmem/agentmem/pkg/memory"
)

func newStore(t *testing.T) (*session.Store, *brokertest.Env) {
	t.Helper()
	env := brokertest.Start(t)
	topo := events.DefaultTopology()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := topo.Ensure(ctx, env.JS); err != nil {
		t.Fatal(err)
	}
	st, err := session.NewStore(ctx, env.JS, topo)
	if err != nil {
		t.Fatal(err)
	}
	return st, env
}

func entry(id, role string, tokens int, seq uint64) memory.Entry {
	return memory.Entry{
		ID: id, Type: memory.TypeForRole(role), Role: role, Tokens: tokens, Seq: seq, Content: "text of " + id,
		Timestamp: time.Date(2026, 11, 30, 10, 0, int(seq), 0, time.UTC), Metadata: map[string]any{"k": "v"},
	}
}

func ids(es []memory.Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.ID)
	}
	return out
}

func TestCommitLoadRoundTrip(t *testing.T) {
	store, _ := newStore(t)
	ctx := context.Background()
	key := session.Key{Tenant: "acme", Session: "s1"}
	s, err := store.Load(ctx, key, 100)
	if err != nil {
		t.Fatal(err)
	}
	if s.Revision() != 0 {
		t.Fatalf("new session has revision %d", s.Revision())
	}
	for i := range 6 {
		s.Add(entry(fmt.Sprintf("t%d", i), []string{"user", "assistant"}[i%2], 30, uint64(i+1)), 100, "alice")
		s.Advance(uint64(i+1), time.Now())
		if i%2 == 1 {
			if _, err := store.Commit(ctx, s); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := s.Name([]string{"t0", "t1", "t2"}, memory.Entry{ID: "sum1", Type: memory.Summary, Tokens: 10}); err != nil {
		t.Fatal(err)
	}
	s.ApplySummary(memory.Entry{ID: "sum1", Type: memory.Summary, Content: "alice likes Go", Tokens: 3})
	s.Reject(7, "bad", "content is empty")
	s.End("end-1", 8, time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC))
	s.Advance(9, time.Now())
	writes, err := store.Commit(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if writes != 2 {
		t.Errorf("a commit wrote %d values, want one chunk and the header", writes)
	}

	got, err := store.Load(ctx, key, 999)
	if err != nil {
		t.Fatal(err)
	}
	if got.Header.User != "alice" || got.Header.Turns != 6 || got.Header.Rejected != 1 || !got.Header.Ended ||
		got.Header.LastSeq != 9 || got.Header.Chunks != 4 || got.Header.Pressures != 1 || got.Header.Summaries != 1 {
		t.Errorf("header %+v", got.Header)
	}
	if want := ids(s.Short.Entries()); !slices.Equal(ids(got.Short.Entries()), want) {
		t.Errorf("entries %v, want %v", ids(got.Short.Entries()), want)
	}
	sum, ok := got.Short.Get("sum1")
	if !ok || sum.Content != "alice likes Go" || sum.Tokens != 10 || !slices.Equal(sum.Provenance, []string{"t0", "t1", "t2"}) {
		t.Errorf("summary %+v: want its text, the accounted 10 tokens and the covered turns", sum)
	}
	if got.Short.Budget() != 100 || got.Short.Tokens() != s.Short.Tokens() {
		t.Errorf("budget %d tokens %d; want 100 and %d (the recorded budget, not the loader's)", got.Short.Budget(), got.Short.Tokens(), s.Short.Tokens())
	}
	for _, id := range []string{"t0", "t5", "end-1"} {
		if !got.Seen(id) {
			t.Errorf("%s not seen after reload", id)
		}
	}
	if got.Seen("bad") {
		t.Error("a rejected id counts as seen")
	}
	if e, _ := got.Short.Get("t4"); e.Content != "" || e.Metadata != nil {
		t.Errorf("chunks must not hold turn text or metadata: %+v", e)
	}
}

func TestConcurrentWritersOneWinsLoserLeavesNoTrace(t *testing.T) {
	store, _ := newStore(t)
	ctx := context.Background()
	key := session.Key{Tenant: "acme", Session: "race"}
	base, _ := store.Load(ctx, key, 1000)
	base.Add(entry("t0", "user", 5, 1), 1000, "alice")
	base.Advance(1, time.Now())
	if _, err := store.Commit(ctx, base); err != nil {
		t.Fatal(err)
	}
	a, _ := store.Load(ctx, key, 1000)
	b, _ := store.Load(ctx, key, 1000)
	a.Add(entry("a1", "assistant", 5, 2), 1000, "")
	a.Advance(2, time.Now())
	b.Add(entry("b1", "assistant", 5, 2), 1000, "")
	b.Add(entry("b2", "user", 5, 3), 1000, "")
	b.Advance(3, time.Now())
	if _, err := store.Commit(ctx, a); err != nil {
		t.Fatal(err)
	}
	_, err := store.Commit(ctx, b)
	if !errors.Is(err, session.ErrConflict) {
		t.Fatalf("second writer: %v, want ErrConflict", err)
	}
	got, _ := store.Load(ctx, key, 1000)
	if g := ids(got.Short.Entries()); !slices.Equal(g, []string{"t0", "a1"}) {
		t.Fatalf("entries %v: the losing writer's orphan chunk must not be visible", g)
	}
	// The loser reloads and carries on from the winner's state.
	b, _ = store.Load(ctx, key, 1000)
	b.Add(entry("b2", "user", 5, 3), 1000, "")
	b.Advance(3, time.Now())
	if _, err := store.Commit(ctx, b); err != nil {
		t.Fatal(err)
	}
	// A reader that refreshes picks up exactly the new chunk.
	if changed, err := store.Refresh(ctx, a); err != nil || !changed {
		t.Fatalf("refresh: changed=%t err=%v", changed, err)
	}
	if g := ids(a.Short.Entries()); !slices.Equal(g, []string{"t0", "a1", "b2"}) {
		t.Fatalf("after refresh %v", g)
	}
	// Creating a session that another writer created meanwhile is a conflict too.
	k2 := session.Key{Tenant: "acme", Session: "new"}
	x, _ := store.Load(ctx, k2, 10)
	y, _ := store.Load(ctx, k2, 10)
	x.Advance(1, time.Now())
	y.Advance(1, time.Now())
	if _, err := store.Commit(ctx, x); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Commit(ctx, y); !errors.Is(err, session.ErrConflict) {
		t.Fatalf("second create: %v, want ErrConflict", err)
	}
}

func TestLargeBatchSplitsIntoChunksUnderTheValueLimit(t *testing.T) {
	store, _ := newStore(t)
	ctx := context.Background()
	key := session.Key{Tenant: "acme", Session: "big"}
	s, _ := store.Load(ctx, key, 10_000_000)
	long := strings.Repeat("x", 200)
	for i := range 5000 {
		e := entry(fmt.Sprintf("turn-%05d-%s", i, long), "user", 3, uint64(i+1))
		s.Add(e, 10_000_000, "alice")
	}
	s.Advance(5000, time.Now())
	writes, err := store.Commit(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if writes < 3 {
		t.Fatalf("%d writes: ~1.2 MB of operations should need several chunks", writes)
	}
	got, err := store.Load(ctx, key, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got.Short.Len() != 5000 || got.Header.Chunks != writes-1 {
		t.Fatalf("reloaded %d entries in %d chunks", got.Short.Len(), got.Header.Chunks)
	}
}

func TestSummaryIDDependsOnTurnsOnly(t *testing.T) {
	k := session.Key{Tenant: "a", Session: "s"}
	x := session.SummaryID(k, []string{"t1", "t2"})
	if x != session.SummaryID(k, []string{"t1", "t2"}) {
		t.Fatal("not deterministic")
	}
	for _, other := range []string{
		session.SummaryID(k, []string{"t2", "t1"}),
		session.SummaryID(k, []string{"t1t2"}),
		session.SummaryID(session.Key{Tenant: "b", Session: "s"}, []string{"t1", "t2"}),
	} {
		if other == x {
			t.Fatalf("collision: %s", x)
		}
	}
}

func TestListReadsEveryHeader(t *testing.T) {
	store, _ := newStore(t)
	ctx := context.Background()
	for i := range 3 {
		s, _ := store.Load(ctx, session.Key{Tenant: "acme", Session: fmt.Sprintf("l%d", i)}, 100)
		s.Add(entry(fmt.Sprintf("t%d", i), "user", 5, uint64(i+1)), 100, "alice")
		s.Advance(uint64(i+1), time.Now())
		if _, err := store.Commit(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	if err := store.List(ctx, func(h session.Header) error {
		got = append(got, h.Session)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{"l0", "l1", "l2"}) {
		t.Fatalf("listed %v", got)
	}
}

// A decisions-only state read from the store knows the header and which messages were applied,
// like a full one, without holding the entries; it cannot be committed.
func TestDecisionsOnlyState(t *testing.T) {
	env := brokertest.Start(t)
	ctx := context.Background()
	topo := events.DefaultTopology()
	if err := topo.Ensure(ctx, env.JS); err != nil {
		t.Fatal(err)
	}
	store, err := session.NewStore(ctx, env.JS, topo)
	if err != nil {
		t.Fatal(err)
	}
	k := session.Key{Tenant: "acme", Session: "d1"}
	full := session.NewState(k, 1000)
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	for i := range 5 {
		id := fmt.Sprintf("t%d", i)
		full.Add(memory.Entry{ID: id, Type: memory.Conversation, Content: "x", Tokens: 10, Timestamp: at, Seq: uint64(i + 1)}, 1000, "alice")
		full.Advance(uint64(i+1), at)
		if i == 2 {
			if _, err := store.Commit(ctx, full); err != nil { // two chunks
				t.Fatal(err)
			}
		}
	}
	full.Reject(6, "t9", "bad")
	full.Advance(6, at)
	if _, err := store.Commit(ctx, full); err != nil {
		t.Fatal(err)
	}
	d := session.NewDecisions(k)
	if _, err := store.Refresh(ctx, d); err != nil {
		t.Fatal(err)
	}
	if d.Header.User != "alice" || d.Header.LastSeq != 6 || d.Header.Turns != 5 || d.Header.Rejected != 1 {
		t.Fatalf("header %+v", d.Header)
	}
	for i := range 5 {
		if !d.AppliedAt(fmt.Sprintf("t%d", i), uint64(i+1)) {
			t.Fatalf("t%d not applied", i)
		}
	}
	if d.AppliedAt("t9", 6) || d.AppliedAt("t1", 6) {
		t.Fatal("a rejected message or a late copy reads as applied")
	}
	if n := len(d.Short.Entries()); n != 0 {
		t.Fatalf("a decisions-only state holds %d entries", n)
	}
	if _, err := store.Commit(ctx, d); err == nil {
		t.Fatal("a decisions-only state was committed")
	}
}
