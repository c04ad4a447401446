package events

import (
	"fmt"
	"strings"
)

// Kinds of event subject, the token after "memory." (see EventAddress).
const (
	KindTurns     = "turns"
	KindPressure  = "pressure"
	KindSummaries = "summaries"
	KindFacts     = "facts"
	KindDLQ       = "dlq"
	// KindEnded is agentmem's own announcement of an applied session end (EndedSubject).
	KindEnded = "ended"
)

// EventAddress is what an event subject names: [<partition>.]memory.<kind>.<tenant>.<key>, where
// the key is the session, or the user for facts.
type EventAddress struct {
	Kind   string
	Tenant string
	// Key is the session (turns, pressure, summaries, dlq, ended) or the user (facts, edits).
	Key string
	// Partition is the partition token of a stored subject, -1 when there is none.
	Partition int
}

// ParseEventSubject parses an event subject, partitioned (as stored) or not. Its error wraps
// ErrInvalid and says what is wrong: the prefix, the kind, the number of tokens, the partition,
// the tenant or the key.
func ParseEventSubject(subject string) (EventAddress, error) {
	tokens := strings.Split(subject, ".")
	addr := EventAddress{Partition: -1}
	if len(tokens) > 1 && tokens[0] != "memory" && tokens[1] == "memory" {
		p, ok := parsePartition(tokens[0])
		if !ok {
			return EventAddress{}, fmt.Errorf("subject %s: %w", quoteValue(subject),
				fieldErrorValue("partition", tokens[0], "must be a decimal number"))
		}
		addr.Partition, tokens = p, tokens[1:]
	}
	if len(tokens) < 2 || tokens[0] != "memory" {
		return EventAddress{}, fmt.Errorf("subject %s: %w", quoteValue(subject), invalidError("want prefix memory. (or <partition>.memory.)"))
	}
	keyField := "session"
	switch tokens[1] {
	case KindTurns, KindPressure, KindSummaries, KindDLQ, KindEnded:
	case KindFacts, KindEdits:
		keyField = "user"
	default:
		return EventAddress{}, fmt.Errorf("subject %s: %w", quoteValue(subject),
			invalidError(fmt.Sprintf("unknown kind %q: want turns, pressure, summaries, facts, dlq, ended or edits", tokens[1])))
	}
	if len(tokens) != 4 {
		return EventAddress{}, fmt.Errorf("subject %s: %w", quoteValue(subject),
			invalidError(fmt.Sprintf("has %d tokens after memory.%s, want 2 (<tenant>.<%s>)", len(tokens)-2, tokens[1], keyField)))
	}
	if err := ValidateToken("tenant", tokens[2]); err != nil {
		return EventAddress{}, fmt.Errorf("subject %s: %w", quoteValue(subject), err)
	}
	if err := ValidateToken(keyField, tokens[3]); err != nil {
		return EventAddress{}, fmt.Errorf("subject %s: %w", quoteValue(subject), err)
	}
	addr.Kind, addr.Tenant, addr.Key = tokens[1], tokens[2], tokens[3]
	return addr, nil
}

// Subject returns the unpartitioned subject memory.<kind>.<tenant>.<key> the address names. It
// does not validate: an address from ParseEventSubject is valid.
func (a EventAddress) Subject() string {
	return "memory." + a.Kind + "." + a.Tenant + "." + a.Key
}

// ParseKindSubject parses an event subject of one kind and returns its tenant and key.
func ParseKindSubject(kind, subject string) (tenant, key string, err error) {
	a, err := ParseEventSubject(subject)
	if err != nil {
		return "", "", err
	}
	if a.Kind != kind {
		return "", "", fmt.Errorf("subject %s: %w", quoteValue(subject), invalidError(fmt.Sprintf("want a memory.%s subject", kind)))
	}
	return a.Tenant, a.Key, nil
}
