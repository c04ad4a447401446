package view

import (
	"cmp"
	"slices"
	"time"

	"github.com/agentmem/agentmem/internal/longterm"
)

// Fact states.
const (
	// FactLive: the fact holds now.
	FactLive = "live"
	// FactSuperseded: a changed fact replaced it (SupersededBy, from ValidTo on); it is kept in
	// history.
	FactSuperseded = "superseded"
	// FactDeleted: it was deleted; it is kept in history.
	FactDeleted = "deleted"
)

// FactState is the state of f now: FactDeleted, FactSuperseded (a superseding fact or an end
// of validity) or FactLive.
func FactState(f longterm.Fact) string {
	switch {
	case f.Deleted:
		return FactDeleted
	case f.SupersededBy != "" || f.ValidTo != nil:
		return FactSuperseded
	}
	return FactLive
}

// Fact is one fact of a user as the read surfaces show it; its JSON is the HTTP API's
// (GET /v1/tenants/{tenant}/users/{user}/facts).
type Fact struct {
	ID       string `json:"id"`
	Content  string `json:"content"`
	Category string `json:"category"`
	// Key groups facts that supersede each other (user.city).
	Key string `json:"key,omitempty"`
	// ValidFrom is the time of the earliest turn that stated the fact; ValidTo the superseding
	// fact's ValidFrom (or when it was deleted).
	ValidFrom    time.Time  `json:"valid_from"`
	ValidTo      *time.Time `json:"valid_to,omitempty"`
	SupersededBy string     `json:"superseded_by,omitempty"`
	// Provenance lists the turn ids that stated it (never null).
	Provenance []string `json:"provenance"`
	Confidence float64  `json:"confidence"`
	// Extractor says what extracted it (rules or an LLM).
	Extractor string `json:"extractor,omitempty"`
	// State is FactLive, FactSuperseded or FactDeleted.
	State string `json:"state"`
	// Stored is the record as the long-term store holds it, for surfaces that show more of it.
	Stored longterm.Fact `json:"-"`
}

// NewFact returns the view of f.
func NewFact(f longterm.Fact) Fact {
	v := Fact{
		ID: f.ID, Content: f.Content, Category: f.Category, Key: f.Key, ValidFrom: f.ValidFrom, ValidTo: f.ValidTo,
		SupersededBy: f.SupersededBy, Provenance: f.Provenance, Confidence: f.Confidence, Extractor: f.Extractor,
		State: FactState(f), Stored: f,
	}
	if v.Provenance == nil {
		v.Provenance = []string{}
	}
	return v
}

// Facts returns the views of a user's facts, oldest first (by ValidFrom, then id): the live
// ones, or with history every version (superseded and deleted facts too). It never returns nil.
func Facts(facts []longterm.Fact, history bool) []Fact {
	out := make([]Fact, 0, len(facts))
	for _, f := range facts {
		v := NewFact(f)
		if history || v.State == FactLive {
			out = append(out, v)
		}
	}
	slices.SortFunc(out, func(a, b Fact) int {
		return cmp.Or(a.ValidFrom.Compare(b.ValidFrom), cmp.Compare(a.ID, b.ID))
	})
	return out
}
