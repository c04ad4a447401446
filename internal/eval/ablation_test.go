package eval

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/internal/rank"
)

func TestAblationSwitchesEachTechnique(t *testing.T) {
	techniques := []Technique{
		{"session diversity", true, func(t *Tuning) { t.Rank.Diversity = rank.Off }},
		{"query recency 0.9", false, func(t *Tuning) { t.Rank.QueryRecency = 0.9 }},
	}
	labels, configs := Ablation(techniques, Tuning{})
	if want := []string{"defaults", "- session diversity", "+ query recency 0.9"}; !reflect.DeepEqual(labels, want) {
		t.Errorf("labels %q, want %q", labels, want)
	}
	want := []Tuning{{}, {Rank: rank.Config{Diversity: rank.Off}}, {Rank: rank.Config{QueryRecency: 0.9}}}
	if !reflect.DeepEqual(configs, want) {
		t.Errorf("configs %+v, want %+v", configs, want)
	}
	// Every technique memeval switches gives a valid configuration other than the defaults.
	labels, configs = Ablation(Techniques, Tuning{})
	seen := map[string]bool{}
	for i, c := range configs[1:] {
		if err := c.Rank.Validate(); err != nil {
			t.Errorf("%s: %v", labels[i+1], err)
		}
		if reflect.DeepEqual(c, Tuning{}) || seen[labels[i+1]] {
			t.Errorf("%s: switches nothing, or twice listed", labels[i+1])
		}
		seen[labels[i+1]] = true
	}
}

func TestPrintAblationShowsRankingAndLatency(t *testing.T) {
	rep := Report{Sets: []SetReport{{Name: SetMADialEN,
		Means:   map[string]map[string]Mean{Overall: {"R@10": {Value: 0.5, N: 2}}},
		Latency: Latency{N: 2, P50: 1.25, P99: 3}}}}
	var out bytes.Buffer
	PrintAblation(&out, []AblationRow{{Embedder: "none", Rank: "keyword", Ranking: "- session diversity", Report: rep}})
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "ranking") || !strings.Contains(lines[0], "en p50/p99 ms") {
		t.Fatalf("table:\n%s", out.String())
	}
	for _, want := range []string{"- session diversity", "0.500", "1.2/3.0"} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("row %q lacks %q", lines[1], want)
		}
	}
}

// TestRule: a technique on by default fails the rule when a metric is higher without it; one
// off by default could be on when no metric falls with it and one rises.
func TestRule(t *testing.T) {
	row := func(ranking string, sall10, tany10 float64) AblationRow {
		return AblationRow{Embedder: "none", Rank: "keyword", Ranking: ranking, Report: Report{Sets: []SetReport{{Name: SetLongMemEval,
			Means: map[string]map[string]Mean{Overall: {SAll10: {Value: sall10}, TAny10: {Value: tany10}}}}}}}
	}
	def := row("defaults", 0.918, 0.918)
	for _, tc := range []struct {
		row  AblationRow
		want string
	}{
		{row("defaults", 0.918, 0.918), ""},
		{row("- session evidence", 0.929, 0.898), "on: FAILS, lowers lme S-R_all@10"},
		{row("- agent turn weight", 0.918, 0.867), "on: passes"},
		{row("+ session repeat 0.5", 0.929, 0.908), "off"},
		{row("+ wordnet", 0.929, 0.918), "off: passes, could be on"},
		{row("+ nothing", 0.918, 0.918), "off"},
	} {
		if got := Rule(def, tc.row); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.row.Ranking, got, tc.want)
		}
	}
}
