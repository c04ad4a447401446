package longterm_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/longterm"
	"github.com/agentmem/agentmem/pkg/events"
)

func open(t *testing.T) (*longterm.Store, *brokertest.Env) {
	t.Helper()
	env := brokertest.Start(t)
	topo := events.DefaultTopology()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := topo.Ensure(ctx, env.JS); err != nil {
		t.Fatal(err)
	}
	st, err := longterm.Open(ctx, env.JS, topo)
	if err != nil {
		t.Fatal(err)
	}
	return st, env
}

var t0 = time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)

func fact(id, content, key string, at time.Time, prov ...string) longterm.Fact {
	return longterm.Fact{ID: id, Tenant: "acme", User: "alice", Content: content, Category: "identity", Key: key,
		ValidFrom: at, Provenance: prov, Confidence: 0.9, Extractor: "rules"}
}

func TestRacingWritersStoreAFactOnceWithEarliestTimeAndUnionOfProvenance(t *testing.T) {
	store, _ := open(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	added := make(chan bool, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ch, err := store.AddFact(ctx, fact("f1", "The user prefers tea", "", t0.Add(time.Duration(8-i)*time.Hour), fmt.Sprintf("turn-%d", i)))
			if err != nil {
				t.Error(err)
				return
			}
			added <- ch.Added
		}()
	}
	wg.Wait()
	close(added)
	n := 0
	for a := range added {
		if a {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d writers report creating the fact, want exactly 1", n)
	}
	f, err := store.Fact(ctx, "acme", "alice", "f1")
	if err != nil {
		t.Fatal(err)
	}
	if !f.ValidFrom.Equal(t0.Add(time.Hour)) {
		t.Errorf("valid_from %s, want the earliest %s", f.ValidFrom, t0.Add(time.Hour))
	}
	slices.Sort(f.Provenance)
	want := []string{"turn-0", "turn-1", "turn-2", "turn-3", "turn-4", "turn-5", "turn-6", "turn-7"}
	if !slices.Equal(f.Provenance, want) {
		t.Errorf("provenance %v, want the union %v", f.Provenance, want)
	}
	// Adding it again changes nothing.
	ch, err := store.AddFact(ctx, fact("f1", "The user prefers tea", "", t0.Add(5*time.Hour), "turn-3"))
	if err != nil || ch.Added {
		t.Fatalf("re-adding: %+v %v", ch, err)
	}
}

func TestKeyedFactSupersedesWhateverTheOrder(t *testing.T) {
	for _, order := range [][]string{{"paris", "berlin"}, {"berlin", "paris"}} {
		t.Run(order[0]+"-first", func(t *testing.T) {
			store, _ := open(t)
			ctx := context.Background()
			facts := map[string]longterm.Fact{
				"paris":  fact("f-paris", "The user lives in Paris", "user.city", t0, "t1"),
				"berlin": fact("f-berlin", "The user moved to Berlin", "user.city", t0.Add(7*24*time.Hour), "t9"),
			}
			for _, name := range order {
				if _, err := store.AddFact(ctx, facts[name]); err != nil {
					t.Fatal(err)
				}
			}
			recs, err := store.User(ctx, "acme", "alice")
			if err != nil {
				t.Fatal(err)
			}
			var live []string
			for _, f := range recs.Facts {
				if f.Live() {
					live = append(live, f.Content)
				}
			}
			if !slices.Equal(live, []string{"The user moved to Berlin"}) {
				t.Fatalf("live facts %v, want only Berlin", live)
			}
			paris, _ := store.Fact(ctx, "acme", "alice", "f-paris")
			if paris.ValidTo == nil || !paris.ValidTo.Equal(t0.Add(7*24*time.Hour)) || paris.SupersededBy != "f-berlin" {
				t.Fatalf("Paris in the history: valid_to %v superseded_by %q", paris.ValidTo, paris.SupersededBy)
			}
			if !paris.LiveAt(t0.Add(24*time.Hour)) || paris.LiveAt(t0.Add(8*24*time.Hour)) {
				t.Fatal("Paris must be valid between its statement and the move, not after")
			}
		})
	}
}

func TestSummariesSessionsAndForget(t *testing.T) {
	store, env := open(t)
	ctx := context.Background()
	sum := longterm.Summary{ID: "sum_1", Tenant: "acme", User: "alice", Session: "s1", Content: "[Conversation summary] …", Timestamp: t0}
	for i := range 2 {
		created, err := store.PutSummary(ctx, sum)
		if err != nil || created != (i == 0) {
			t.Fatalf("put %d: created=%t err=%v", i, created, err)
		}
	}
	if err := store.TouchSession(ctx, "acme", "alice", "s1", t0, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := store.TouchSession(ctx, "acme", "alice", "s1", t0.Add(-time.Hour), t0); err != nil {
		t.Fatal(err)
	}
	if err := store.MarkExtracted(ctx, "acme", "alice", "s1", 42); err != nil {
		t.Fatal(err)
	}
	if err := store.MarkExtracted(ctx, "acme", "alice", "s1", 7); err != nil {
		t.Fatal(err)
	}
	ref, err := store.SessionRef(ctx, "acme", "alice", "s1")
	if err != nil || !ref.First.Equal(t0.Add(-time.Hour)) || !ref.Last.Equal(t0.Add(time.Hour)) || ref.ExtractedSeq != 42 {
		t.Fatalf("session ref %+v %v", ref, err)
	}
	if _, err := store.AddFact(ctx, fact("f1", "The user prefers tea", "", t0, "t1")); err != nil {
		t.Fatal(err)
	}
	bob := fact("f2", "Bob likes Rust", "", t0, "t2")
	bob.User = "bob"
	if _, err := store.AddFact(ctx, bob); err != nil {
		t.Fatal(err)
	}
	n, err := store.Forget(ctx, "acme", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if n < 3 {
		t.Errorf("forget removed %d messages", n)
	}
	recs, err := store.User(ctx, "acme", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs.Facts)+len(recs.Summaries)+len(recs.Sessions) != 0 {
		t.Fatalf("alice still has %+v", recs)
	}
	// Nothing is left in the bucket's stream for alice, history included.
	s, err := env.JS.Stream(ctx, "KV_AGENTMEM_LONGTERM")
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for subj := range info.State.Subjects {
		t.Logf("left: %s", subj)
	}
	if _, err := store.Fact(ctx, "acme", "bob", "f2"); err != nil {
		t.Fatalf("bob's fact went with alice's: %v", err)
	}
	if _, err := store.Fact(ctx, "acme", "alice", "f1"); !errors.Is(err, longterm.ErrNotFound) {
		t.Fatalf("alice's fact after forget: %v", err)
	}
}
