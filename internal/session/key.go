package session

import (
	"fmt"
	"strings"

	"github.com/agentmem/agentmem/pkg/events"
)

// ParseKey parses the KV key of a session's header, "<tenant>.<session>" (Key.String), as the
// session bucket's watchers and listings see it. Its error wraps events.ErrInvalid and says what
// is wrong: the number of tokens, the tenant or the session.
func ParseKey(key string) (Key, error) {
	tenant, sess, ok := strings.Cut(key, ".")
	if !ok || strings.Contains(sess, ".") {
		return Key{}, fmt.Errorf("session key %q: %w", key,
			&events.FieldError{Message: "want two tokens, <tenant>.<session>"})
	}
	if err := events.ValidateToken("tenant", tenant); err != nil {
		return Key{}, fmt.Errorf("session key %q: %w", key, err)
	}
	if err := events.ValidateToken("session", sess); err != nil {
		return Key{}, fmt.Errorf("session key %q: %w", key, err)
	}
	return Key{Tenant: tenant, Session: sess}, nil
}
