package footprint

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func TestPercentFor(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		live, headroom int64
		minPct, want   int
	}{
		{0, 32 * mib, 25, 100},          // nothing measured yet: Go's default
		{20 * mib, 32 * mib, 25, 100},   // a small heap is paced as by default
		{32 * mib, 32 * mib, 25, 100},   // the headroom is the live heap: GOGC=100 exactly
		{64 * mib, 32 * mib, 25, 50},    // twice the headroom: half
		{96 * mib, 32 * mib, 25, 34},    // rounded up: never less headroom than asked
		{512 * mib, 32 * mib, 25, 25},   // the floor
		{512 * mib, 32 * mib, 10, 10},   // another floor
		{200 * mib, 300 * mib, 50, 100}, // never more than the default
	} {
		if got := percentFor(c.live, c.headroom, c.minPct); got != c.want {
			t.Errorf("percentFor(%d MiB, %d MiB, %d) = %d, want %d", c.live/mib, c.headroom/mib, c.minPct, got, c.want)
		}
	}
}

// readGC returns the live heap of the last collection and the GOGC percentage in force.
func readGC() (live int64, pct int) {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64()), int(s[1].Value.Uint64())
}

// waitPercent collects until the percentage in force is the one the pacer owes the live heap
// the last collection found, and returns it; it fails after a bounded number of collections.
func waitPercent(t *testing.T, headroom int64, minPct int, ok func(pct int) bool) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var live int64
	var pct int
	for time.Now().Before(deadline) {
		runtime.GC() // the cleanup runs after the collection, on its own goroutine
		live, pct = readGC()
		if pct == percentFor(live, headroom, minPct) && ok(pct) {
			return pct
		}
		runtime.Gosched()
	}
	t.Fatalf("GOGC %d with %d bytes live: want %d", pct, live, percentFor(live, headroom, minPct))
	return 0
}

// startPace starts a pacer from GOGC=100 and returns its stop; the test's end stops it, drops
// what holdForTest held and restores the percentage there was.
func startPace(t *testing.T, headroom int64, minPct int) (stop func()) {
	t.Helper()
	prior := debug.SetGCPercent(100)
	stop = Pace(headroom, minPct)
	t.Cleanup(func() { stop(); debug.SetGCPercent(prior); held = nil })
	return stop
}

// The pacer lowers GOGC as the live heap passes the headroom, raises it back to the default
// as the heap shrinks, and restores the percentage there was when stopped.
func TestPaceFollowsTheLiveHeap(t *testing.T) {
	const headroom, minPct = 8 << 20, 5
	stop := startPace(t, headroom, minPct)
	small := waitPercent(t, headroom, minPct, func(int) bool { return true })

	holdForTest(64 * 16) // 64 MiB live: about an eighth of it may be headroom
	paced := waitPercent(t, headroom, minPct, func(pct int) bool { return pct < 20 })
	if paced >= small {
		t.Fatalf("GOGC %d with 64 MiB more live, %d before", paced, small)
	}

	held = nil
	waitPercent(t, headroom, minPct, func(pct int) bool { return pct > paced })

	stop()
	if _, pct := readGC(); pct != 100 {
		t.Fatalf("GOGC %d after stop, want the prior 100", pct)
	}
	runtime.GC()
	runtime.GC()
	if _, pct := readGC(); pct != 100 {
		t.Fatalf("GOGC %d after stop and two collections: the pacer still runs", pct)
	}
}

// A heap grown past the headroom stays within it plus the floor: the collector runs before
// the heap passes live + headroom (the Go runtime's goal, which the percentage sets).
func TestPaceBoundsTheHeapGoal(t *testing.T) {
	const headroom, minPct = 8 << 20, 1
	startPace(t, headroom, minPct)
	holdForTest(48 * 16) // 48 MiB
	waitPercent(t, headroom, minPct, func(pct int) bool { return pct < 30 })
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}, {Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	goal, live := s[0].Value.Uint64(), s[1].Value.Uint64()
	// The goal counts stacks and globals too (GOGC applies to them): a few MiB of slack.
	if over := int64(goal) - int64(live); over > headroom+4<<20 {
		t.Fatalf("heap goal %s over %s live, want at most the %s headroom", mibs(over), mibs(int64(live)), mibs(headroom))
	}
}

func mibs(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
