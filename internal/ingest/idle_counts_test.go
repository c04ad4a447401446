package ingest

import (
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/session"
)

// A process counts the sessions of the partitions it owns now: after a partition is handed to
// another member its sessions leave this member's gauges.
func TestIdleCountsOnlyOwnedPartitions(t *testing.T) {
	w := &Worker{cfg: Config{Partitions: []int{0, 2}}}
	tr := newIdleTracker(w)
	for i, p := range []int{0, 1, 2, 3, 2} {
		h := session.Header{Tenant: "t", Session: string(rune('a' + i)), User: "u", Partition: p, LastStoredAt: time.Now()}
		if i == 4 {
			h.AwaitingSince = time.Now()
		}
		tr.touch(h)
	}
	if open, awaiting := tr.counts(); open != 3 || awaiting != 1 {
		t.Fatalf("owning partitions 0 and 2: open %d awaiting %d, want 3 and 1", open, awaiting)
	}
	w.cfg.Partitions = []int{1}
	if open, awaiting := tr.counts(); open != 1 || awaiting != 0 {
		t.Fatalf("after handing 0 and 2 over: open %d awaiting %d, want 1 and 0", open, awaiting)
	}
}
