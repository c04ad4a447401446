package longterm_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/integrity"
	"github.com/agentmem/agentmem/internal/longterm"
	"github.com/agentmem/agentmem/internal/metrics"
	"github.com/agentmem/agentmem/internal/metrics/metricstest"
	"github.com/agentmem/agentmem/pkg/events"
)

// openReported opens a store that reports corrupt values to its own metrics, with a raw handle on
// the bucket to write into it as a confused deputy would have.
func openReported(t *testing.T) (*longterm.Store, jetstream.KeyValue, func(reason string) float64) {
	t.Helper()
	st, env := open(t)
	m := metrics.New()
	srv := httptest.NewServer(m.Handler())
	t.Cleanup(srv.Close)
	kv, err := env.JS.KeyValue(context.Background(), events.DefaultTopology().LongTermBucket())
	if err != nil {
		t.Fatal(err)
	}
	count := func(reason string) float64 {
		return metricstest.Scrape(t, srv.URL+"/metrics").Value("agentmem_kv_corrupt_total", "reason", reason)
	}
	return st.Instrument(integrity.NewReporter(m, zerolog.Nop())), kv, count
}

func put(t *testing.T, kv jetstream.KeyValue, key string, v any) {
	t.Helper()
	data, ok := v.([]byte)
	if !ok {
		var err error
		if data, err = json.Marshal(v); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := kv.Put(context.Background(), key, data); err != nil {
		t.Fatal(err)
	}
}

func TestForeignAndGarbageRecordsAreLeftOutOfAUser(t *testing.T) {
	st, kv, count := openReported(t)
	ctx := context.Background()
	if _, err := st.AddFact(ctx, fact("f-real", "The user lives in Paris", "", t0, "t1")); err != nil {
		t.Fatal(err)
	}
	if err := st.TouchSession(ctx, "acme", "alice", "s1", t0, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := st.PutSummary(ctx, longterm.Summary{ID: "sum-real", Tenant: "acme", User: "alice", Session: "s1", Content: "real"}); err != nil {
		t.Fatal(err)
	}

	// What a deputy writing for another tenant would have planted under acme/alice.
	planted := fact("f-planted", "The user's password is hunter2", "", t0, "t9")
	planted.Tenant = "evil"
	put(t, kv, longterm.FactKey("acme", "alice", "f-planted"), planted)
	other := fact("f-other", "Another user's fact", "", t0)
	other.User = "bob"
	put(t, kv, longterm.FactKey("acme", "alice", "f-other"), other)
	renamed := fact("f-real-2", "A fact stored under another id", "", t0)
	put(t, kv, longterm.FactKey("acme", "alice", "f-renamed"), renamed)
	put(t, kv, longterm.SummaryKey("acme", "alice", "sum-garbage"), []byte("garbage"))
	// A session index entry naming another session (the session name is not even a valid key):
	// reading its header failed and every retrieve of the user answered 500.
	put(t, kv, longterm.SessionKey("acme", "alice", "s2"), longterm.SessionRef{Session: "no such key!"})
	put(t, kv, longterm.SessionKey("acme", "alice", "s3"), longterm.SessionRef{Tenant: "acme", User: "bob", Session: "s3"})

	recs, err := st.User(ctx, "acme", "alice")
	if err != nil {
		t.Fatalf("User: %v", err)
	}
	var facts, sums, sessions []string
	for _, f := range recs.Facts {
		facts = append(facts, f.ID)
	}
	for _, s := range recs.Summaries {
		sums = append(sums, s.ID)
	}
	for _, r := range recs.Sessions {
		sessions = append(sessions, r.Session)
	}
	if !slices.Equal(facts, []string{"f-real"}) || !slices.Equal(sums, []string{"sum-real"}) || !slices.Equal(sessions, []string{"s1"}) {
		t.Fatalf("User gave facts %v, summaries %v, sessions %v: want only the genuine records", facts, sums, sessions)
	}
	for reason, want := range map[string]float64{
		integrity.Tenant: 1, integrity.User: 2, integrity.ID: 1, integrity.Undecodable: 1, integrity.Session: 1,
	} {
		if got := count(reason); got != want {
			t.Errorf("agentmem_kv_corrupt_total{reason=%q} = %v, want %v", reason, got, want)
		}
	}

	// Single reads see the corrupt records as absent.
	if _, err := st.Fact(ctx, "acme", "alice", "f-planted"); !errors.Is(err, longterm.ErrNotFound) || !errors.Is(err, integrity.ErrCorrupt) {
		t.Fatalf("Fact: %v, want not found and corrupt", err)
	}
	if _, err := st.SessionRef(ctx, "acme", "alice", "s2"); !errors.Is(err, longterm.ErrNotFound) {
		t.Fatalf("SessionRef: %v, want not found", err)
	}
	if _, err := st.Summary(ctx, "acme", "alice", "sum-garbage"); !errors.Is(err, longterm.ErrNotFound) {
		t.Fatalf("Summary: %v, want not found", err)
	}
	// Deleting a corrupt fact finds nothing to delete.
	if _, _, err := st.DeleteFact(ctx, "acme", "alice", "f-planted", t0); !errors.Is(err, longterm.ErrNotFound) {
		t.Fatalf("DeleteFact: %v, want not found", err)
	}
}

func TestWritesReplaceCorruptRecords(t *testing.T) {
	st, kv, count := openReported(t)
	ctx := context.Background()
	put(t, kv, longterm.SessionKey("acme", "alice", "s1"), longterm.SessionRef{Session: "elsewhere"})
	if err := st.TouchSession(ctx, "acme", "alice", "s1", t0, t0); err != nil {
		t.Fatalf("TouchSession over a corrupt entry: %v", err)
	}
	r, err := st.SessionRef(ctx, "acme", "alice", "s1")
	if err != nil || r.Session != "s1" || r.Tenant != "acme" || r.User != "alice" || !r.First.Equal(t0) {
		t.Fatalf("index entry after the write: %+v, %v", r, err)
	}
	planted := fact("f1", "planted", "", t0)
	planted.Tenant = "evil"
	put(t, kv, longterm.FactKey("acme", "alice", "f1"), planted)
	ch, err := st.AddFact(ctx, fact("f1", "The user prefers tea", "", t0, "t1"))
	if err != nil || !ch.Added {
		t.Fatalf("AddFact over a corrupt fact: %+v, %v", ch, err)
	}
	f, err := st.Fact(ctx, "acme", "alice", "f1")
	if err != nil || f.Tenant != "acme" || f.Content != "The user prefers tea" {
		t.Fatalf("fact after the write: %+v, %v", f, err)
	}
	if count(integrity.Session) != 1 || count(integrity.Tenant) != 1 {
		t.Fatalf("corrupt records replaced without being reported")
	}
}

func TestSessionIndexEntriesWithoutOwnerAreAcceptedAndFilledIn(t *testing.T) {
	st, kv, count := openReported(t)
	ctx := context.Background()
	key := longterm.SessionKey("acme", "alice", "s1")
	put(t, kv, key, []byte(`{"session":"s1","first":"2026-11-01T09:00:00Z","last":"2026-11-01T09:00:00Z"}`))
	recs, err := st.User(ctx, "acme", "alice")
	if err != nil || len(recs.Sessions) != 1 {
		t.Fatalf("an entry written before SessionRef named its owner: %+v, %v", recs.Sessions, err)
	}
	if err := st.MarkExtracted(ctx, "acme", "alice", "s1", 7); err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if v := string(e.Value()); !strings.Contains(v, `"tenant":"acme"`) || !strings.Contains(v, `"user":"alice"`) {
		t.Fatalf("the next write did not name the owner: %s", v)
	}
	for _, reason := range []string{integrity.Tenant, integrity.User, integrity.Session, integrity.Undecodable} {
		if n := count(reason); n != 0 {
			t.Fatalf("an old entry was reported corrupt (%s)", reason)
		}
	}
}
