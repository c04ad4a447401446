package retrieve

import (
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/longterm"
	"github.com/agentmem/agentmem/pkg/events"
	"github.com/agentmem/agentmem/pkg/memory"
)

// TestChangesAt: which turns said what has changed, at a time, along a chain of supersessions,
// with a restatement and a correction.
func TestChangesAt(t *testing.T) {
	d := func(n int) time.Time { return time.Date(2026, 11, n, 0, 0, 0, 0, time.UTC) }
	tp := func(t time.Time) *time.Time { return &t }
	u := &userView{facts: map[string]longterm.Fact{
		// Paris (t1) -> Berlin (t2) -> Lisbon (t3): t1 and t2 said what changed.
		"paris":  {ID: "paris", Content: "The user lives in Paris", ValidFrom: d(1), ValidTo: tp(d(2)), SupersededBy: "berlin", Provenance: []string{"t1"}},
		"berlin": {ID: "berlin", Content: "The user lives in Berlin", ValidFrom: d(2), ValidTo: tp(d(3)), SupersededBy: "lisbon", Provenance: []string{"t2"}},
		"lisbon": {ID: "lisbon", Content: "The user lives in Lisbon", ValidFrom: d(3), Provenance: []string{"t3"}},
		// Tea (t4) -> coffee (t5) -> tea again (t6, the next version of tea): t4 holds again.
		"tea":    {ID: "tea", Content: "The user prefers tea", ValidFrom: d(1), ValidTo: tp(d(2)), SupersededBy: "coffee", Provenance: []string{"t4"}},
		"coffee": {ID: "coffee", Content: "The user prefers coffee", ValidFrom: d(2), ValidTo: tp(d(3)), SupersededBy: "tea2", Provenance: []string{"t5"}},
		"tea2":   {ID: "tea2", Content: "The user prefers tea", ValidFrom: d(3), Provenance: []string{"t6"}, Version: 2, Restates: "tea"},
		// A correction keeps the corrected fact's turn (t7), which said the old value.
		"rome":  {ID: "rome", Content: "The user works in Rome", ValidFrom: d(1), ValidTo: tp(d(2)), SupersededBy: "milan", Provenance: []string{"t7"}},
		"milan": {ID: "milan", Content: "The user works in Milan", ValidFrom: d(2), Provenance: []string{"t7"}, Extractor: correctionExtractor},
		// A turn that states both the old and what holds now (t8) is not marked.
		"go":   {ID: "go", Content: "The user codes in Go", ValidFrom: d(1), ValidTo: tp(d(2)), SupersededBy: "rust", Provenance: []string{"t8"}},
		"rust": {ID: "rust", Content: "The user codes in Rust", ValidFrom: d(2), Provenance: []string{"t8", "t9"}},
		// A deleted fact marks nothing.
		"gone": {ID: "gone", Content: "The user has a boat", ValidFrom: d(1), ValidTo: tp(d(2)), Deleted: true, Provenance: []string{"t10"}},
	}}
	got := u.changesAt(d(4))
	want := map[string]string{"t1": "lisbon", "t2": "lisbon", "t5": "tea2", "t7": "milan"}
	if len(got) != len(want) {
		t.Errorf("changes at %s: %v, want the turns %v", d(4), got, want)
	}
	for turn, now := range want {
		if got[turn].now.id != now {
			t.Errorf("turn %s: holds now %q, want %q", turn, got[turn].now.id, now)
		}
	}
	if got["t1"].old != "paris" || !got["t1"].when.Equal(d(2)) {
		t.Errorf("t1's change %+v, want paris ended at %s", got["t1"], d(2))
	}
	// On the 2nd, Berlin held: t1 changed to Berlin, t2 said what held.
	got = u.changesAt(d(2).Add(time.Hour))
	if got["t1"].now.id != "berlin" || got["t2"].now.id != "" {
		t.Errorf("changes on the 2nd: %v, want t1 -> berlin only", got)
	}
	if got := u.changesAt(d(1)); len(got) != 0 {
		t.Errorf("changes on the 1st, before any: %v", got)
	}
}

// TestMarkChanged: a marked turn and summary, their context lines in both languages, and the
// metadata map the view shares left untouched.
func TestMarkChanged(t *testing.T) {
	when := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	changes := map[string]change{"t1": {old: "paris", now: fact1{"lisbon", "The user lives in Lisbon"}, when: when}}
	shared := map[string]any{"role": "user"}
	entries := []events.RetrievedEntry{
		{ID: "t1", Type: string(memory.Conversation), Content: "I live in Paris.", Timestamp: when.Add(-time.Hour), Source: memory.SourceArchive, Metadata: shared},
		{ID: "t2", Type: string(memory.Conversation), Content: "Hello.", Metadata: shared},
		{ID: "sum", Type: string(memory.Summary), Content: "The user said they live in Paris.", Provenance: []string{"t0", "t1"}},
		{ID: "paris", Type: string(memory.Fact), Content: "The user lives in Paris", Metadata: map[string]any{"valid_to": when, "superseded_by": "lisbon"}},
	}
	notes := markChanged(entries, changes, when.Add(-2*time.Hour))
	if len(shared) != 1 {
		t.Fatalf("the shared metadata changed: %v", shared)
	}
	if entries[0].Metadata["superseded_by"] != "lisbon" || entries[0].Metadata["superseded_fact"] != "paris" || entries[1].Metadata["superseded_by"] != nil {
		t.Errorf("turn metadata %v, %v", entries[0].Metadata, entries[1].Metadata)
	}
	if by, _ := entries[2].Metadata["partly_superseded_by"].([]string); len(by) != 1 || by[0] != "lisbon" {
		t.Errorf("summary metadata %v, want partly_superseded_by [lisbon]", entries[2].Metadata)
	}
	if entries[3].Metadata["valid_to"] != nil || entries[3].Metadata["superseded_by"] != nil {
		t.Errorf("a fact live at the request's at shows its later end: %v", entries[3].Metadata)
	}
	for _, lang := range []struct{ query, turn, summary string }{
		{"where do I live?", "I live in Paris. → since 2026-12-01: The user lives in Lisbon", "(changed since 2026-12-01: The user lives in Lisbon)"},
		{"我住在哪里？", "I live in Paris. → 2026-12-01 起：The user lives in Lisbon", "（2026-12-01 起已变更：The user lives in Lisbon）"},
	} {
		text, _, _ := buildContext(entries, nil, notes, lang.query, 2000, memory.EstimateCounter{})
		if !strings.Contains(text, lang.turn) || !strings.Contains(text, lang.summary) {
			t.Errorf("%q: context\n%s\nwant the lines %q and %q", lang.query, text, lang.turn, lang.summary)
		}
	}
}
