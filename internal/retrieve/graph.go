package retrieve

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/agentmem/agentmem/pkg/events"
	"github.com/agentmem/agentmem/pkg/memory"
)

// graphRelated is what the user's graph makes of a query: the weight of each entry that
// belongs to an entity the query names (1) or to a neighbour of one (graph.Neighbour), and the
// entities used.
type graphRelated struct {
	weights map[string]float64 // by entry id
	used    []events.RetrievedEntity
}

// related finds the entries of the entities query names at `at` (package graph): their turns,
// and the facts and summaries made from those turns. Those that the keyword search did not find
// among the user's sources searched are added to out as candidates of no keyword relevance: at
// most k of them, as the keyword search gives at most k per source, the named entities' before
// their neighbours' and the newest first (a user who often speaks of their sister has hundreds
// of turns about her, and ranking them all cost a warm retrieve ten times its time). The view's
// lock is held.
func (u *userView) related(query string, at time.Time, long, arch bool, k int, out []candidate) (graphRelated, []candidate) {
	turns, used := u.graph.Related(query, at)
	if len(turns) == 0 {
		return graphRelated{}, out
	}
	// turns is a map of its own, request by request: it becomes the weights, facts' and
	// summaries' added (their ids are never turn ids, so a lookup of a turn reads the graph's).
	r := graphRelated{weights: turns}
	for _, e := range used {
		r.used = append(r.used, events.RetrievedEntity{ID: e.ID, Name: e.Name, Type: e.Type, Named: e.Named})
	}
	if long {
		for id, e := range u.long {
			for _, p := range e.Provenance {
				if w := turns[p]; w > r.weights[id] {
					r.weights[id] = w
				}
			}
		}
	}
	have := make(map[string]bool, len(out))
	for _, c := range out {
		have[c.entry.ID] = true
	}
	ids := make([]string, 0, len(r.weights))
	for id := range r.weights {
		if !have[id] {
			ids = append(ids, id)
		}
	}
	// The same candidates in the same order, request after request: the heavier first, then the
	// newest. Keys are sorted and only the first k made candidates: making them all cost more
	// than the search.
	type key struct {
		w    float64
		ts   int64
		id   string
		long bool
	}
	keys := make([]key, 0, len(ids))
	for _, id := range ids {
		if e, ok := u.long[id]; ok && long && u.visibleAt(id, at) && !e.Timestamp.After(at) {
			keys = append(keys, key{r.weights[id], e.Timestamp.UnixNano(), id, true})
		} else if e, ok := u.archive[id]; ok && arch && !e.Timestamp.After(at) {
			keys = append(keys, key{r.weights[id], e.Timestamp.UnixNano(), id, false})
		}
	}
	slices.SortFunc(keys, func(a, b key) int {
		if c := cmp.Compare(b.w, a.w); c != 0 {
			return c
		}
		if c := cmp.Compare(b.ts, a.ts); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	for _, kk := range keys[:min(len(keys), k)] {
		if kk.long {
			e := u.long[kk.id]
			out = append(out, candidate{entry: e, source: memory.SourceLong, session: sessionOfEntry(e)})
		} else {
			e := u.archive[kk.id]
			out = append(out, candidate{entry: e, source: memory.SourceArchive, session: sessionOfEntry(e)})
		}
	}
	return r, out
}

func sessionOfEntry(e memory.Entry) string {
	sess, _ := e.Metadata["session"].(string)
	return sess
}

// apply adds to each candidate that belongs to an entity the query names weight × its graph
// weight × the best relevance among the candidates (1 when none has any), so that the graph
// counts on the scale of this query's relevance. The addition is discounted as the keyword
// relevance is for a session's further turns (diversity, package rank): an archived turn's by
// the factor its own relevance got, a turn found only through the graph by diversity^n, n the
// turns of its session found so before it; so one session's many turns naming the entity do not
// crowd out the others. It returns the entities used.
func (r graphRelated) apply(cands []candidate, weight, diversity float64) []events.RetrievedEntity {
	if len(r.weights) == 0 || weight <= 0 {
		return nil
	}
	top := 0.0
	for _, c := range cands {
		top = max(top, c.score)
	}
	if top == 0 {
		top = 1
	}
	only := map[string]int{} // turns found only through the graph, per session
	for i := range cands {
		c := &cands[i]
		g := r.weights[c.entry.ID]
		if g <= 0 {
			continue
		}
		factor := 1.0
		switch {
		case c.keyword > 0:
			factor = min(c.relevance/c.keyword, 1)
		case c.source == memory.SourceArchive:
			factor = math.Pow(diversity, float64(only[c.session]))
			only[c.session]++
		}
		c.graph = weight * g * top * factor
		c.score += c.graph
	}
	return r.used
}
