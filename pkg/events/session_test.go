package events_test

import (
	"errors"
	"testing"

	"github.com/agentmem/agentmem/pkg/events"
)

func TestSessionSubjectAndRequest(t *testing.T) {
	subject, err := events.SessionSubject("acme")
	if err != nil || subject != "memory.session.acme" {
		t.Fatalf("SessionSubject(acme) = %q, %v", subject, err)
	}
	if _, err := events.SessionSubject("a.b"); err == nil {
		t.Error("SessionSubject accepted tenant a.b")
	}
	if tenant, err := events.ParseSessionSubject(subject); err != nil || tenant != "acme" {
		t.Errorf("ParseSessionSubject(%q) = %q, %v", subject, tenant, err)
	}
	for _, bad := range []string{"memory.session", "memory.session.a.b", "memory.retrieve.acme", "memory.session.*"} {
		if _, err := events.ParseSessionSubject(bad); !errors.Is(err, events.ErrInvalid) {
			t.Errorf("ParseSessionSubject(%q): %v, want ErrInvalid", bad, err)
		}
	}
	if r, err := events.ParseSessionRequest([]byte(`{"session":"s1"}`)); err != nil || r.Session != "s1" {
		t.Errorf("a good request: %+v, %v", r, err)
	}
	for _, c := range []struct{ body, field string }{
		{`{}`, "session"}, {`{"session":"a b"}`, "session"}, {`{"session_id":"s1"}`, "session_id"}, {`[1]`, "body"},
	} {
		_, err := events.ParseSessionRequest([]byte(c.body))
		var fe *events.FieldError
		if !errors.As(err, &fe) || fe.Field != c.field || !errors.Is(err, events.ErrInvalid) {
			t.Errorf("ParseSessionRequest(%s): %v, want a field error on %q", c.body, err, c.field)
		}
	}
}
