package longterm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// The user's graph: entities (the people, places, organisations, things and events the user's
// conversations name), aliases (one name is another's other name) and edges (a relation between
// two entities over a time). Every record's id is derived from its normalised content
// (fact.EntityID, fact.EdgeID), so two extractors racing store each once, and every write is a
// merge that does not depend on the order of arrival: a replay rebuilds the same graph.
//
// An edge is a Fact with a Triple, stored under its own kinds ("e", and "r" for the slot of its
// key) and kept by the same code as facts: a newer edge of the same key supersedes the live one,
// which stays in the history with valid_to and superseded_by; an edge stated again after it ended
// comes back as its next version. There is one temporal model, not two.

// Entity is one node of a user's graph.
type Entity struct {
	ID     string `json:"id"`
	Tenant string `json:"tenant"`
	User   string `json:"user"`
	// Name is the entity's name as first stated (the earliest statement's; the smallest of
	// those made at the same time).
	Name string `json:"name"`
	// Type is person, place, organization, thing or event; "" when no extractor could tell.
	Type string `json:"type,omitempty"`
	// Provenance lists the turns that name the entity.
	Provenance []string  `json:"provenance"`
	FirstSeen  time.Time `json:"first_seen"`
	LastSeen   time.Time `json:"last_seen"`
	// Extractors lists the extractors that named it: "rules", "llm:<model>".
	Extractors []string `json:"extractors,omitempty"`
}

// The types of an entity.
const (
	EntityPerson       = "person"
	EntityPlace        = "place"
	EntityOrganization = "organization"
	EntityThing        = "thing"
	EntityEvent        = "event"
)

// ValidEntityType reports whether t is one of the entity types (or "", unknown).
func ValidEntityType(t string) bool {
	switch t {
	case "", EntityPerson, EntityPlace, EntityOrganization, EntityThing, EntityEvent:
		return true
	}
	return false
}

// typeRank orders types by how much they say: a specific type wins over "thing" and "".
func typeRank(t string) int {
	switch t {
	case "":
		return 0
	case EntityThing:
		return 1
	}
	return 2
}

// merge folds the statement st of the same entity into e and reports whether e changed. The
// result does not depend on the order of the statements.
func (e *Entity) merge(st Entity) bool {
	changed := false
	earlier := st.FirstSeen.Before(e.FirstSeen) || (st.FirstSeen.Equal(e.FirstSeen) && st.Name < e.Name)
	if earlier && st.Name != e.Name {
		e.Name, changed = st.Name, true
	}
	if st.FirstSeen.Before(e.FirstSeen) {
		e.FirstSeen, changed = st.FirstSeen, true
	}
	if st.LastSeen.After(e.LastSeen) {
		e.LastSeen, changed = st.LastSeen, true
	}
	if st.Type != e.Type {
		r, cur := typeRank(st.Type), typeRank(e.Type)
		if r > cur || (r == cur && st.Type < e.Type) {
			e.Type, changed = st.Type, true
		}
	}
	for _, p := range st.Provenance {
		if !slices.Contains(e.Provenance, p) {
			e.Provenance, changed = append(e.Provenance, p), true
		}
	}
	for _, x := range st.Extractors {
		if !slices.Contains(e.Extractors, x) {
			e.Extractors, changed = append(e.Extractors, x), true
			slices.Sort(e.Extractors)
		}
	}
	return changed
}

// PutEntity stores one statement of an entity: a new entity is created, a known one (same id)
// gains the provenance, the earliest first-seen and the latest last-seen. It reports whether the
// entity was new.
func (s *Store) PutEntity(ctx context.Context, e Entity) (Entity, bool, error) {
	if e.ID == "" || e.Name == "" {
		return Entity{}, false, fmt.Errorf("entity %q: %w", e.Name, errIncomplete)
	}
	if !ValidEntityType(e.Type) {
		return Entity{}, false, fmt.Errorf("entity %q: type %q is not person, place, organization, thing or event", e.Name, e.Type)
	}
	stored, out, err := update(ctx, s, recordKey{e.Tenant, e.User, kindEntity, e.ID},
		func() (Entity, bool) { return e, true },
		func(cur *Entity) bool { return cur.merge(e) })
	return stored, out == created, err
}

// Entity reads one entity.
func (s *Store) Entity(ctx context.Context, tenant, user, id string) (Entity, error) {
	var e Entity
	err := s.read(ctx, recordKey{tenant, user, kindEntity, id}, &e)
	return e, err
}

// Alias says that the entity ID is another name of the entity Of ("Mel" of "Melanie", 小美 of
// 王美丽), as the conversation said (Provenance). A reader folds the one into the other
// (package graph).
type Alias struct {
	ID     string `json:"id"` // the alias's own entity id
	Tenant string `json:"tenant"`
	User   string `json:"user"`
	Name   string `json:"name"` // the alias as stated
	// Of is the id of the entity it names, OfName that entity's name.
	Of         string   `json:"of"`
	OfName     string   `json:"of_name"`
	Provenance []string `json:"provenance"`
	// Since is when the conversation first said so.
	Since time.Time `json:"since"`
}

// PutAlias stores that a.ID is another name of a.Of. When the same alias is said to name two
// entities, the smaller id of the two is kept (a choice that does not depend on the order of
// arrival); provenance is the union, Since the earliest.
func (s *Store) PutAlias(ctx context.Context, a Alias) (Alias, error) {
	if a.ID == "" || a.Of == "" || a.ID == a.Of {
		return Alias{}, fmt.Errorf("alias %q of %q: %w", a.Name, a.OfName, errIncomplete)
	}
	stored, _, err := update(ctx, s, recordKey{a.Tenant, a.User, kindAlias, a.ID},
		func() (Alias, bool) { return a, true },
		func(cur *Alias) bool {
			changed := false
			if a.Of < cur.Of {
				cur.Of, cur.OfName, changed = a.Of, a.OfName, true
			}
			if a.Since.Before(cur.Since) {
				cur.Since, changed = a.Since, true
			}
			for _, p := range a.Provenance {
				if !slices.Contains(cur.Provenance, p) {
					cur.Provenance, changed = append(cur.Provenance, p), true
				}
			}
			return changed
		})
	return stored, err
}

// Triple names an edge's entities and relation.
type Triple struct {
	Subject string `json:"subject"` // entity id
	// Relation is a lower-case slug: lives_in, works_at, sister, married_to, has_pet, …
	Relation string `json:"relation"`
	// Object is an entity id; empty on an edge that says the relation ended ("the user no
	// longer lives in Paris": it supersedes the live edge of its key and holds nothing).
	Object string `json:"object,omitempty"`
	// SubjectName and ObjectName are the names the edge was stated with.
	SubjectName string `json:"subject_name"`
	ObjectName  string `json:"object_name,omitempty"`
}

var (
	errIncomplete   = errors.New("longterm: incomplete record")
	errTripleInFact = errors.New("longterm: a fact with a triple is an edge (AddEdge)")
)

// AddEdge stores an edge of the user's graph: a Fact whose Triple is set, with an id derived
// from its triple (fact.EdgeID) and, for a relation that holds one object at a time (lives_in,
// works_at, married_to), a Key (fact.EdgeKey). It is kept exactly as AddFact keeps a fact: the
// same edge stated again merges, a newer edge of the same key supersedes the live one (which
// keeps its history), an older one goes straight into the history, and an edge stated again
// after it ended comes back as its next version.
func (s *Store) AddEdge(ctx context.Context, e Fact) (FactChange, error) {
	if e.Triple == nil || e.Triple.Subject == "" || e.Triple.Relation == "" || e.ID == "" {
		return FactChange{}, fmt.Errorf("edge %q: %w: want an id and a triple with a subject and a relation", e.ID, errIncomplete)
	}
	if e.Category == "" {
		e.Category = "relation"
	}
	return s.add(ctx, edgeKinds, e)
}

// Edge reads one edge.
func (s *Store) Edge(ctx context.Context, tenant, user, id string) (Fact, error) {
	var e Fact
	err := s.read(ctx, recordKey{tenant, user, kindEdge, id}, &e)
	return e, err
}
