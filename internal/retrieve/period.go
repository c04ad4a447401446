package retrieve

import (
	"slices"
	"time"

	"github.com/agentmem/agentmem/internal/when"
	"github.com/agentmem/agentmem/pkg/events"
)

// A question that names a period ("two weeks ago", "last month", "上周", "前几天") is a soft
// prior, not a filter: people say "two weeks ago" for anything from ten to twenty days, and an
// entry's time is when it was said, not when what it tells happened. So the period only
// reorders near-ties:
//
//   - an entry said within the period has its score multiplied by 1 + PeriodWeight; outside
//     it the factor falls linearly to 1 over a margin of half the period's length (at least a
//     day) either side, so the period's edges are soft;
//   - the prior never lifts an entry into the first periodKeep places that ranks below them
//     without it, so it never pushes out of the top ten an answer that ranks there without it;
//     within them, and below them, it reorders.
//
// An entry's score is the product of its scores times the period factor (scores.period, absent
// when 1); an entry that the second rule holds below the top ten gets the factor that puts it
// level with the last of them, so that the reply stays ordered by score.

// DefaultPeriodWeight is the default PeriodWeight (docs/retrieval.md has its measurement).
const DefaultPeriodWeight = 0.6

// periodKeep is how many of the entries ranked without the period keep their places among the
// first periodKeep with it.
const periodKeep = 10

// periodFactor is the prior's factor for an entry said at t.
func periodFactor(p when.Period, weight float64, t time.Time) float64 {
	if p.Contains(t) {
		return 1 + weight
	}
	margin := max(p.To.Sub(p.From)/2, 24*time.Hour)
	var dist time.Duration
	if t.Before(p.From) {
		dist = p.From.Sub(t)
	} else {
		dist = t.Sub(p.To)
	}
	if dist >= margin {
		return 1
	}
	return 1 + weight*(1-float64(dist)/float64(margin))
}

// applyPeriod reorders entries, sorted best first without the period, by the period prior (see
// above) and sets their scores.
func applyPeriod(entries []events.RetrievedEntry, p when.Period, weight float64) {
	if weight <= 0 || len(entries) == 0 {
		return
	}
	keep := min(periodKeep, len(entries))
	factor := make(map[string]float64, len(entries))
	for _, e := range entries {
		factor[e.ID] = periodFactor(p, weight, e.Timestamp)
	}
	byPrior := func(a, b events.RetrievedEntry) int {
		sa, sb := a.Score*factor[a.ID], b.Score*factor[b.ID]
		switch {
		case sa > sb:
			return -1
		case sa < sb:
			return 1
		}
		return 0 // stable: the order without the period
	}
	slices.SortStableFunc(entries[:keep], byPrior)
	slices.SortStableFunc(entries[keep:], byPrior)
	floor := entries[keep-1].Score * factor[entries[keep-1].ID]
	for i := range entries {
		e := &entries[i]
		f := factor[e.ID]
		if i >= keep && e.Score > 0 && e.Score*f > floor {
			f = floor / e.Score // held below the top ten: level with the last of them
		}
		if f != 1 {
			e.Scores.Period = round(f)
		}
		e.Score = round(e.Score * f)
	}
}
