// Package graph is a user's graph of entities and relations over time: who and what the
// user's conversations name (people, places, organisations, things, events), and how they
// relate (the user lives in Lisbon, the user's sister is Anna, Anna is married to Tom).
//
// The extractors find it (fact.GraphRules offline, fact.ParseAll from the LLM's answer, in the
// same call as the facts); [Write] stores it in the long-term store (package longterm: entities,
// aliases, and edges kept and superseded exactly as facts are). [Build] reads a user's records
// into a [View]: aliases folded (one node per entity), the relations that held at a time and
// their history. The retriever asks a View which entities a query names and which turns,
// facts and summaries are theirs or their neighbours' one hop away ([View.Related]); the HTTP
// API, memctl, the MCP server and the inspector show it ([View.At]).
package graph

import (
	"cmp"
	"slices"
	"strings"
	"time"
	"unicode"
	"unsafe"

	"github.com/agentmem/agentmem/internal/fact"
	"github.com/agentmem/agentmem/internal/longterm"
	"github.com/agentmem/agentmem/internal/search"
)

// Node is one entity of a View: its aliases folded in.
type Node struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Type string `json:"type,omitempty"`
	// Aliases are the other names folded into it (each an entity of its own in the store).
	Aliases    []string  `json:"aliases,omitempty"`
	Provenance []string  `json:"provenance"`
	FirstSeen  time.Time `json:"first_seen"`
	LastSeen   time.Time `json:"last_seen"`
	Extractors []string  `json:"extractors,omitempty"`
	// User is true on the user's own node.
	User bool `json:"user,omitempty"`
}

// Edge is one relation of a View, between two of its nodes.
type Edge struct {
	ID       string `json:"id"`
	Subject  string `json:"subject"` // node id
	Relation string `json:"relation"`
	// Object is a node id; empty on an edge that says a relation ended.
	Object       string     `json:"object,omitempty"`
	SubjectName  string     `json:"subject_name"`
	ObjectName   string     `json:"object_name,omitempty"`
	ValidFrom    time.Time  `json:"valid_from"`
	ValidTo      *time.Time `json:"valid_to,omitempty"`
	SupersededBy string     `json:"superseded_by,omitempty"`
	Provenance   []string   `json:"provenance"`
	Extractor    string     `json:"extractor"`
	Confidence   float64    `json:"confidence"`
}

// LiveAt reports whether the edge held at t.
func (e Edge) LiveAt(t time.Time) bool {
	return !e.ValidFrom.After(t) && (e.ValidTo == nil || e.ValidTo.After(t)) && e.Object != ""
}

// View is a user's graph, read from their long-term records. It is not safe for concurrent
// changes; reading it concurrently is.
type View struct {
	nodes map[string]*Node  // by node id (the canonical entity id)
	canon map[string]string // entity id -> node id
	edges []Edge            // every edge, history included, by valid_from
	// relWords are the words of each relation of the user's (fact.RelationWords), lower case;
	// userRels the user's edges of each relation (indexes into edges).
	relWords map[string][]string
	userRels map[string][]int
	names    []nameRef // every name and alias, longest first, for matching
	// provenance is each node's provenance by name (lower case): its own name's, each alias's.
	provenance map[string]map[string][]string
	// byFirst indexes the Latin names of names by their first word; spaceless lists the others.
	byFirst   map[string][]int
	spaceless []int
	user      string // the user's own node
}

type nameRef struct {
	name  string
	node  string
	lower string // the name in lower case
	first string // its first word, for a Latin name; "" for a name in Han or another script without spaces
}

// newNameRef prepares a name for matching.
func newNameRef(name, node string) nameRef {
	r := nameRef{name: name, node: node, lower: strings.ToLower(name)}
	if w := words(r.lower); len(w) > 0 && isLatin(name) {
		r.first = w[0]
	}
	return r
}

// words splits lower-case text into its words (runs of letters and digits).
func words(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// Build reads a user's records into a View: every alias folds its entity into the one it
// names (following chains; in a cycle the smallest id is the node), entities are merged into
// their node (provenance the union, first seen the earliest, last seen the latest), and every
// edge's ends are its nodes.
func Build(recs longterm.UserRecords) *View {
	v := &View{nodes: map[string]*Node{}, canon: map[string]string{}, provenance: map[string]map[string][]string{}}
	for _, e := range recs.Entities {
		v.user = fact.UserEntityID(e.Tenant, e.User)
		break
	}
	of := map[string]string{}
	for _, a := range recs.Aliases {
		of[a.ID] = a.Of
	}
	resolve := func(id string) string {
		seen := []string{id}
		cur := id
		for {
			next, ok := of[cur]
			if !ok {
				return cur
			}
			if slices.Contains(seen, next) {
				// A cycle: its smallest id is the node.
				i := slices.Index(seen, next)
				return slices.Min(seen[i:])
			}
			seen = append(seen, next)
			cur = next
		}
	}
	ents := slices.Clone(recs.Entities)
	// The nodes' own entities first, so that a node's name and first turns are its own.
	slices.SortFunc(ents, func(a, b longterm.Entity) int {
		ra, rb := resolve(a.ID) == a.ID, resolve(b.ID) == b.ID
		if ra != rb {
			if ra {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.ID, b.ID)
	})
	byID := map[string]longterm.Entity{}
	for _, e := range ents {
		byID[e.ID] = e
	}
	for _, e := range ents {
		id := resolve(e.ID)
		v.canon[e.ID] = id
		n, ok := v.nodes[id]
		if !ok {
			base, ok := byID[id]
			if !ok {
				base = e // the alias names an entity never stored: the alias is the node
				id = e.ID
				v.canon[e.ID] = id
			}
			n = &Node{ID: id, Name: base.Name, Type: base.Type, FirstSeen: base.FirstSeen, LastSeen: base.LastSeen}
			v.nodes[id] = n
		}
		if e.ID != id {
			n.Aliases = append(n.Aliases, e.Name)
		}
		if v.provenance[id] == nil {
			v.provenance[id] = map[string][]string{}
		}
		ln := strings.ToLower(e.Name)
		v.provenance[id][ln] = append(v.provenance[id][ln], e.Provenance...)
		if typeRank(e.Type) > typeRank(n.Type) {
			n.Type = e.Type
		}
		for _, p := range e.Provenance {
			if !slices.Contains(n.Provenance, p) {
				n.Provenance = append(n.Provenance, p)
			}
		}
		for _, x := range e.Extractors {
			if !slices.Contains(n.Extractors, x) {
				n.Extractors = append(n.Extractors, x)
			}
		}
		if e.FirstSeen.Before(n.FirstSeen) {
			n.FirstSeen = e.FirstSeen
		}
		if e.LastSeen.After(n.LastSeen) {
			n.LastSeen = e.LastSeen
		}
	}
	for _, n := range v.nodes {
		slices.Sort(n.Aliases)
		slices.Sort(n.Extractors)
		n.User = n.ID == v.user
		if n.User {
			continue // "user" names no one in a query
		}
		for _, name := range append([]string{n.Name}, n.Aliases...) {
			// A name of stop words only ("The Who", "我们") would be found in every query.
			if len(search.Terms(name)) > 0 {
				v.names = append(v.names, newNameRef(name, n.ID))
			}
		}
	}
	slices.SortFunc(v.names, func(a, b nameRef) int {
		if c := cmp.Compare(len(b.name), len(a.name)); c != 0 {
			return c
		}
		return cmp.Compare(a.name, b.name)
	})
	v.byFirst = map[string][]int{}
	for i, nr := range v.names {
		if nr.first != "" {
			v.byFirst[nr.first] = append(v.byFirst[nr.first], i)
		} else {
			v.spaceless = append(v.spaceless, i)
		}
	}
	for _, f := range recs.Edges {
		if f.Triple == nil || f.Deleted {
			continue
		}
		e := Edge{
			ID: f.ID, Subject: v.node(f.Triple.Subject), Relation: f.Triple.Relation, SubjectName: f.Triple.SubjectName,
			ObjectName: f.Triple.ObjectName, ValidFrom: f.ValidFrom, ValidTo: f.ValidTo, SupersededBy: f.SupersededBy,
			Provenance: f.Provenance, Extractor: f.Extractor, Confidence: f.Confidence,
		}
		if f.Triple.Object != "" {
			e.Object = v.node(f.Triple.Object)
		}
		if n, ok := v.nodes[e.Subject]; ok {
			e.SubjectName = n.Name
		}
		if n, ok := v.nodes[e.Object]; ok {
			e.ObjectName = n.Name
		}
		v.edges = append(v.edges, e)
	}
	slices.SortFunc(v.edges, func(a, b Edge) int {
		if c := a.ValidFrom.Compare(b.ValidFrom); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	v.relWords, v.userRels = map[string][]string{}, map[string][]int{}
	for i, e := range v.edges {
		if e.Subject != v.user || e.Object == "" {
			continue
		}
		if _, ok := v.relWords[e.Relation]; !ok {
			var ws []string
			for _, w := range fact.RelationWords(e.Relation) {
				ws = append(ws, strings.ToLower(w))
			}
			v.relWords[e.Relation] = ws
		}
		v.userRels[e.Relation] = append(v.userRels[e.Relation], i)
	}
	return v
}

// node is the node of an entity id (the id itself when the entity was never stored).
func (v *View) node(id string) string {
	if n, ok := v.canon[id]; ok {
		return n
	}
	return id
}

func typeRank(t string) int {
	switch t {
	case "":
		return 0
	case longterm.EntityThing:
		return 1
	}
	return 2
}

// Len is the number of nodes.
func (v *View) Len() int { return len(v.nodes) }

// Node returns a node by its id or the id of any entity folded into it.
func (v *View) Node(id string) (Node, bool) {
	n, ok := v.nodes[v.node(id)]
	if !ok {
		return Node{}, false
	}
	return *n, true
}

// Snapshot is a user's graph at a time: the nodes first seen by then, the relations that held
// then, and the history (every edge stated by then, ended or not, oldest first).
type Snapshot struct {
	At        time.Time `json:"at"`
	Entities  []Node    `json:"entities"`
	Relations []Edge    `json:"relations"`
	History   []Edge    `json:"history"`
}

// At returns the graph as it was at t. An edge that ended after t is shown as it was then,
// without its valid_to; nodes are ordered by name.
func (v *View) At(t time.Time) Snapshot {
	s := Snapshot{At: t, Entities: []Node{}, Relations: []Edge{}, History: []Edge{}}
	for _, n := range v.nodes {
		if !n.FirstSeen.After(t) {
			s.Entities = append(s.Entities, *n)
		}
	}
	slices.SortFunc(s.Entities, func(a, b Node) int {
		if a.User != b.User {
			if a.User {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	for _, e := range v.edges {
		if e.ValidFrom.After(t) {
			continue
		}
		if e.ValidTo != nil && e.ValidTo.After(t) {
			e.ValidTo, e.SupersededBy = nil, ""
		}
		s.History = append(s.History, e)
		if e.LiveAt(t) {
			s.Relations = append(s.Relations, e)
		}
	}
	return s
}

// Bytes estimates the memory the view holds: its nodes, edges, names and provenance lists (the
// strings' bytes and headers, the structs, the maps' entries at a word or two each). It is what
// a retriever counts against its cap of the users' views (package retrieve).
func (v *View) Bytes() int {
	if v == nil {
		return 0
	}
	const word = 8
	strs := func(ss []string) int {
		n := len(ss) * 2 * word
		for _, s := range ss {
			n += len(s)
		}
		return n
	}
	n := 0
	for id, nd := range v.nodes {
		n += len(id) + 2*word + int(unsafe.Sizeof(*nd)) + len(nd.ID) + len(nd.Name) + len(nd.Type) +
			strs(nd.Aliases) + strs(nd.Provenance) + strs(nd.Extractors)
	}
	for k, c := range v.canon {
		n += len(k) + len(c) + 4*word
	}
	for _, e := range v.edges {
		n += int(unsafe.Sizeof(e)) + len(e.ID) + len(e.Subject) + len(e.Relation) + len(e.Object) +
			len(e.SubjectName) + len(e.ObjectName) + len(e.SupersededBy) + len(e.Extractor) + strs(e.Provenance)
	}
	for rel, ws := range v.relWords {
		n += len(rel) + 2*word + strs(ws)
	}
	for rel, is := range v.userRels {
		n += len(rel) + 2*word + len(is)*word
	}
	for _, r := range v.names {
		n += int(unsafe.Sizeof(r)) + len(r.name) + len(r.lower) + len(r.first) // node shares the node's id
	}
	for id, byName := range v.provenance {
		n += len(id) + 2*word
		for name, prov := range byName {
			n += len(name) + 2*word + strs(prov)
		}
	}
	for w, is := range v.byFirst {
		n += len(w) + 2*word + len(is)*word
	}
	return n + len(v.spaceless)*word
}
