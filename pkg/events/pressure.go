package events

import "strings"

// Pressure is the data of an agentmem.pressure.v1 event: ingest asks the
// compressor to summarise the exact entries named, published on
// memory.pressure.<tenant>.<session>.
//
// Number, SummaryID, SummaryTokens and Provenance extend the body given in
// DESIGN.md: they make the compressor's result deterministic and let ingest
// account for it before it arrives.
type Pressure struct {
	Session string `json:"session"`
	User    string `json:"user"`
	// Tokens is the short-term memory's token count when pressure was
	// raised, Budget its token budget and Ratio Tokens/Budget.
	Tokens int     `json:"tokens"`
	Budget int     `json:"budget"`
	Ratio  float64 `json:"ratio"`
	// EntryIDs are the exact entries to compress, the previous summary
	// first if there is one.
	EntryIDs []string `json:"entry_ids"`
	// FirstSeq and LastSeq are the turns-stream sequences of the first and
	// last turn covered.
	FirstSeq uint64 `json:"first_seq"`
	LastSeq  uint64 `json:"last_seq"`

	// Number is 1 for the session's first pressure event, 2 for the second,
	// and so on (extension).
	Number int `json:"number"`
	// SummaryID is the id the resulting summary must carry (extension).
	SummaryID string `json:"summary_id"`
	// SummaryTokens is the token cap ingest accounts the summary at from the
	// moment this event is raised (extension).
	SummaryTokens int `json:"summary_tokens"`
	// Provenance lists the turn ids covered, including those inside the
	// previous summary (extension).
	Provenance []string `json:"provenance,omitempty"`
}

// Validate checks that session and user are valid tokens, that there is at
// least one entry id and none is blank, and that the summary id is set. It
// returns nil or a *FieldError naming the field.
func (p Pressure) Validate() error {
	if err := ValidateToken("session", p.Session); err != nil {
		return err
	}
	if err := ValidateToken("user", p.User); err != nil {
		return err
	}
	if len(p.EntryIDs) == 0 {
		return &FieldError{Field: "entry_ids", Message: "must name at least one entry"}
	}
	for _, id := range p.EntryIDs {
		if strings.TrimSpace(id) == "" {
			return &FieldError{Field: "entry_ids", Message: "must not contain an empty id"}
		}
	}
	if strings.TrimSpace(p.SummaryID) == "" {
		return &FieldError{Field: "summary_id", Message: "must not be empty"}
	}
	return nil
}
