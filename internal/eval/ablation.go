package eval

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/agentmem/agentmem/internal/rank"
)

// AblationRow is one configuration of an ablation and what it measured.
type AblationRow struct {
	// Embedder and Rank name the configuration (e.g. "local", "fused"); Ranking names the
	// keyword ranking's configuration ("defaults", "- session diversity", "+ query recency").
	Embedder, Rank, Ranking string
	Report                  Report
}

// Tuning is what an ablation switches in the retriever: the keyword ranking's configuration,
// whether a question about a period raises what was said in it (internal/when) and how much
// (retrieve.Config.PeriodWeight; 0 is the default).
type Tuning struct {
	Rank          rank.Config
	IgnorePeriods bool
	PeriodWeight  float64
	// Graph is retrieve.Config.Graph: the weight of the user's graph (0 the default, rank.Off
	// none).
	Graph float64
}

// Technique is a ranking technique an ablation switches: Switch turns it off when it is on by
// default (On), on otherwise, in a Tuning that starts from the defaults.
type Technique struct {
	Name   string
	On     bool
	Switch func(*Tuning)
}

// Label is the technique's row label: "- name" for one switched off, "+ name" for one switched on.
func (t Technique) Label() string {
	if t.On {
		return "- " + t.Name
	}
	return "+ " + t.Name
}

// Techniques are the ranking techniques `memeval --ablation` switches one at a time (keyword
// ranking, no embedder), each on a fresh service: one line each.
var Techniques = []Technique{
	{"query tf saturation", true, func(t *Tuning) { t.Rank.QueryK3 = rank.Off }},
	{"query term cap", true, func(t *Tuning) { t.Rank.MaxQueryTerms = int(rank.Off) }},
	{"query speaker weight", true, func(t *Tuning) { t.Rank.QuerySpeaker = rank.Off }},
	{"query question words dropped", true, func(t *Tuning) { t.Rank.KeepQuestionWords = true }},
	{"query recency 0.9", false, func(t *Tuning) { t.Rank.QueryRecency = 0.9 }},
	{"agent turn weight", true, func(t *Tuning) { t.Rank.AgentTurn = rank.Off }},
	{"session evidence", true, func(t *Tuning) { t.Rank.Session = rank.Off }},
	{"session diversity", true, func(t *Tuning) { t.Rank.Diversity = rank.Off }},
	{"session repeat", true, func(t *Tuning) { t.Rank.SessionRepeat = rank.Off }},
	{"context field", true, func(t *Tuning) { t.Rank.Context = rank.Off }},
	{"speaker field", true, func(t *Tuning) { t.Rank.Speaker = rank.Off }},
	{"mention weight", true, func(t *Tuning) { t.Rank.Mention = rank.Off }},
	{"chinese words", false, func(t *Tuning) { t.Rank.ChineseWords = 1 }},
	{"question periods", true, func(t *Tuning) { t.IgnorePeriods = true }},
	{"WordNet related words 0.3", false, func(t *Tuning) { t.Rank.Related = 0.3 }},
	{"graph", true, func(t *Tuning) { t.Graph = rank.Off }},
}

// Ablation returns the tunings of an ablation over techniques: base (the defaults, unless a
// run changes them) first, then each technique switched in it, labelled.
func Ablation(techniques []Technique, base Tuning) (labels []string, configs []Tuning) {
	labels, configs = append(labels, "defaults"), append(configs, base)
	for _, t := range techniques {
		c := base
		t.Switch(&c)
		labels, configs = append(labels, t.Label()), append(configs, c)
	}
	return labels, configs
}

// ablationColumns are the overall metrics an ablation table shows, per set.
var ablationColumns = []struct{ set, metric string }{
	{SetLongMemEval, SAll5}, {SetLongMemEval, SAll10}, {SetLongMemEval, SAny5}, {SetLongMemEval, TAny5}, {SetLongMemEval, TAny10},
	{SetMADialZH, "R@5"}, {SetMADialZH, "R@10"},
	{SetMADialEN, "R@5"}, {SetMADialEN, "R@10"},
}

// Noise is the run-to-run noise of a recall metric of the dev sets: three runs of the same
// configuration ranked every question alike (docs/retrieval.md), so any fall is a fall.
const Noise = 0.0

// Rule says what the rule for defaults makes of a row of an ablation whose first row is the
// defaults: a technique is on by default only when no dev metric falls beyond Noise with it.
// For a technique on by default (its row "- name", without it) that is: no metric of the row is
// higher than the defaults'; for one off by default ("+ name") the row says whether it could be
// on (no metric lower, one higher). Other rows (the defaults, an embedder) get "".
func Rule(defaults, row AblationRow) string {
	if row.Embedder != "none" || row.Ranking == "defaults" || row.Ranking == "" {
		return ""
	}
	var higher, lower []string
	for _, c := range ablationColumns {
		d, okd := overall(defaults.Report, c.set, c.metric)
		r, okr := overall(row.Report, c.set, c.metric)
		if !okd || !okr {
			continue
		}
		label := c.set + " " + c.metric
		switch {
		case r > d+Noise+1e-9:
			higher = append(higher, label)
		case r < d-Noise-1e-9:
			lower = append(lower, label)
		}
	}
	if strings.HasPrefix(row.Ranking, "- ") {
		if len(higher) > 0 {
			return "on: FAILS, lowers " + strings.Join(higher, ", ")
		}
		return "on: passes"
	}
	if len(lower) == 0 && len(higher) > 0 {
		return "off: passes, could be on"
	}
	return "off"
}

// overall is the overall mean of metric on set in rep.
func overall(rep Report, set, metric string) (float64, bool) {
	for _, sr := range rep.Sets {
		if sr.Name == set {
			m, ok := sr.Means[Overall][metric]
			return m.Value, ok
		}
	}
	return 0, false
}

// PrintAblation prints one row per configuration with the overall recall of every set the rows
// measured ("-" where a set was not run), the MADial sets' retrieve latency (p50/p99 in ms:
// their two users are loaded by their first question, so it is mostly warm; LongMemEval's is
// not, each question being a new user) and what the rule for defaults makes of the row (Rule;
// the first row is the defaults).
func PrintAblation(out io.Writer, rows []AblationRow) {
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	headers := []string{"embedder", "rank", "ranking"}
	for _, c := range ablationColumns {
		headers = append(headers, c.set+" "+c.metric)
	}
	headers = append(headers, "zh p50/p99 ms", "en p50/p99 ms", "rule")
	fmt.Fprintln(tw, strings.Join(headers, "\t"))
	for _, r := range rows {
		ranking := r.Ranking
		if ranking == "" {
			ranking = "defaults"
		}
		row := []string{r.Embedder, r.Rank, ranking}
		for _, c := range ablationColumns {
			v := "-"
			for _, sr := range r.Report.Sets {
				if sr.Name == c.set {
					if m, ok := sr.Means[Overall][c.metric]; ok {
						v = fmt.Sprintf("%.3f", m.Value)
					}
				}
			}
			row = append(row, v)
		}
		row = append(row, latencyCells(r.Report)...)
		row = append(row, Rule(rows[0], r))
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	_ = tw.Flush()
}

// latencyCells are the p50/p99 retrieve latency of the MADial sets of rep ("-" when not run).
func latencyCells(rep Report) []string {
	var out []string
	for _, set := range []string{SetMADialZH, SetMADialEN} {
		v := "-"
		for _, sr := range rep.Sets {
			if sr.Name == set && sr.Latency.N > 0 {
				v = fmt.Sprintf("%.1f/%.1f", sr.Latency.P50, sr.Latency.P99)
			}
		}
		out = append(out, v)
	}
	return out
}
