package graph

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/agentmem/agentmem/internal/fact"
	"github.com/agentmem/agentmem/internal/longterm"
)

// Written counts what one Write stored: entities and edges new to the store.
type Written struct {
	Entities, Edges, Aliases int
}

// Write stores what an extractor found of a user's graph: each entity (its id derived from its
// normalised name), the user's own node when a relation names the user, each alias, and each
// relation as an edge (longterm.AddEdge: superseded and versioned as a fact is). stated gives
// each turn's time (an edge's statements are split at an end as a fact's are). Every write is
// idempotent and independent of order, so two extractors racing, or a replay, store the same
// graph. extractor is "rules" or "llm:<model>".
func Write(ctx context.Context, st *longterm.Store, tenant, user, extractor string, g fact.Graph, stated map[string]time.Time) (Written, error) {
	var w Written
	id := func(name string) string { return fact.EntityID(tenant, user, name) }
	for _, e := range g.Entities {
		_, isNew, err := st.PutEntity(ctx, longterm.Entity{
			ID: id(e.Name), Tenant: tenant, User: user, Name: e.Name, Type: e.Type, Provenance: e.Provenance,
			FirstSeen: e.Time, LastSeen: e.Last, Extractors: []string{extractor},
		})
		if err != nil {
			return w, err
		}
		if isNew {
			w.Entities++
		}
	}
	// The user's node: provenance the turns of the relations that name the user.
	var self longterm.Entity
	for _, r := range g.Relations {
		if r.Subject != fact.UserName && r.Object != fact.UserName {
			continue
		}
		if self.ID == "" {
			self = longterm.Entity{ID: fact.UserEntityID(tenant, user), Tenant: tenant, User: user, Name: fact.UserName,
				Type: longterm.EntityPerson, FirstSeen: r.Time, LastSeen: r.Time, Extractors: []string{extractor}}
		}
		for _, p := range r.Provenance {
			if !slices.Contains(self.Provenance, p) {
				self.Provenance = append(self.Provenance, p)
			}
			if t, ok := stated[p]; ok && t.After(self.LastSeen) {
				self.LastSeen = t
			}
		}
		if r.Time.Before(self.FirstSeen) {
			self.FirstSeen = r.Time
		}
	}
	if self.ID != "" {
		if _, isNew, err := st.PutEntity(ctx, self); err != nil {
			return w, err
		} else if isNew {
			w.Entities++
		}
	}
	for _, a := range g.Aliases {
		if _, err := st.PutAlias(ctx, longterm.Alias{
			ID: id(a.Alias), Tenant: tenant, User: user, Name: a.Alias, Of: id(a.Of), OfName: a.Of,
			Provenance: a.Provenance, Since: a.Time,
		}); err != nil {
			return w, err
		}
		w.Aliases++
	}
	for _, r := range g.Relations {
		subj, obj := id(r.Subject), ""
		if r.Object != "" {
			obj = id(r.Object)
		}
		e := longterm.Fact{
			Tenant: tenant, User: user, Key: fact.EdgeKey(subj, r.Relation, obj), ValidFrom: r.Time,
			Provenance: r.Provenance, Confidence: 0.8, Extractor: extractor, StatedAt: stated,
			Triple: &longterm.Triple{Subject: subj, Relation: r.Relation, Object: obj, SubjectName: r.Subject, ObjectName: r.Object},
		}
		e.ID = fact.EdgeID(tenant, user, subj, r.Relation, obj, r.Ended)
		e.Content = strings.TrimSpace(r.Subject + " " + r.Relation + " " + r.Object)
		if r.Ended {
			// The edge that ends a relation holds no object; for a relation of several objects
			// its key names the one it ends.
			e.Triple.Object, e.Triple.ObjectName = "", ""
			e.Content += " (ended)"
		}
		ch, err := st.AddEdge(ctx, e)
		if err != nil {
			return w, err
		}
		if ch.Added {
			w.Edges++
		}
	}
	return w, nil
}

// WriteEdit keeps the user's graph in step with a user's edit of a fact (package forget): the
// relation a keyed fact states (fact.GraphRules' reading of "The user lives in Lyon") is
// written as stated at `at`, the edit's time, so a correction's relation supersedes the one the
// corrected fact stated, and a deleted fact's relation ends (ended). A fact that states no
// relation writes nothing. extractor names the edit ("correction", "deletion").
func WriteEdit(ctx context.Context, st *longterm.Store, f longterm.Fact, ended bool, extractor string, at time.Time) (Written, error) {
	if f.Key == "" || len(f.Provenance) == 0 {
		return Written{}, nil
	}
	// The edit restates the fact at `at`: its provenance's turns are taken as said then, so
	// that the edge's validity starts with the edit, not with the turns that stated the fact.
	turns := make([]fact.Turn, 0, len(f.Provenance))
	stated := make(map[string]time.Time, len(f.Provenance))
	for _, p := range f.Provenance {
		turns = append(turns, fact.Turn{ID: p, Role: "assistant", Time: at})
		stated[p] = at
	}
	g := fact.GraphRules(turns, []fact.Candidate{{Content: f.Content, Category: f.Category, Key: f.Key,
		Confidence: f.Confidence, Provenance: f.Provenance, Time: at}})
	if ended {
		for i := range g.Relations {
			r := &g.Relations[i]
			if r.Ended {
				continue // a deleted "no longer lives in" ends nothing more
			}
			r.Ended = true
			if fact.Functional(r.Relation) {
				r.Object = "" // ends whatever held, as "no longer" does
			}
		}
	}
	return Write(ctx, st, f.Tenant, f.User, extractor, g, stated)
}
