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
