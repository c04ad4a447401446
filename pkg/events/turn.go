package events

import (
	"strings"
)

// Roles a Turn can have.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleSystem    = "system"
	// RoleTool marks a tool result; it becomes a TOOL_RESULT entry, every
	// other role a CONVERSATION entry.
	RoleTool = "tool"
)

// Turn is the data of an agentmem.turn.v1 event: one message of a
// conversation, published by an agent on memory.turns.<tenant>.<session>.
type Turn struct {
	// Role is user, assistant, system or tool.
	Role string `json:"role"`
	// Content is the text of the turn; it must not be blank.
	Content string `json:"content"`
	// User owns the session; required on a session's first turn, and must
	// not change afterwards.
	User string `json:"user,omitempty"`
	// Tool names the tool of a tool turn (optional).
	Tool string `json:"tool,omitempty"`
	// Metadata is carried through to the memory entry.
	Metadata map[string]any `json:"metadata,omitempty"`
}

// Validate checks the role (user, assistant, system or tool), that the
// content is not blank, that the user, when set, is a valid token, and that
// the content, tool and metadata strings are valid UTF-8 (JSON would carry
// U+FFFD in place of bad bytes). It returns nil or a *FieldError naming
// "role", "content", "user", "tool" or "metadata.<key>".
func (t Turn) Validate() error {
	switch t.Role {
	case RoleUser, RoleAssistant, RoleSystem, RoleTool:
	default:
		return fieldErrorValue("role", t.Role, "must be one of user, assistant, system, tool")
	}
	if strings.TrimSpace(t.Content) == "" {
		return &FieldError{Field: "content", Message: "must not be empty"}
	}
	if at := invalidUTF8String(t.Content); at >= 0 {
		return notUTF8("content", at)
	}
	if t.User != "" {
		if err := ValidateToken("user", t.User); err != nil {
			return err
		}
	}
	if at := invalidUTF8String(t.Tool); at >= 0 {
		return notUTF8("tool", at)
	}
	if t.Metadata != nil {
		return checkValueUTF8("metadata", map[string]any(t.Metadata))
	}
	return nil
}

// SessionEnded is the data of an agentmem.session.ended.v1 event, published
// on the session's turns subject by the agent, or by ingest after an idle
// time.
type SessionEnded struct {
	// User owns the session.
	User string `json:"user"`
}

// EndApplied is the data of an agentmem.session.end_applied.v1 event: ingest applied the session
// end event End, stored at stream sequence Seq of the turns stream.
type EndApplied struct {
	Seq uint64 `json:"seq"`
	End string `json:"end"`
}

// Validate checks that the end is named: a sequence and an id.
func (a EndApplied) Validate() error {
	if a.Seq == 0 {
		return fieldErrorValue("seq", "0", "must be the stream sequence of the session end")
	}
	if a.End == "" {
		return fieldErrorValue("end", "", "must be the id of the session end")
	}
	return nil
}

// Validate checks that the user, when set, is a valid token. It returns nil
// or a *FieldError naming "user".
func (s SessionEnded) Validate() error {
	if s.User != "" {
		return ValidateToken("user", s.User)
	}
	return nil
}
