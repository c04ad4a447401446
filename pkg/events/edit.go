package events

import (
	"fmt"
	"time"
)

// EditSubjects are agentmem's records of the edits a user made to derived memory (a fact
// deleted or corrected through memory.forget.<tenant>), kept in the turns stream beside the
// turns: the record from which memory is rebuilt holds them too, so a replay applies them where
// they were made. Not part of the v1 contract: agentmem's own services write and read them.
const EditSubjects = "memory.edits.>"

// KindEdits is the kind of an edit's subject (EditSubject): its key is the user.
const KindEdits = "edits"

// TypeEdit is the type of an edit record (Edit).
const TypeEdit = "agentmem.edit.v1"

// Ops of an Edit.
const (
	EditDeleteFact  = "delete_fact"
	EditCorrectFact = "correct_fact"
)

// EditSubject returns memory.edits.<tenant>.<user>, where the forget service records the edits
// of a user's facts, in the turns stream. It fails with a *FieldError when a token is not valid.
func EditSubject(tenant, user string) (string, error) {
	return subjectWith("memory."+KindEdits, []string{"tenant", "user"}, tenant, user)
}

// Edit is the record of an edit of a user's derived memory, with everything needed to make it
// again identically: the fact, when it was made, and for a correction the new fact's id, content
// and tokens.
type Edit struct {
	Op     string    `json:"op"`
	User   string    `json:"user"`
	FactID string    `json:"fact_id"`
	At     time.Time `json:"at"`
	NewID  string    `json:"new_id,omitempty"`
	// Content and Tokens are the correcting fact's.
	Content string `json:"content,omitempty"`
	Tokens  int    `json:"tokens,omitempty"`
}

// Validate reports the first field of e that is not valid, as a *FieldError wrapping ErrInvalid.
func (e Edit) Validate() error {
	switch {
	case e.Op != EditDeleteFact && e.Op != EditCorrectFact:
		return fieldErrorValue("op", e.Op, fmt.Sprintf("want %s or %s", EditDeleteFact, EditCorrectFact))
	case e.At.IsZero():
		return &FieldError{Field: "at", Message: "is required"}
	case e.FactID == "":
		return &FieldError{Field: "fact_id", Message: "is required"}
	case e.Op == EditCorrectFact && (e.NewID == "" || e.Content == ""):
		return &FieldError{Field: "content", Message: "a correction needs the new fact's id and content"}
	}
	return ValidateToken("user", e.User)
}
