package eval

import (
	"slices"
	"sort"
	"sync"

	"github.com/agentmem/agentmem/pkg/events"
)

// RankedTurnIDs flattens a reply into the ranked list of distinct turn ids that the metrics are
// computed on: an entry's own id when isTurn accepts it (a CONVERSATION or TOOL_RESULT entry of
// the data set), else the ids in its provenance that isTurn accepts (a fact or a summary stands
// for the turns it came from), in order. An id keeps its first position.
func RankedTurnIDs(entries []events.RetrievedEntry, isTurn func(id string) bool) []string {
	seen := map[string]bool{}
	var out []string
	add := func(id string) {
		if isTurn(id) && !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	for _, e := range entries {
		if isTurn(e.ID) {
			add(e.ID)
			continue
		}
		for _, p := range e.Provenance {
			add(p)
		}
	}
	return out
}

// RecallAt is the fraction of gold ids among the first k ranked ids (0 without gold ids).
func RecallAt(ranked, gold []string, k int) float64 {
	if len(gold) == 0 {
		return 0
	}
	top := ranked[:min(k, len(ranked))]
	hit := 0
	for _, g := range gold {
		if slices.Contains(top, g) {
			hit++
		}
	}
	return float64(hit) / float64(len(gold))
}

// HitAt is 1 when any gold id is among the first k ranked ids, else 0.
func HitAt(ranked, gold []string, k int) float64 {
	return b2f(RecallAt(ranked, gold, k) > 0)
}

// SessionRecallAt reports, for the sessions of the first k ranked ids (sessionOf maps a turn id
// to its session), whether every gold session is among them (all) and whether any is (any).
func SessionRecallAt(ranked []string, sessionOf func(id string) string, gold []string, k int) (all, any float64) {
	if len(gold) == 0 {
		return 0, 0
	}
	sessions := map[string]bool{}
	for _, id := range ranked[:min(k, len(ranked))] {
		sessions[sessionOf(id)] = true
	}
	hits := 0
	for _, g := range gold {
		if sessions[g] {
			hits++
		}
	}
	return b2f(hits == len(gold)), b2f(hits > 0)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Mean is the mean of a metric over the questions it applies to.
type Mean struct {
	Value float64 `json:"value"`
	N     int     `json:"n"`
}

// means accumulates the means of named metrics per group; safe for concurrent use.
type means struct {
	mu  sync.Mutex
	sum map[string]map[string]float64
	n   map[string]map[string]int
}

func newMeans() *means {
	return &means{sum: map[string]map[string]float64{}, n: map[string]map[string]int{}}
}

// add counts every metric of m in each of groups.
func (a *means) add(m map[string]float64, groups ...string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, g := range groups {
		if a.sum[g] == nil {
			a.sum[g], a.n[g] = map[string]float64{}, map[string]int{}
		}
		for k, v := range m {
			a.sum[g][k] += v
			a.n[g][k]++
		}
	}
}

// result returns every group's means.
func (a *means) result() map[string]map[string]Mean {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string]map[string]Mean, len(a.sum))
	for g, ms := range a.sum {
		out[g] = make(map[string]Mean, len(ms))
		for k, s := range ms {
			out[g][k] = Mean{Value: s / float64(a.n[g][k]), N: a.n[g][k]}
		}
	}
	return out
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
