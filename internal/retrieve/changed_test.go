package retrieve_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

// liveFact waits until the user has a live fact containing want and returns it.
func (e *env) liveFact(t *testing.T, user, want string) events.RetrievedEntry {
	t.Helper()
	var got events.RetrievedEntry
	brokertest.CheckFor(t, 20*time.Second, 50*time.Millisecond, func() error {
		// At the wall clock: a correction is stated now, after the test clock's "now".
		at := time.Now().Add(time.Hour)
		r, err := e.cl.Retrieve(context.Background(), events.RetrieveRequest{Query: want, User: user, Types: []string{"FACT"}, At: &at})
		if err != nil {
			return err
		}
		for _, f := range r.Entries {
			if strings.Contains(f.Content, want) {
				got = f
				return nil
			}
		}
		return fmt.Errorf("no live fact with %q among %d", want, len(r.Entries))
	})
	return got
}

// TestContextNeverContradictsItself: after a fact changed (by a later statement, in English or
// Chinese, or by a correction), the turn that stated the old value is marked with the fact that
// holds now, and the context shows it only as an earlier statement followed by what holds now.
// Asked at a time before the change, nothing is marked.
func TestContextNeverContradictsItself(t *testing.T) {
	for _, tc := range []struct {
		name, before, change, correction, query string
		oldFact, newFact                        string
	}{
		{name: "moved", before: "I live in Paris.", change: "I moved from Paris to Lisbon.", query: "where do I live?",
			oldFact: "Paris", newFact: "Lisbon"},
		{name: "corrected", before: "I live in Paris.", correction: "The user lives in Lisbon", query: "where do I live?",
			oldFact: "Paris", newFact: "Lisbon"},
		{name: "chinese", before: "我住在北京。", change: "我上个月从北京搬到了上海。", query: "我住在哪里？",
			oldFact: "北京", newFact: "上海"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := start(t)
			ctx := context.Background()
			user := "ann"
			e.seed(t, "s1", user, []client.Turn{{ID: "said-old", Content: tc.before}, {Role: "assistant", Content: "Noted."}})
			if _, err := e.cl.EndSession(ctx, "s1", user); err != nil {
				t.Fatal(err)
			}
			old := e.liveFact(t, user, tc.oldFact)
			changedAt := day.Add(24 * time.Hour)
			if tc.change != "" {
				e.seed(t, "s2", user, []client.Turn{{ID: "said-new", Content: tc.change, Time: changedAt}})
				if _, err := e.cl.EndSession(ctx, "s2", user); err != nil {
					t.Fatal(err)
				}
			} else if _, err := e.cl.Correct(ctx, user, old.ID, tc.correction); err != nil {
				t.Fatal(err)
			}
			now := e.liveFact(t, user, tc.newFact)
			at := time.Now().Add(time.Hour)
			r, err := e.cl.Retrieve(ctx, events.RetrieveRequest{Query: tc.query, User: user, Session: "s3", At: &at})
			if err != nil {
				t.Fatal(err)
			}
			var said *events.RetrievedEntry
			for i := range r.Entries {
				if r.Entries[i].ID == "said-old" {
					said = &r.Entries[i]
				}
			}
			if said == nil {
				t.Fatalf("the turn that said %q is not among the entries: %+v", tc.before, r.Entries)
			}
			if said.Metadata["superseded_by"] != now.ID || said.Metadata["superseded_fact"] != old.ID || said.Metadata["superseded_at"] == nil {
				t.Errorf("the old turn's metadata %v, want superseded_by %s, superseded_fact %s", said.Metadata, now.ID, old.ID)
			}
			checkNoContradiction(t, r.Context, tc.before, now.Content)

			// Asked before the change, the old value held: nothing is marked.
			if tc.change != "" {
				before := changedAt.Add(-time.Hour)
				r, err = e.cl.Retrieve(ctx, events.RetrieveRequest{Query: tc.query, User: user, At: &before})
				if err != nil {
					t.Fatal(err)
				}
				for _, en := range r.Entries {
					if en.Metadata["superseded_by"] != nil {
						t.Errorf("at %s, before the change, entry %s is marked superseded: %v", before, en.ID, en.Metadata)
					}
				}
				if strings.Contains(r.Context, "→") {
					t.Errorf("at %s the context marks a change that had not happened:\n%s", before, r.Context)
				}
			}
		})
	}
}

// checkNoContradiction: every context line with the old statement says what holds now after
// it, under the heading of changed statements, which follows the facts.
func checkNoContradiction(t *testing.T, context, oldStatement, nowContent string) {
	t.Helper()
	if !strings.Contains(context, nowContent) {
		t.Errorf("the context leaves out what holds now (%q):\n%s", nowContent, context)
	}
	lines := strings.Split(context, "\n")
	facts, changed, shown := -1, -1, false
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "## ") && (strings.Contains(l, "Known facts") || strings.Contains(l, "已知事实")):
			facts = i
		case strings.HasPrefix(l, "## ") && (strings.Contains(l, "since changed") || strings.Contains(l, "已变更")):
			changed = i
		case strings.Contains(l, oldStatement):
			shown = true
			if !strings.Contains(l, "→") || !strings.Contains(l, nowContent) {
				t.Errorf("the context line %q states the old value without what holds now:\n%s", l, context)
			}
			if changed < 0 || i < changed {
				t.Errorf("the old statement is not under the heading of changed statements:\n%s", context)
			}
		}
	}
	if !shown {
		t.Errorf("the old statement is not in the context at all (it should be shown as earlier):\n%s", context)
	}
	if facts < 0 || changed < facts {
		t.Errorf("the changed statements do not follow the facts:\n%s", context)
	}
}
