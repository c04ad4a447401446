package memory

import (
	"fmt"
	"time"
)

// Type is the kind of an Entry.
type Type string

// The four entry types.
const (
	// Conversation is a user, assistant or system turn.
	Conversation Type = "CONVERSATION"
	// ToolResult is a turn with role "tool".
	ToolResult Type = "TOOL_RESULT"
	// Summary is the compressed form of older entries.
	Summary Type = "SUMMARY"
	// Fact is a durable fact extracted from a conversation.
	Fact Type = "FACT"
)

// types lists every Type in the order they are documented.
var types = []Type{Conversation, ToolResult, Summary, Fact}

// ParseType returns the Type named by s. Names are exact and upper-case
// ("CONVERSATION", "TOOL_RESULT", "SUMMARY", "FACT"); any other value gives an
// error that names it and the allowed values.
func ParseType(s string) (Type, error) {
	for _, t := range types {
		if string(t) == s {
			return t, nil
		}
	}
	return "", fmt.Errorf("memory: unknown entry type %q (allowed: %s, %s, %s, %s)",
		s, Conversation, ToolResult, Summary, Fact)
}

// TypeForRole returns the Type of a turn with the given role: ToolResult for
// "tool", Conversation for every other role. It never fails.
func TypeForRole(role string) Type {
	if role == "tool" {
		return ToolResult
	}
	return Conversation
}

// Entry is one unit of memory: a turn, a summary or a fact.
type Entry struct {
	ID        string    `json:"id"`
	Type      Type      `json:"type"`
	Content   string    `json:"content"`
	Timestamp time.Time `json:"timestamp"`
	Tokens    int       `json:"tokens"`
	// Role is the turn role (user, assistant, system or tool); it is empty for
	// facts and summaries.
	Role string `json:"role,omitempty"`
	// Seq is the stream sequence of the turn message, 0 if there is none.
	Seq uint64 `json:"seq,omitempty"`
	// Provenance lists the turn ids an entry was derived from.
	Provenance []string       `json:"provenance,omitempty"`
	Metadata   map[string]any `json:"metadata,omitempty"`
}
