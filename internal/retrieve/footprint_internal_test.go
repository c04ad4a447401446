package retrieve

import (
	"testing"

	"github.com/agentmem/agentmem/internal/rank"
)

// Under a memory limit the views' cap is what HeapShare of the limit leaves above the rest of
// the heap, taken once per garbage collection; never above MaxUserBytes, nor below a quarter of it.
func TestViewCapFollowsTheRestOfTheHeap(t *testing.T) {
	const mib = 1 << 20
	h := heapState{cycles: 1, live: 500 * mib}
	c := newUserCache(512*mib, rank.Config{}).underLimit(1000*mib, func() heapState { return h })
	steps := []struct {
		name  string
		heap  heapState
		views int64
		want  int64
	}{
		{"the rest is the live heap less the views", heapState{1, 500 * mib}, 100 * mib, 200 * mib},
		{"evictions before the next collection do not make the rest look larger", heapState{1, 500 * mib}, 50 * mib, 200 * mib},
		{"a collection shows the rest again", heapState{2, 300 * mib}, 50 * mib, 350 * mib},
		{"never above MaxUserBytes", heapState{3, 60 * mib}, 50 * mib, 512 * mib},
		{"never below a quarter of MaxUserBytes", heapState{4, 900 * mib}, 50 * mib, 128 * mib},
	}
	for _, s := range steps {
		h = s.heap
		if got := c.capNow(s.views); got != s.want {
			t.Errorf("%s: cap %d MiB, want %d MiB", s.name, got/mib, s.want/mib)
		}
	}
	if got := newUserCache(512*mib, rank.Config{}).underLimit(0, func() heapState { return h }).capNow(0); got != 512*mib {
		t.Errorf("without a limit: cap %d MiB, want MaxUserBytes", got/mib)
	}
}
