package eval

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// printSet prints a set's table: one row per group, overall last, then the baselines, then the
// retrieve latency.
func printSet(out io.Writer, set *Set, sr SetReport) {
	fmt.Fprintf(out, "== %s: %s, %d questions\n", set.Name, set.Title, sr.Queries)
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	headers := []string{set.GroupLabel}
	for _, c := range set.Columns {
		headers = append(headers, c.Header)
	}
	fmt.Fprintln(tw, strings.Join(headers, "\t"))
	var groups []string
	for g := range sr.Means {
		if g != Overall {
			groups = append(groups, g)
		}
	}
	slices.Sort(groups)
	groups = append(groups, Overall)
	for _, g := range groups {
		row := []string{g}
		for _, c := range set.Columns {
			m, ok := sr.Means[g][c.Metric]
			switch {
			case c.Count:
				row = append(row, fmt.Sprint(m.N))
			case !ok:
				row = append(row, "-")
			default:
				row = append(row, fmt.Sprintf("%.3f", m.Value))
			}
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	for _, b := range set.Baselines {
		row := []string{b.Label}
		for _, c := range set.Columns {
			v, ok := b.Values[c.Metric]
			switch {
			case c.Count:
				row = append(row, "")
			case !ok:
				row = append(row, "-")
			default:
				row = append(row, fmt.Sprintf("%.3f", v))
			}
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	_ = tw.Flush()
	fmt.Fprintf(out, "retrieve latency: %s\n", sr.Latency)
	if sr.Errors > 0 {
		fmt.Fprintf(out, "retrieve errors: %d, first: %s\n", sr.Errors, sr.FirstError)
	}
	fmt.Fprintln(out)
}
