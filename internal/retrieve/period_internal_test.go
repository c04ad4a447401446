package retrieve

import (
	"fmt"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/when"
	"github.com/agentmem/agentmem/pkg/events"
)

// TestPeriodFactor: 1 + weight within the period, falling linearly to 1 over half the period's
// length (at least a day) either side: the edges are soft.
func TestPeriodFactor(t *testing.T) {
	from := time.Date(2026, 11, 10, 0, 0, 0, 0, time.UTC)
	p := when.Period{From: from, To: from.Add(4 * 24 * time.Hour)} // margin: two days
	for _, tc := range []struct {
		at   time.Time
		want float64
	}{
		{from.Add(time.Hour), 1.5},
		{p.To, 1.5},
		{from.Add(-24 * time.Hour), 1.25},
		{p.To.Add(36 * time.Hour), 1.125},
		{from.Add(-48 * time.Hour), 1},
		{p.To.Add(30 * 24 * time.Hour), 1},
	} {
		if got := periodFactor(p, 0.5, tc.at); abs(got-tc.want) > 1e-9 {
			t.Errorf("factor at %s: %v, want %v", tc.at, got, tc.want)
		}
	}
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

// TestApplyPeriod: the prior reorders near-ties, inside the top ten and below it, but never
// lifts an entry into the top ten; scores stay in order and say the factor.
func TestApplyPeriod(t *testing.T) {
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	p := when.Period{From: at.Add(-16 * 24 * time.Hour), To: at.Add(-12 * 24 * time.Hour)}
	inside, outside := at.Add(-14*24*time.Hour), at.Add(-40*24*time.Hour)
	var entries []events.RetrievedEntry
	for i := range 14 {
		ts := outside
		if i == 2 || i == 10 || i == 13 {
			ts = inside // near-ties below an entry outside the period
		}
		entries = append(entries, events.RetrievedEntry{ID: fmt.Sprintf("e%02d", i), Score: 1 - float64(i)*0.01, Timestamp: ts})
	}
	applyPeriod(entries, p, 0.6)
	var got []string
	for _, e := range entries {
		got = append(got, e.ID)
	}
	want := []string{"e02", "e00", "e01", "e03", "e04", "e05", "e06", "e07", "e08", "e09", "e10", "e13", "e11", "e12"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	for i := 1; i < len(entries); i++ {
		if entries[i].Score > entries[i-1].Score {
			t.Errorf("scores out of order at %d: %v > %v", i, entries[i].Score, entries[i-1].Score)
		}
	}
	if entries[0].Scores.Period != 1.6 || entries[1].Scores.Period != 0 {
		t.Errorf("period factors %v, %v, want 1.6 and none", entries[0].Scores.Period, entries[1].Scores.Period)
	}
	// e10 would pass e09 with its factor, but ranked 11th without the period: it is held at the
	// 11th place, level with the 10th.
	if entries[10].ID != "e10" || entries[10].Score != entries[9].Score {
		t.Errorf("e10 at %s with %v, want 11th level with %v", entries[10].ID, entries[10].Score, entries[9].Score)
	}
}
