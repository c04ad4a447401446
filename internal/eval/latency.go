package eval

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"time"
)

// Latency summarises request round trips, in milliseconds.
type Latency struct {
	N    int     `json:"n"`
	P50  float64 `json:"p50_ms"`
	P95  float64 `json:"p95_ms"`
	P99  float64 `json:"p99_ms"`
	Mean float64 `json:"mean_ms"`
	Max  float64 `json:"max_ms"`
}

func (l Latency) String() string {
	if l.N == 0 {
		return "n=0"
	}
	return fmt.Sprintf("n=%d p50=%.1fms p95=%.1fms p99=%.1fms mean=%.1fms max=%.1fms", l.N, l.P50, l.P95, l.P99, l.Mean, l.Max)
}

// Percentile is the p-th percentile (0-100) of sorted values with linear interpolation between
// the closest ranks (numpy's default); NaN without values.
func Percentile(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	pos := p / 100 * float64(n-1)
	lo, hi := int(math.Floor(pos)), int(math.Ceil(pos))
	lo, hi = max(lo, 0), min(hi, n-1)
	return sorted[lo] + (sorted[hi]-sorted[lo])*(pos-float64(lo))
}

// latencies collects round trips; safe for concurrent use.
type latencies struct {
	mu sync.Mutex
	ms []float64
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.ms = append(l.ms, float64(d)/float64(time.Millisecond))
	l.mu.Unlock()
}

func (l *latencies) summary() Latency {
	l.mu.Lock()
	v := slices.Clone(l.ms)
	l.mu.Unlock()
	if len(v) == 0 {
		return Latency{}
	}
	slices.Sort(v)
	s := Latency{N: len(v), P50: Percentile(v, 50), P95: Percentile(v, 95), P99: Percentile(v, 99), Max: v[len(v)-1]}
	for _, x := range v {
		s.Mean += x
	}
	s.Mean /= float64(len(v))
	return s
}
