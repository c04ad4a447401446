package events

import (
	"strings"
	"time"
)

// Usage is what the LLM calls behind a result cost.
type Usage struct {
	Calls        int `json:"calls"`
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

// Summary is the data of an agentmem.summary.v1 event: the compressor's
// result for a pressure event, published on
// memory.summaries.<tenant>.<session>.
type Summary struct {
	Session string `json:"session"`
	User    string `json:"user"`
	// SummaryID is the summary's id, derived from the turn ids it covers
	// (the pressure event's SummaryID).
	SummaryID string `json:"summary_id"`
	Content   string `json:"content"`
	// Replaces lists the entry ids the summary replaces in short-term memory.
	Replaces []string `json:"replaces"`
	// Provenance lists the turn ids covered, through earlier summaries too.
	Provenance []string `json:"provenance"`
	// Timestamp is the newest covered turn's time.
	Timestamp time.Time `json:"timestamp"`
	// Summarizer names what wrote the summary (a model, or the offline
	// extractive summariser).
	Summarizer string `json:"summarizer"`
	Usage      Usage  `json:"usage"`

	// Extensions beyond DESIGN.md, copied from the pressure event: its number and the stream
	// sequences of the first and last turn it named.
	Pressure int    `json:"pressure,omitempty"`
	FirstSeq uint64 `json:"first_seq,omitempty"`
	LastSeq  uint64 `json:"last_seq,omitempty"`
	// Language is the summary's language ("zh" or "en").
	Language string `json:"language,omitempty"`
}

// Validate checks that session and user are valid tokens and that the
// summary id and content are not blank. It returns nil or a *FieldError
// naming the field.
func (s Summary) Validate() error {
	if err := ValidateToken("session", s.Session); err != nil {
		return err
	}
	if err := ValidateToken("user", s.User); err != nil {
		return err
	}
	if strings.TrimSpace(s.SummaryID) == "" {
		return &FieldError{Field: "summary_id", Message: "must not be empty"}
	}
	if strings.TrimSpace(s.Content) == "" {
		return &FieldError{Field: "content", Message: "must not be empty"}
	}
	return nil
}
