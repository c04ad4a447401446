package eval

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// AblationRow is one configuration of an ablation and what it measured.
type AblationRow struct {
	// Embedder and Rank name the configuration (e.g. "local", "fused").
	Embedder, Rank string
	Report         Report
}

// ablationColumns are the overall metrics an ablation table shows, per set.
var ablationColumns = []struct{ set, metric string }{
	{SetLongMemEval, SAll5}, {SetLongMemEval, SAll10}, {SetLongMemEval, TAny5}, {SetLongMemEval, TAny10},
	{SetMADialZH, "R@5"}, {SetMADialZH, "R@10"},
	{SetMADialEN, "R@5"}, {SetMADialEN, "R@10"},
}

// PrintAblation prints one row per configuration with the overall recall of every set the rows
// measured ("-" where a set was not run).
func PrintAblation(out io.Writer, rows []AblationRow) {
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	headers := []string{"embedder", "rank"}
	for _, c := range ablationColumns {
		headers = append(headers, c.set+" "+c.metric)
	}
	fmt.Fprintln(tw, strings.Join(headers, "\t"))
	for _, r := range rows {
		row := []string{r.Embedder, r.Rank}
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
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	_ = tw.Flush()
}
