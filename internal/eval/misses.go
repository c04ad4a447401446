package eval

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// Answer is one thing a question's ranking should hold near its top: an answer turn, an answer
// session or a gold memory. Rank returns its place in a ranking (0 for the first), -1 when the
// ranking does not hold it.
type Answer struct {
	Label string
	Rank  func(ranked []string) int
}

// turnAnswer is an answer found by its id.
func turnAnswer(kind, id string) Answer {
	return Answer{Label: kind + " " + id, Rank: func(ranked []string) int { return slices.Index(ranked, id) }}
}

// sessionAnswer is an answer session: its first turn in the ranking.
func sessionAnswer(session string, sessionOf func(string) string) Answer {
	return Answer{Label: "session " + session, Rank: func(ranked []string) int {
		return slices.IndexFunc(ranked, func(id string) bool { return sessionOf(id) == session })
	}}
}

// QuestionResult is what one question's ranking did: its metrics and the rank of each answer.
type QuestionResult struct {
	ID, Group, Query string
	Metrics          map[string]float64
	// Ranks maps each answer's label to its rank (-1: not in the ranking).
	Ranks map[string]int
	// Order lists the answers' labels as the question gives them.
	Order []string
}

// missMetrics are the metrics a question misses at 10 when one of them is below 1.
var missMetrics = []string{SAll10, TAny10, "R@10"}

// missed reports whether a question's answers are not all in its top ten.
func (q QuestionResult) missed() []string {
	var out []string
	for _, m := range missMetrics {
		if v, ok := q.Metrics[m]; ok && v < 1 {
			out = append(out, m)
		}
	}
	return out
}

// WriteMisses writes the miss report of an ablation: for every question the first row (the
// defaults) misses at 10, the rank of each of its answers under the defaults and under every
// configuration that moved it, so that the next change is aimed at what is missed. rows[0] is
// the defaults.
func WriteMisses(w io.Writer, rows []AblationRow) error {
	if len(rows) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString("# Misses at 10 under the defaults\n\n")
	b.WriteString("Ranks count from 1; \"-\" is beyond the ranking (50 entries for LongMemEval, 20 for MADial). " +
		"Each answer lists the configurations of the ablation that moved it.\n")
	name := func(r AblationRow) string {
		if r.Embedder != "none" {
			return r.Embedder + " " + r.Rank
		}
		return r.Ranking
	}
	for _, set := range rows[0].Report.Sets {
		var missed []QuestionResult
		for _, q := range set.Questions {
			if len(q.missed()) > 0 {
				missed = append(missed, q)
			}
		}
		slices.SortFunc(missed, func(a, b QuestionResult) int { return strings.Compare(a.Group+a.ID, b.Group+b.ID) })
		fmt.Fprintf(&b, "\n## %s: %d of %d questions missed\n", set.Name, len(missed), len(set.Questions))
		// Per configuration, the same set's results by question id.
		others := make([]map[string]QuestionResult, len(rows))
		for i, r := range rows {
			others[i] = map[string]QuestionResult{}
			for _, s := range r.Report.Sets {
				if s.Name == set.Name {
					for _, q := range s.Questions {
						others[i][q.ID] = q
					}
				}
			}
		}
		for _, q := range missed {
			fmt.Fprintf(&b, "\n### %s (%s): %s\n\nmissed: %s\n\n", q.ID, q.Group, oneLine(q.Query, 200), strings.Join(q.missed(), ", "))
			for _, a := range q.Order {
				def := q.Ranks[a]
				var moved []string
				for i := 1; i < len(rows); i++ {
					o, ok := others[i][q.ID]
					if !ok {
						continue
					}
					if r, ok := o.Ranks[a]; ok && r != def {
						moved = append(moved, fmt.Sprintf("%s %s", name(rows[i]), rankText(r)))
					}
				}
				line := fmt.Sprintf("- %s: %s", a, rankText(def))
				if len(moved) > 0 {
					line += "; " + strings.Join(moved, ", ")
				}
				b.WriteString(line + "\n")
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func rankText(r int) string {
	if r < 0 {
		return "-"
	}
	return fmt.Sprint(r + 1)
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
