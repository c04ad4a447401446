package eval

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/pkg/events"
)

func TestRankedTurnIDsExpandsProvenance(t *testing.T) {
	isTurn := func(id string) bool { return strings.HasPrefix(id, "u:") }
	entries := []events.RetrievedEntry{
		{ID: "fact_1", Type: "FACT", Provenance: []string{"u:s2:4", "other:s9:0", "u:s1:0"}},
		{ID: "u:s1:0", Type: "CONVERSATION"}, // already listed through the fact
		{ID: "sum_1", Type: "SUMMARY", Provenance: []string{"u:s3:0", "u:s3:1", "u:s2:4"}},
		{ID: "u:s4:2", Type: "TOOL_RESULT", Provenance: []string{"u:s5:0"}}, // a turn stands for itself
		{ID: "fact_2", Type: "FACT"},                                        // no provenance: nothing
		{ID: "someone-else", Type: "CONVERSATION"},
	}
	got := RankedTurnIDs(entries, isTurn)
	want := []string{"u:s2:4", "u:s1:0", "u:s3:0", "u:s3:1", "u:s4:2"}
	if !slices.Equal(got, want) {
		t.Fatalf("RankedTurnIDs = %q, want %q", got, want)
	}
	if got := RankedTurnIDs(nil, isTurn); len(got) != 0 {
		t.Fatalf("no entries gave %q", got)
	}
}

func TestRecallAndHit(t *testing.T) {
	ranked := []string{"a", "b", "c", "d", "e", "f"}
	tests := []struct {
		name string
		gold []string
		k    int
		rec  float64
		hit  float64
	}{
		{"first", []string{"a"}, 1, 1, 1},
		{"half at 3", []string{"c", "z"}, 3, 0.5, 1},
		{"beyond k", []string{"f"}, 5, 0, 0},
		{"k beyond the list", []string{"f", "b"}, 20, 1, 1},
		{"none", []string{"x", "y", "z"}, 10, 0, 0},
		{"no gold", nil, 5, 0, 0},
		{"two of three", []string{"a", "e", "q"}, 5, 2.0 / 3, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RecallAt(ranked, tt.gold, tt.k); math.Abs(got-tt.rec) > 1e-12 {
				t.Errorf("RecallAt = %v, want %v", got, tt.rec)
			}
			if got := HitAt(ranked, tt.gold, tt.k); got != tt.hit {
				t.Errorf("HitAt = %v, want %v", got, tt.hit)
			}
		})
	}
}

func TestSessionRecall(t *testing.T) {
	sessionOf := func(id string) string { s, _, _ := strings.Cut(id, "/"); return s }
	ranked := []string{"x/1", "a/0", "x/2", "x/3", "y/0", "b/5"}
	tests := []struct {
		name     string
		gold     []string
		k        int
		all, any float64
	}{
		{"all at 5", []string{"a", "y"}, 5, 1, 1},
		{"one missing at 5", []string{"a", "b"}, 5, 0, 1},
		{"all at 10", []string{"a", "b"}, 10, 1, 1},
		{"none", []string{"c"}, 10, 0, 0},
		{"no gold", nil, 5, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			all, any := SessionRecallAt(ranked, sessionOf, tt.gold, tt.k)
			if all != tt.all || any != tt.any {
				t.Errorf("SessionRecallAt = all %v any %v, want %v %v", all, any, tt.all, tt.any)
			}
		})
	}
}

// A LongMemEval question scored on a hand-made reply: a fact cites an answer turn of s2 and a
// distractor turn, the archive has the rest.
func TestLMEScoreOnReply(t *testing.T) {
	q := &LMEQuestion{User: "q7", GoldSessions: []string{"s1", "s2"}, GoldTurns: []string{"q7:s2:3"}}
	entries := []events.RetrievedEntry{
		{ID: "fact_x", Type: "FACT", Provenance: []string{"q7:s9:0", "q7:s2:3"}},
		{ID: "q7:s9:1"},
		{ID: "q7:s8:0"},
		{ID: "q7:s9:0"},
		{ID: "q7:s7:0"},
		{ID: "q7:s6:0"},
		{ID: "q7:s1:0"}, // the 7th distinct turn id
		{ID: "q8:s1:0"}, // another question's turn: not counted
	}
	ranked := RankedTurnIDs(entries, q.IsTurn)
	want := []string{"q7:s9:0", "q7:s2:3", "q7:s9:1", "q7:s8:0", "q7:s7:0", "q7:s6:0", "q7:s1:0"}
	if !slices.Equal(ranked, want) {
		t.Fatalf("ranked = %q, want %q", ranked, want)
	}
	got := q.Score(ranked)
	exp := map[string]float64{SAll5: 0, SAny5: 1, SAll10: 1, TAny5: 1, TAny10: 1}
	for k, v := range exp {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	if len(got) != len(exp) {
		t.Errorf("metrics %v, want exactly %v", got, exp)
	}
	// Without gold turns the turn metrics do not apply.
	q.GoldTurns = nil
	if m := q.Score(ranked); len(m) != 3 {
		t.Errorf("without gold turns: %v", m)
	}
}

func TestLMESessionOf(t *testing.T) {
	q := &LMEQuestion{User: "q7"}
	for id, want := range map[string]string{
		"q7:s1:0": "s1", "q7:sharegpt_a_b:12": "sharegpt_a_b", "q7:s1:x": "", "q7:s1": "",
		"q70:s1:0": "", "q7::0": "", "q7:s1:0:1": "", "fact_1": "",
	} {
		if got := q.SessionOf(id); got != want {
			t.Errorf("SessionOf(%q) = %q, want %q", id, got, want)
		}
	}
}

func TestPercentile(t *testing.T) {
	v := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for p, want := range map[float64]float64{0: 1, 50: 5.5, 95: 9.55, 99: 9.91, 100: 10} {
		if got := Percentile(v, p); math.Abs(got-want) > 1e-9 {
			t.Errorf("Percentile(%v) = %v, want %v", p, got, want)
		}
	}
	if !math.IsNaN(Percentile(nil, 50)) {
		t.Error("no values should give NaN")
	}
	if got := Percentile([]float64{3}, 99); got != 3 {
		t.Errorf("one value: %v", got)
	}
}

func TestMeansPerGroup(t *testing.T) {
	m := newMeans()
	m.add(map[string]float64{"a": 1, "b": 0}, "g1", Overall)
	m.add(map[string]float64{"a": 0}, "g2", Overall)
	r := m.result()
	if got := r[Overall]["a"]; got != (Mean{Value: 0.5, N: 2}) {
		t.Errorf("overall a = %+v", got)
	}
	if got := r[Overall]["b"]; got != (Mean{Value: 0, N: 1}) {
		t.Errorf("overall b = %+v", got)
	}
	if _, ok := r["g2"]["b"]; ok {
		t.Error("g2 has no b")
	}
}

func TestToken(t *testing.T) {
	long := strings.Repeat("x", 70)
	for in, want := range map[string]string{
		"abc_1-2": "abc_1-2", "a.b/c d": "a_b_c_d", "": "_", "é": "_",
		long: long[:55] + "_" + fnv32(long),
	} {
		if got := Token(in); got != want {
			t.Errorf("Token(%q) = %q, want %q", in, got, want)
		}
	}
}
