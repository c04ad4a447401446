package graph

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/agentmem/agentmem/internal/fact"
)

// Neighbour is the weight of what belongs to a neighbour (one hop away from an entity a query
// names) beside what belongs to the named entity (1).
const Neighbour = 0.5

// Used is an entity a query named, or a neighbour of one, as the retriever reports it.
type Used struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Type string `json:"type,omitempty"`
	// Named is true for an entity the query names (by its name, an alias, or a relation of the
	// user's: "my sister"), false for a neighbour.
	Named bool `json:"named"`
}

// Related finds the entities query names at time at (by a name or an alias, as a whole word;
// or by a relation of the user, "my sister" naming the user's sister) and their neighbours one
// hop away along the edges stated by then (ended or not: "where did Anna live before?"), and
// returns the turns that are theirs with a weight: 1 for a turn of a named entity that the
// keyword search would not find by the query's words (one that names it by another name, an
// alias; any of its turns when the query names it by a relation; a turn stating a relation of
// such an entity), Neighbour for a neighbour's turn. The user's own node is never expanded (it
// neighbours everything). turns is nil when the query names nothing; used lists the named
// entities and the neighbours either way.
func (v *View) Related(query string, at time.Time) (turns map[string]float64, used []Used) {
	if v == nil || len(v.nodes) == 0 {
		return nil, nil
	}
	// named: the nodes the query names; said: the names of each the query holds as written
	// (empty for a node named by a relation word).
	named := map[string]bool{}
	said := map[string][]string{}
	lower := strings.ToLower(query)
	inQuery := map[string]bool{}
	for _, w := range words(lower) {
		inQuery[w] = true
	}
	// A Latin name is looked up by its first word, then found whole, as words; a name in Han or
	// another script without spaces anywhere in the query.
	for w := range inQuery {
		for _, i := range v.byFirst[w] {
			if nr := v.names[i]; fact.Mentions(lower, nr.lower) {
				named[nr.node] = true
				said[nr.node] = append(said[nr.node], nr.lower)
			}
		}
	}
	for _, i := range v.spaceless {
		if nr := v.names[i]; strings.Contains(lower, nr.lower) {
			named[nr.node] = true
			said[nr.node] = append(said[nr.node], nr.lower)
		}
	}
	// A relation of the user's named by its word: "my sister", 我妹妹.
	for rel, idxs := range v.userRels {
		hit := false
		for _, w := range v.relWords[rel] {
			if inQuery[w] || (!isLatin(w) && strings.Contains(query, w)) {
				hit = true
				break
			}
		}
		if !hit {
			continue
		}
		for _, i := range idxs {
			if e := &v.edges[i]; !e.ValidFrom.After(at) && !named[e.Object] {
				named[e.Object] = true
			}
		}
	}
	if len(named) == 0 {
		return nil, nil
	}
	turns = map[string]float64{}
	give := func(ids []string, w float64) {
		for _, id := range ids {
			if turns[id] < w {
				turns[id] = w
			}
		}
	}
	// What the keyword search finds by itself is left to it: the turns that name an entity by
	// the name the query uses. The graph adds the turns of its other names (an alias), of an
	// entity the query names by a relation, the turns that state those relations, and the
	// neighbours' turns.
	neighbours := map[string]bool{}
	for i := range v.edges {
		e := &v.edges[i]
		if e.ValidFrom.After(at) {
			continue
		}
		s, o := named[e.Subject], named[e.Object]
		if !s && !o {
			continue
		}
		if (s && len(said[e.Subject]) == 0) || (o && len(said[e.Object]) == 0) {
			give(e.Provenance, 1)
		}
		if s && e.Object != "" && !named[e.Object] && e.Object != v.user {
			neighbours[e.Object] = true
		}
		if o && !named[e.Subject] && e.Subject != v.user {
			neighbours[e.Subject] = true
		}
	}
	for id := range named {
		n, ok := v.nodes[id]
		if !ok {
			continue
		}
		for name, prov := range v.provenance[id] {
			if !slices.Contains(said[id], name) {
				give(prov, 1)
			}
		}
		used = append(used, Used{ID: id, Name: n.Name, Type: n.Type, Named: true})
	}
	for id := range neighbours {
		if n, ok := v.nodes[id]; ok && !n.FirstSeen.After(at) {
			give(n.Provenance, Neighbour)
			used = append(used, Used{ID: id, Name: n.Name, Type: n.Type})
		}
	}
	sortUsed(used)
	return turns, used
}

// sortUsed orders the named entities first, then by name.
func sortUsed(u []Used) {
	slices.SortFunc(u, func(a, b Used) int {
		if a.Named != b.Named {
			if a.Named {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
}

func isLatin(s string) bool {
	for _, r := range s {
		if r >= 0x2E80 {
			return false
		}
	}
	return true
}
