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

// Reset removes a user's facts (and their key slots) and session index, and keeps the user's
// summaries and everything of other users: what a rebuild replays the user's sessions into.
func TestResetKeepsSummaries(t *testing.T) {
	store, _ := open(t)
	ctx := context.Background()
	if _, err := store.PutSummary(ctx, longterm.Summary{ID: "sum_1", Tenant: "acme", User: "alice", Session: "s1", Content: "…", Timestamp: t0}); err != nil {
		t.Fatal(err)
	}
	if err := store.TouchSession(ctx, "acme", "alice", "s1", t0, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := store.AddFact(ctx, fact("f1", "The user lives in Paris", "user.city", t0, "t1")); err != nil {
		t.Fatal(err)
	}
	bob := fact("f2", "Bob likes Rust", "", t0, "t2")
	bob.User = "bob"
	if _, err := store.AddFact(ctx, bob); err != nil {
		t.Fatal(err)
	}
	if n, err := store.Reset(ctx, "acme", "alice"); err != nil || n != 3 { // the fact, its key's slot, the index
		t.Fatalf("Reset removed %d messages, %v; want 3", n, err)
	}
	recs, err := store.User(ctx, "acme", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs.Facts) != 0 || len(recs.Sessions) != 0 || len(recs.Summaries) != 1 {
		t.Fatalf("after Reset alice has %d facts, %d sessions, %d summaries; want 0, 0, 1", len(recs.Facts), len(recs.Sessions), len(recs.Summaries))
	}
	// The key's slot went with the fact: the same fact stored again holds the key again.
	if _, err := store.AddFact(ctx, fact("f1", "The user lives in Paris", "user.city", t0, "t1")); err != nil {
		t.Fatal(err)
	}
	if live := liveContents(t, store); !slices.Equal(live, []string{"The user lives in Paris"}) {
		t.Fatalf("live after storing the fact again: %v", live)
	}
	if _, err := store.Fact(ctx, "acme", "bob", "f2"); err != nil {
		t.Fatalf("bob's fact went with alice's reset: %v", err)
	}
}

// liveContents lists the contents of the user's live facts.
func liveContents(t *testing.T, store *longterm.Store) []string {
	t.Helper()
	recs, err := store.User(context.Background(), "acme", "alice")
	if err != nil {
		t.Fatal(err)
	}
	var live []string
	for _, f := range recs.Facts {
		if f.Live() {
			live = append(live, f.Content)
		}
	}
	return live
}

func TestRestatedFactIsLiveAgainAsANewVersion(t *testing.T) {
	store, _ := open(t)
	ctx := context.Background()
	day := 24 * time.Hour
	paris := func(at time.Time, turn string) longterm.Fact {
		return fact(fact1ID, "The user lives in Paris", "user.city", at, turn)
	}
	for _, f := range []longterm.Fact{
		paris(t0, "t1"),
		fact("f-lisbon", "The user lives in Lisbon", "user.city", t0.Add(day), "t2"),
		paris(t0.Add(2*day), "t3"),
	} {
		if _, err := store.AddFact(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	if live := liveContents(t, store); !slices.Equal(live, []string{"The user lives in Paris"}) {
		t.Fatalf("live facts %v, want Paris again", live)
	}
	v2ID := longterm.VersionID(fact1ID)
	v2, err := store.Fact(ctx, "acme", "alice", v2ID)
	if err != nil {
		t.Fatal(err)
	}
	if !v2.Live() || !v2.ValidFrom.Equal(t0.Add(2*day)) || !slices.Equal(v2.Provenance, []string{"t3"}) ||
		v2.Restates != fact1ID || v2.Version != 2 {
		t.Fatalf("the restated version: %+v", v2)
	}
	first, _ := store.Fact(ctx, "acme", "alice", fact1ID)
	if first.SupersededBy != "f-lisbon" || !slices.Equal(first.Provenance, []string{"t1"}) || !first.LiveAt(t0.Add(time.Hour)) {
		t.Fatalf("the first version must stay in the history as it was: %+v", first)
	}
	lisbon, _ := store.Fact(ctx, "acme", "alice", "f-lisbon")
	if lisbon.SupersededBy != v2ID || lisbon.ValidTo == nil || !lisbon.ValidTo.Equal(t0.Add(2*day)) {
		t.Fatalf("Lisbon must end at the restatement: %+v", lisbon)
	}
	if !lisbon.LiveAt(t0.Add(day+time.Hour)) || first.LiveAt(t0.Add(day+time.Hour)) {
		t.Fatal("between the move and the restatement Lisbon holds")
	}

	// Stated once more while version 2 holds: merged into it, no third version.
	ch, err := store.AddFact(ctx, paris(t0.Add(3*day), "t4"))
	if err != nil || ch.Added || ch.Fact.ID != v2ID || !slices.Equal(ch.Fact.Provenance, []string{"t3", "t4"}) {
		t.Fatalf("a statement while version 2 holds: %+v %v", ch, err)
	}
	// A redelivery of the first statement changes nothing.
	if ch, err := store.AddFact(ctx, paris(t0, "t1")); err != nil || ch.Added || ch.Fact.ID != fact1ID {
		t.Fatalf("the first statement again: %+v %v", ch, err)
	}
	// Replaced once more and stated again: version 3.
	if _, err := store.AddFact(ctx, fact("f-rome", "The user lives in Rome", "user.city", t0.Add(4*day), "t5")); err != nil {
		t.Fatal(err)
	}
	ch, err = store.AddFact(ctx, paris(t0.Add(5*day), "t6"))
	if err != nil || !ch.Added || ch.Fact.ID != longterm.VersionID(v2ID) || ch.Fact.Version != 3 || len(ch.Superseded) != 1 || ch.Superseded[0].ID != "f-rome" {
		t.Fatalf("the third version: %+v %v", ch, err)
	}
	if live := liveContents(t, store); !slices.Equal(live, []string{"The user lives in Paris"}) {
		t.Fatalf("live facts %v, want Paris", live)
	}
}

const fact1ID = "fact_paris"

func TestRestatedAfterDeleteIsLiveAgain(t *testing.T) {
	store, _ := open(t)
	ctx := context.Background()
	if _, err := store.AddFact(ctx, fact("f-tea", "The user prefers tea", "", t0, "t1")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := store.DeleteFact(ctx, "acme", "alice", "f-tea", t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	// The statement before the delete, delivered again, stays deleted.
	if ch, err := store.AddFact(ctx, fact("f-tea", "The user prefers tea", "", t0, "t1")); err != nil || ch.Added || !ch.Fact.Deleted {
		t.Fatalf("the deleted statement again: %+v %v", ch, err)
	}
	if live := liveContents(t, store); len(live) != 0 {
		t.Fatalf("live %v after the delete", live)
	}
	ch, err := store.AddFact(ctx, fact("f-tea", "The user prefers tea", "", t0.Add(2*time.Hour), "t2"))
	if err != nil || !ch.Added || ch.Fact.Restates != "f-tea" || !slices.Equal(ch.Fact.Provenance, []string{"t2"}) {
		t.Fatalf("stated after the delete: %+v %v", ch, err)
	}
	if live := liveContents(t, store); !slices.Equal(live, []string{"The user prefers tea"}) {
		t.Fatalf("live %v, want tea again", live)
	}
}

func TestOneExtractionSplitsAtTheEnd(t *testing.T) {
	store, _ := open(t)
	ctx := context.Background()
	day := 24 * time.Hour
	for _, f := range []longterm.Fact{
		fact(fact1ID, "The user lives in Paris", "user.city", t0, "t1"),
		fact("f-lisbon", "The user lives in Lisbon", "user.city", t0.Add(day), "t2"),
	} {
		if _, err := store.AddFact(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	// One statement before the move (a late extraction) and one after it.
	f := fact(fact1ID, "The user lives in Paris", "user.city", t0.Add(time.Hour), "t1b", "t3")
	f.StatedAt = map[string]time.Time{"t1b": t0.Add(time.Hour), "t3": t0.Add(2 * day)}
	ch, err := store.AddFact(ctx, f)
	if err != nil || !ch.Added || !slices.Equal(ch.Fact.Provenance, []string{"t3"}) || !ch.Fact.ValidFrom.Equal(t0.Add(2*day)) {
		t.Fatalf("the restated part: %+v %v", ch, err)
	}
	first, _ := store.Fact(ctx, "acme", "alice", fact1ID)
	if !slices.Equal(first.Provenance, []string{"t1", "t1b"}) {
		t.Fatalf("the first version keeps what was said while it held: %v", first.Provenance)
	}
}

// TestRestatementStoredBeforeTheChangeItRestates: Paris stated on day 0 and again on day 2, both
// stored before Lisbon (day 1) arrives: Lisbon supersedes the first Paris, and Paris's day-2
// statement becomes its next version, which supersedes Lisbon. The same end as in order.
func TestRestatementStoredBeforeTheChangeItRestates(t *testing.T) {
	store, _ := open(t)
	ctx := context.Background()
	day := 24 * time.Hour
	paris := fact(fact1ID, "The user lives in Paris", "user.city", t0, "t1", "t3")
	paris.StatedAt = map[string]time.Time{"t1": t0, "t3": t0.Add(2 * day), "unrelated": t0}
	if _, err := store.AddFact(ctx, paris); err != nil {
		t.Fatal(err)
	}
	ch, err := store.AddFact(ctx, fact("f-lisbon", "The user lives in Lisbon", "user.city", t0.Add(day), "t2"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ch.Restated) != 1 || ch.Restated[0].Fact.ID != longterm.VersionID(fact1ID) || !ch.Restated[0].Added {
		t.Fatalf("the change: %+v, want Paris restated as its second version", ch)
	}
	if live := liveContents(t, store); !slices.Equal(live, []string{"The user lives in Paris"}) {
		t.Fatalf("live facts %v, want Paris", live)
	}
	v2, _ := store.Fact(ctx, "acme", "alice", longterm.VersionID(fact1ID))
	if !v2.ValidFrom.Equal(t0.Add(2*day)) || !slices.Equal(v2.Provenance, []string{"t3"}) {
		t.Fatalf("Paris's second version: %+v", v2)
	}
	lisbon, _ := store.Fact(ctx, "acme", "alice", "f-lisbon")
	if lisbon.SupersededBy != v2.ID || !lisbon.LiveAt(t0.Add(day+time.Hour)) || lisbon.LiveAt(t0.Add(2*day)) {
		t.Fatalf("Lisbon holds between the move and the restatement: %+v", lisbon)
	}
	first, _ := store.Fact(ctx, "acme", "alice", fact1ID)
	if _, ok := first.StatedAt["unrelated"]; ok || len(first.StatedAt) != 2 {
		t.Fatalf("the stored times are the provenance's only: %v", first.StatedAt)
	}
}

// TestOlderFactWithALaterRestatement: Lisbon (day 1) is stored first, then Paris stated on day 0
// and again on day 2: Paris goes into the history before Lisbon, and its day-2 statement is its
// next version, live.
func TestOlderFactWithALaterRestatement(t *testing.T) {
	store, _ := open(t)
	ctx := context.Background()
	day := 24 * time.Hour
	if _, err := store.AddFact(ctx, fact("f-lisbon", "The user lives in Lisbon", "user.city", t0.Add(day), "t2")); err != nil {
		t.Fatal(err)
	}
	paris := fact(fact1ID, "The user lives in Paris", "user.city", t0, "t1", "t3")
	paris.StatedAt = map[string]time.Time{"t1": t0, "t3": t0.Add(2 * day)}
	ch, err := store.AddFact(ctx, paris)
	if err != nil || ch.SupersededBy != "f-lisbon" || len(ch.Restated) != 1 {
		t.Fatalf("the change: %+v %v", ch, err)
	}
	if live := liveContents(t, store); !slices.Equal(live, []string{"The user lives in Paris"}) {
		t.Fatalf("live facts %v, want Paris", live)
	}
	if lisbon, _ := store.Fact(ctx, "acme", "alice", "f-lisbon"); lisbon.SupersededBy != longterm.VersionID(fact1ID) {
		t.Fatalf("Lisbon: %+v", lisbon)
	}
}
