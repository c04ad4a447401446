package events

import (
	"fmt"
	"strconv"
	"strings"
)

// Subject roots of the v1 contract. Each is followed by the tokens documented
// on its builder.
const (
	subjRootTurns     = "memory.turns"
	subjRootPressure  = "memory.pressure"
	subjRootSummaries = "memory.summaries"
	subjRootFacts     = "memory.facts"
	subjRootRetrieve  = "memory.retrieve"
	subjRootForget    = "memory.forget"
	subjRootDLQ       = "memory.dlq"
	subjRootEnded     = "memory.ended"
)

// subjectWith joins root and tokens with dots after checking every token;
// fields names the tokens for the error.
func subjectWith(root string, fields []string, tokens ...string) (string, error) {
	for i, tok := range tokens {
		if err := ValidateToken(fields[i], tok); err != nil {
			return "", err
		}
	}
	return root + "." + strings.Join(tokens, "."), nil
}

// TurnSubject returns memory.turns.<tenant>.<session>, the subject agents
// publish turns and session ends to. It fails with a *FieldError when a token
// is not valid.
func TurnSubject(tenant, session string) (string, error) {
	return subjectWith(subjRootTurns, []string{"tenant", "session"}, tenant, session)
}

// PressureSubject returns memory.pressure.<tenant>.<session>, where ingest
// publishes pressure events. It fails with a *FieldError when a token is not
// valid.
func PressureSubject(tenant, session string) (string, error) {
	return subjectWith(subjRootPressure, []string{"tenant", "session"}, tenant, session)
}

// SummarySubject returns memory.summaries.<tenant>.<session>, where the
// compressor publishes summaries. It fails with a *FieldError when a token is
// not valid.
func SummarySubject(tenant, session string) (string, error) {
	return subjectWith(subjRootSummaries, []string{"tenant", "session"}, tenant, session)
}

// FactSubject returns memory.facts.<tenant>.<user>, where the extractor
// publishes fact changes. It fails with a *FieldError when a token is not
// valid.
func FactSubject(tenant, user string) (string, error) {
	return subjectWith(subjRootFacts, []string{"tenant", "user"}, tenant, user)
}

// EndedSubject returns memory.ended.<tenant>.<session>, where ingest announces a session end
// it applied (TypeEndApplied), in the turns stream. Not part of the v1 contract: agentmem's own
// workers publish and read it. It fails with a *FieldError when a token is not valid.
func EndedSubject(tenant, session string) (string, error) {
	return subjectWith(subjRootEnded, []string{"tenant", "session"}, tenant, session)
}

// EndedMsgID is the Nats-Msg-Id of the announcement of session end endID: "ended:" and the end's
// own MsgID. A tenant token has no colon, so it is never the id of a turn.
func EndedMsgID(tenant, session, endID string) string {
	return "ended:" + MsgID(tenant, session, endID)
}

// RetrieveSubject returns memory.retrieve.<tenant>, the request-reply subject
// of the retriever. It fails with a *FieldError when the tenant is not valid.
func RetrieveSubject(tenant string) (string, error) {
	return subjectWith(subjRootRetrieve, []string{"tenant"}, tenant)
}

// ForgetSubject returns memory.forget.<tenant>, the request-reply subject that
// forgets a user. It fails with a *FieldError when the tenant is not valid.
func ForgetSubject(tenant string) (string, error) {
	return subjectWith(subjRootForget, []string{"tenant"}, tenant)
}

// DeadLetterSubject returns memory.dlq.<tenant>.<session>, or memory.dlq._
// when either token is not valid (for example when the original subject could
// not be parsed). It never fails.
func DeadLetterSubject(tenant, session string) string {
	if !isToken(tenant) || !isToken(session) {
		return subjRootDLQ + "._"
	}
	return subjRootDLQ + "." + tenant + "." + session
}

// MsgID returns "<tenant>.<session>.<id>", the Nats-Msg-Id a publisher sets on
// a turn so that a retried publish is stored once. It does not validate.
func MsgID(tenant, session, id string) string {
	return tenant + "." + session + "." + id
}

// TurnAddress is what a stored turn subject says: the tenant, the session and
// the partition the turns stream put it in.
//
// The turns stream rewrites memory.turns.<t>.<s> to <p>.memory.turns.<t>.<s>
// with a subject transform, where <p> is the partition number in decimal.
type TurnAddress struct {
	Tenant  string
	Session string
	// Partition is the partition number, or -1 when the subject had no
	// partition token.
	Partition int
}

// ParseTurnSubject parses a turns subject in either form,
// memory.turns.<t>.<s> or <p>.memory.turns.<t>.<s>. Its error wraps
// ErrInvalid and says what is wrong: the prefix, the number of tokens, the
// partition, the tenant or the session.
func ParseTurnSubject(subject string) (TurnAddress, error) {
	tokens := strings.Split(subject, ".")
	addr := TurnAddress{Partition: -1}
	rest := tokens
	if len(tokens) > 0 && tokens[0] != "memory" && len(tokens) > 1 && tokens[1] == "memory" {
		p, ok := parsePartition(tokens[0])
		if !ok {
			return TurnAddress{}, fmt.Errorf("turn subject %s: %w", quoteValue(subject),
				fieldErrorValue("partition", tokens[0], "must be a decimal number"))
		}
		addr.Partition = p
		rest = tokens[1:]
	}
	if len(rest) < 2 || rest[0] != "memory" || rest[1] != "turns" {
		return TurnAddress{}, fmt.Errorf("turn subject %s: %w", quoteValue(subject),
			invalidError("want prefix memory.turns (or <partition>.memory.turns)"))
	}
	if len(rest) != 4 {
		return TurnAddress{}, fmt.Errorf("turn subject %s: %w", quoteValue(subject),
			invalidError(fmt.Sprintf("has %d tokens after the prefix, want 2 (<tenant>.<session>)", len(rest)-2)))
	}
	if err := ValidateToken("tenant", rest[2]); err != nil {
		return TurnAddress{}, fmt.Errorf("turn subject %s: %w", quoteValue(subject), err)
	}
	if err := ValidateToken("session", rest[3]); err != nil {
		return TurnAddress{}, fmt.Errorf("turn subject %s: %w", quoteValue(subject), err)
	}
	addr.Tenant, addr.Session = rest[2], rest[3]
	return addr, nil
}

// parsePartition parses a canonical non-negative decimal number ("0", "17",
// not "017", "+1" or "-1").
func parsePartition(s string) (int, bool) {
	if s == "" || len(s) > 9 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	p, err := strconv.Atoi(s)
	return p, err == nil
}

// Subject returns the original, unpartitioned subject memory.turns.<t>.<s>.
func (a TurnAddress) Subject() string {
	return subjRootTurns + "." + a.Tenant + "." + a.Session
}

// Subjects the request-reply endpoints listen on, one token per tenant.
const (
	// RetrieveSubjects is memory.retrieve.*, the retriever's endpoint.
	RetrieveSubjects = subjRootRetrieve + ".*"
	// ForgetSubjects is memory.forget.*, the forget endpoint.
	ForgetSubjects = subjRootForget + ".*"
)

// ParseRetrieveSubject returns the tenant of memory.retrieve.<tenant>. Its error wraps
// ErrInvalid and says whether the prefix, the number of tokens or the tenant is wrong.
func ParseRetrieveSubject(subject string) (string, error) {
	return ParseTenantSubject(subjRootRetrieve, subject)
}

// ParseForgetSubject returns the tenant of memory.forget.<tenant>. Its error wraps ErrInvalid
// and says whether the prefix, the number of tokens or the tenant is wrong.
func ParseForgetSubject(subject string) (string, error) {
	return ParseTenantSubject(subjRootForget, subject)
}

// ParseDeadLetterSubject returns the tenant and session of a dead-letter subject,
// memory.dlq.<tenant>.<session>, or two empty strings for memory.dlq._ (a dead letter whose
// original subject could not be parsed): the inverse of DeadLetterSubject. Its error wraps
// ErrInvalid and says what is wrong: the prefix, the number of tokens, the tenant or the
// session.
func ParseDeadLetterSubject(subject string) (tenant, session string, err error) {
	if subject == subjRootDLQ+"._" {
		return "", "", nil
	}
	if !strings.HasPrefix(subject, subjRootDLQ+".") {
		return "", "", fmt.Errorf("dead-letter subject %s: %w", quoteValue(subject), invalidError("want prefix "+subjRootDLQ))
	}
	a, err := ParseEventSubject(subject)
	if err != nil {
		return "", "", err
	}
	return a.Tenant, a.Key, nil
}

// ParseTenantSubject returns the tenant of a subject of the form
// <prefix>.<tenant>, e.g. ParseTenantSubject("memory.retrieve",
// "memory.retrieve.acme") returns "acme". Its error wraps ErrInvalid and says
// whether the prefix, the number of tokens or the tenant is wrong.
func ParseTenantSubject(prefix, subject string) (string, error) {
	rest, ok := strings.CutPrefix(subject, prefix+".")
	if prefix == "" || !ok {
		return "", fmt.Errorf("subject %s: %w", quoteValue(subject),
			invalidError(fmt.Sprintf("want prefix %s", prefix)))
	}
	if strings.Contains(rest, ".") {
		return "", fmt.Errorf("subject %s: %w", quoteValue(subject),
			invalidError(fmt.Sprintf("want exactly one token (<tenant>) after %s", prefix)))
	}
	if err := ValidateToken("tenant", rest); err != nil {
		return "", fmt.Errorf("subject %s: %w", quoteValue(subject), err)
	}
	return rest, nil
}
