package events

import (
	"strings"
	"time"
)

// Operations of a FactEvent.
const (
	// FactAdded: a new fact entered the long-term store.
	FactAdded = "added"
	// FactSuperseded: the fact was replaced by a changed one (SupersededBy)
	// and is kept in history.
	FactSuperseded = "superseded"
	// FactForgotten: the fact was removed because its user was forgotten.
	FactForgotten = "forgotten"
	// FactDeleted: the fact was deleted.
	FactDeleted = "deleted"
)

// Fact is a durable fact about a user in the long-term store.
type Fact struct {
	// ID is derived from the normalised content.
	ID       string `json:"id"`
	Content  string `json:"content"`
	Category string `json:"category"`
	// Key groups facts that supersede each other (e.g. "preferred_language").
	Key string `json:"key,omitempty"`
	// ValidFrom is the time of the earliest turn that stated the fact.
	ValidFrom time.Time `json:"valid_from"`
	// ValidTo is the superseding fact's ValidFrom; nil while the fact holds.
	ValidTo      *time.Time `json:"valid_to,omitempty"`
	SupersededBy string     `json:"superseded_by,omitempty"`
	// Provenance lists the turn ids that stated the fact.
	Provenance []string `json:"provenance"`
	Confidence float64  `json:"confidence"`
}

// FactEvent is the data of an agentmem.fact.v1 event, published by the
// extractor on memory.facts.<tenant>.<user>.
type FactEvent struct {
	// Op is FactAdded, FactSuperseded, FactForgotten or FactDeleted.
	Op   string `json:"op"`
	Fact Fact   `json:"fact"`
}

// Validate checks the op and that the fact has an id, and content when it
// is added or superseded. It returns nil or a *FieldError naming "op",
// "fact.id" or "fact.content".
func (e FactEvent) Validate() error {
	switch e.Op {
	case FactAdded, FactSuperseded, FactForgotten, FactDeleted:
	default:
		return fieldErrorValue("op", e.Op, "must be one of added, superseded, forgotten, deleted")
	}
	if strings.TrimSpace(e.Fact.ID) == "" {
		return &FieldError{Field: "fact.id", Message: "must not be empty"}
	}
	if (e.Op == FactAdded || e.Op == FactSuperseded) && strings.TrimSpace(e.Fact.Content) == "" {
		return &FieldError{Field: "fact.content", Message: "must not be empty"}
	}
	return nil
}
