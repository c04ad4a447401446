package longterm_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/longterm"
)

// stated is a fact whose statements carry their times, as the extractor stores them.
func stated(id, content string, at time.Time, turns ...string) longterm.Fact {
	f := fact(id, content, "user.city", at, turns...)
	f.StatedAt = map[string]time.Time{}
	for _, t := range turns {
		f.StatedAt[t] = at
	}
	return f
}

// Two facts of one key stated at the same instant (turns of one session often share a time)
// settle on one live fact whatever the order, and storing them ends: a statement made at the
// very instant its fact was superseded belongs to the version that ended, not to a new one.
func TestFactsOfOneKeyStatedAtTheSameInstant(t *testing.T) {
	winner := ""
	for _, order := range [][]int{{0, 1, 2, 3}, {1, 0, 3, 2}, {2, 3, 0, 1}, {3, 1, 2, 0}} {
		store, _ := open(t)
		ctx := context.Background()
		facts := []longterm.Fact{
			stated("f-paris", "The user lives in Paris", t0, "t1"),
			stated("f-lisbon", "The user lives in Lisbon", t0, "t2"),
			stated("f-paris", "The user lives in Paris", t0, "t3"),
			stated("f-rome", "The user lives in Rome", t0, "t4"),
		}
		for _, i := range order {
			if _, err := store.AddFact(ctx, facts[i]); err != nil {
				t.Fatalf("order %v, fact %d: %v", order, i, err)
			}
		}
		live := liveContents(t, store)
		if len(live) != 1 {
			t.Fatalf("order %v: live facts %v, want exactly one", order, live)
		}
		recs, err := store.User(ctx, "acme", "alice")
		if err != nil {
			t.Fatal(err)
		}
		if len(recs.Facts) != 3 {
			var ids []string
			for _, f := range recs.Facts {
				ids = append(ids, f.ID)
			}
			t.Fatalf("order %v: %d facts stored (%v), want Paris, Lisbon and Rome once each", order, len(recs.Facts), ids)
		}
		if winner == "" {
			winner = live[0]
		} else if live[0] != winner {
			t.Fatalf("order %v: %q is live, another order left %q: the outcome must not depend on the order", order, live[0], winner)
		}
	}
}
