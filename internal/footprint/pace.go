package footprint

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// Pace sets the garbage collector's pace after every collection so that the heap may grow by
// at most headroom bytes over what the collection found live, or by minPercent of it when that
// is more, and never by more than GOGC=100 lets it (the percentage set, debug.SetGCPercent, is
// min(100, max(minPercent, 100*headroom/live))).
//
// Why: with Go's default (GOGC=100) the heap grows to twice its live part between collections,
// so every byte a process keeps costs it two of memory. memoryd keeps its users' views, which
// grow with the users loaded; a fixed headroom makes a loaded byte cost one (and minPercent
// more), while a small process (live heap under headroom) is paced exactly as by default. The
// price is collections more often once the live heap passes headroom: a collection per headroom
// bytes allocated, each marking the live heap (docs/operations.md, Memory, measures both).
//
// Pace returns a function that stops it and restores the percentage there was. A process
// calls it once; the GOGC environment variable, when set, is the operator's choice and Pace is
// not called (memoryd's --gc-headroom says so).
func Pace(headroom int64, minPercent int) (stop func()) {
	p := &pacer{headroom: headroom, minPercent: minPercent, prior: debug.SetGCPercent(100)}
	debug.SetGCPercent(p.prior)
	p.adjust()
	p.arm()
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if !p.stopped {
			p.stopped = true
			debug.SetGCPercent(p.prior)
		}
	}
}

type pacer struct {
	headroom   int64
	minPercent int
	prior      int
	mu         sync.Mutex // stop and adjust, so that none sets a percentage after stop
	stopped    bool
	set        int // the percentage last set
}

// sentinel is an object nothing refers to: its cleanup runs once a collection has found it
// unreachable, that is after every collection, and arms the next one. It is larger than the
// tiny allocator's blocks, so that it is freed on its own.
type sentinel struct{ _ [32]byte }

func (p *pacer) arm() {
	runtime.AddCleanup(new(sentinel), func(p *pacer) {
		if p.adjust() {
			p.arm()
		}
	}, p)
}

// adjust sets the percentage for the live heap the last collection marked; false once the
// pacer is stopped.
func (p *pacer) adjust() bool {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return false
	}
	if s[0].Value.Kind() == metrics.KindUint64 {
		if pct := percentFor(int64(s[0].Value.Uint64()), p.headroom, p.minPercent); pct != p.set {
			debug.SetGCPercent(pct)
			p.set = pct
		}
	}
	return true
}

// percentFor is the GOGC percentage that lets a heap of live bytes grow by headroom, at least
// minPercent and at most 100.
func percentFor(live, headroom int64, minPercent int) int {
	if live <= 0 || headroom >= live {
		return 100
	}
	pct := int(math.Ceil(100 * float64(headroom) / float64(live)))
	return min(100, max(minPercent, pct))
}
