package eval

import (
	"strings"
	"testing"
)

// TestWriteMisses: a question the defaults miss at 10 is listed with the rank of each answer and
// the configurations that moved it; a question they do not miss is not.
func TestWriteMisses(t *testing.T) {
	q := func(id string, m map[string]float64, ranks map[string]int) QuestionResult {
		r := QuestionResult{ID: id, Group: "multi-session", Query: "How many pieces of furniture did I buy?", Metrics: m, Ranks: ranks}
		for _, a := range []string{"session s1", "turn q:s1:0", "session s2"} {
			if _, ok := ranks[a]; ok {
				r.Order = append(r.Order, a)
			}
		}
		return r
	}
	set := func(qs ...QuestionResult) Report {
		return Report{Sets: []SetReport{{Name: SetLongMemEval, Questions: qs}}}
	}
	rows := []AblationRow{
		{Embedder: "none", Ranking: "defaults", Report: set(
			q("missed", map[string]float64{SAll10: 0, TAny10: 1}, map[string]int{"session s1": 0, "turn q:s1:0": 0, "session s2": 20}),
			q("found", map[string]float64{SAll10: 1, TAny10: 1}, map[string]int{"session s1": 1}))},
		{Embedder: "none", Ranking: "- session diversity", Report: set(
			q("missed", map[string]float64{SAll10: 1, TAny10: 1}, map[string]int{"session s1": 0, "turn q:s1:0": 0, "session s2": 4}))},
		{Embedder: "local", Rank: "fused", Ranking: "defaults", Report: set(
			q("missed", map[string]float64{SAll10: 0, TAny10: 1}, map[string]int{"session s1": 0, "turn q:s1:0": -1, "session s2": 20}))},
	}
	var b strings.Builder
	if err := WriteMisses(&b, rows); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"## lme: 1 of 2 questions missed",
		"### missed (multi-session): How many pieces of furniture did I buy?",
		"missed: S-R_all@10",
		"- session s1: 1\n",
		"- turn q:s1:0: 1; local fused -\n",
		"- session s2: 21; - session diversity 5\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "### found") {
		t.Errorf("a question found at 10 is in the report:\n%s", out)
	}
}
