package events

import (
	"encoding/json"
	"errors"
	"strings"
)

// subjRootSession is the root of memory.session.<tenant>.
const subjRootSession = "memory.session"

// SessionSubjects is memory.session.*, the retriever's session endpoint.
const SessionSubjects = subjRootSession + ".*"

// SessionSubject returns memory.session.<tenant>, the request-reply subject that answers a
// session's short-term state (an extension beyond DESIGN.md, so that an agent reads its sessions
// without JetStream or KV access). It fails with a *FieldError when the tenant is not valid.
func SessionSubject(tenant string) (string, error) {
	return subjectWith(subjRootSession, []string{"tenant"}, tenant)
}

// ParseSessionSubject returns the tenant of memory.session.<tenant>. Its error wraps ErrInvalid
// and says whether the prefix, the number of tokens or the tenant is wrong.
func ParseSessionSubject(subject string) (string, error) {
	return ParseTenantSubject(subjRootSession, subject)
}

// SessionRequest is the body of a request on memory.session.<tenant>: {"session":"s1"}. The
// reply is the session's short-term state, the body of the HTTP API's
// GET /v1/tenants/{tenant}/sessions/{session}; a session the tenant does not have is a 404.
type SessionRequest struct {
	Session string `json:"session"`
}

// sessionFieldHints maps the names other memory APIs use to the session request's own.
var sessionFieldHints = map[string]string{
	"session_id": "session", "sessionid": "session", "session-id": "session", "run_id": "session", "thread_id": "session", "id": "session",
}

// ParseSessionRequest decodes and validates a session request body; errors are *FieldErrors
// wrapping ErrInvalid. A member the request does not have is refused, naming it.
func ParseSessionRequest(body []byte) (SessionRequest, error) {
	var wire struct {
		SessionRequest
		Tenant json.RawMessage `json:"tenant,omitempty"`
	}
	if err := decodeStrict(body, &wire); err != nil {
		err = hinted(err, sessionFieldHints, "session")
		var fe *FieldError
		if errors.As(err, &fe) {
			fe.Field = strings.TrimPrefix(fe.Field, "SessionRequest.")
		}
		return SessionRequest{}, err
	}
	r := wire.SessionRequest
	if err := r.Validate(); err != nil {
		return SessionRequest{}, err
	}
	return r, nil
}

// Validate checks that the session is a valid token; it returns nil or a *FieldError naming
// "session".
func (r SessionRequest) Validate() error {
	return ValidateToken("session", r.Session)
}
