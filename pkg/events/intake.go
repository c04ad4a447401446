package events

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/nats-io/nats.go"
)

// Admission (tenancy on).
//
// With authentication on, an agent's memory.turns.<tenant>.<session> is an import from its own
// account into the service account, where it arrives as memory.intake.<tenant>.<session>. No
// stream captures the intake: ingest admits each message (it derives the deduplication id from
// the subject and the event id, drops every Nats-* header the agent set and stores the turn on
// memory.turns.<tenant>.<session>, which only the service account can publish to), and answers
// the agent with the stream's acknowledgement.
const (
	// IntakeSubjects are the subjects where admission receives agents' turns.
	IntakeSubjects = "memory.intake.>"
	subjRootIntake = "memory.intake"
	// ReservedIDPrefix starts the ids of the events agentmem publishes into a session itself (an
	// idle session's end): an agent's event with such an id is refused, so that no agent can
	// take an id the service will derive.
	ReservedIDPrefix = "idle-end-"
	// headerNATSPrefix starts every header JetStream reads (Nats-Msg-Id, Nats-Expected-*,
	// Nats-Rollup, Nats-TTL, …): admission drops all of them.
	headerNATSPrefix = "nats-"
)

// IntakeSubject returns memory.intake.<tenant>.<session>, where admission receives a tenant's
// turns. It fails with a *FieldError when a token is not valid.
func IntakeSubject(tenant, session string) (string, error) {
	return subjectWith(subjRootIntake, []string{"tenant", "session"}, tenant, session)
}

// ParseIntakeSubject returns the tenant and session of memory.intake.<tenant>.<session>. Its
// error wraps ErrInvalid and says what is wrong.
func ParseIntakeSubject(subject string) (tenant, session string, err error) {
	tokens := strings.Split(subject, ".")
	if len(tokens) != 4 || tokens[0]+"."+tokens[1] != subjRootIntake {
		return "", "", fmt.Errorf("intake subject %s: %w", quoteValue(subject), invalidError("want memory.intake.<tenant>.<session>"))
	}
	if err := ValidateToken("tenant", tokens[2]); err != nil {
		return "", "", fmt.Errorf("intake subject %s: %w", quoteValue(subject), err)
	}
	if err := ValidateToken("session", tokens[3]); err != nil {
		return "", "", fmt.Errorf("intake subject %s: %w", quoteValue(subject), err)
	}
	return tokens[2], tokens[3], nil
}

// Partition returns the partition of the turns stream that holds a session's turns: the same
// number the stream's subject transform {{partition(n,1,2)}} computes (FNV-1a of tenant and
// session, modulo n).
func Partition(tenant, session string, n int) int {
	if n <= 0 {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(tenant))
	h.Write([]byte(session))
	return int(h.Sum32() % uint32(n))
}

// IsReserved reports whether an agent's event id is one agentmem keeps for its own events.
func IsReserved(id string) bool { return strings.HasPrefix(id, ReservedIDPrefix) }

// EventID returns the CloudEvent id of a message without decoding the rest: the ce-id header in
// binary mode, the id member in structured mode. ok is false when there is none (or it is not
// usable); the message may still be invalid in other ways.
func EventID(msg *nats.Msg) (id string, ok bool) {
	ct, _, err := headerValue(msg.Header, ceContentTypeKey)
	if err != nil {
		return "", false
	}
	if mt, err := mediaTypeOf(ct); err == nil && mt == ContentTypeStructured {
		var env struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(msg.Data, &env) != nil || env.ID == "" {
			return "", false
		}
		return env.ID, true
	}
	v, found, err := headerValue(msg.Header, ceHeaderPrefix+"id")
	if err != nil || !found || v == "" {
		return "", false
	}
	if v, err = percentDecode(v); err != nil || v == "" {
		return "", false
	}
	return v, true
}

// StripNATSHeaders removes every header whose name starts with "Nats-" (in any case): the
// headers JetStream acts on when it stores a message.
func StripNATSHeaders(h nats.Header) {
	for k := range h {
		if len(k) >= len(headerNATSPrefix) && strings.EqualFold(k[:len(headerNATSPrefix)], headerNATSPrefix) {
			delete(h, k)
		}
	}
}
