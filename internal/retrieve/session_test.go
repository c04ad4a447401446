package retrieve_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmem/agentmem/internal/view"
	"github.com/agentmem/agentmem/pkg/events"
)

// memory.session.<tenant> answers a session's short-term state as the HTTP API shows it, only
// the subject's tenant's, only at an inbox; a bad request is a 400 naming its field.
func TestSessionEndpoint(t *testing.T) {
	e := start(t)
	turns := conversation()
	e.seed(t, "s1", "alice", turns)

	ask := func(subject, body string) *nats.Msg {
		t.Helper()
		m, err := e.nc.Request(subject, []byte(body), 5*time.Second)
		if err != nil {
			t.Fatalf("%s %s: %v", subject, body, err)
		}
		return m
	}
	m := ask("memory.session.acme", `{"session":"s1"}`)
	var v view.Session
	if code := m.Header.Get("Nats-Service-Error-Code"); code != "" || json.Unmarshal(m.Data, &v) != nil {
		t.Fatalf("acme's s1: code %q, %s", code, m.Data)
	}
	if v.Tenant != "acme" || v.Session != "s1" || v.User != "alice" || v.Turns != len(turns) || len(v.Entries) != len(turns) || v.Entries[0].ID != turns[0].ID {
		t.Errorf("acme's s1: %+v", v)
	}

	for _, c := range []struct {
		name, subject, body string
		code, field         string
	}{
		{"unknown session", "memory.session.acme", `{"session":"nobody"}`, "404", "session"},
		{"another tenant's session", "memory.session.globex", `{"session":"s1"}`, "404", "session"},
		{"bad session token", "memory.session.acme", `{"session":"a.b"}`, "400", "session"},
		{"no session", "memory.session.acme", `{}`, "400", "session"},
		{"misnamed field", "memory.session.acme", `{"session_id":"s1"}`, "400", "session_id"},
		{"another tenant in the body", "memory.session.globex", `{"session":"s1","tenant":"acme"}`, "400", "tenant"},
		{"not JSON", "memory.session.acme", `s1`, "400", "body"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := ask(c.subject, c.body)
			var body events.ErrorBody
			if code := m.Header.Get("Nats-Service-Error-Code"); code != c.code || json.Unmarshal(m.Data, &body) != nil || body.Error.Field != c.field {
				t.Fatalf("code %q, body %s; want %s naming %q", code, m.Data, c.code, c.field)
			}
		})
	}

	// An answer goes only to an inbox: a request whose reply names a memory subject is not
	// answered (the refusal happens in the handler, before the next request is read).
	heard, err := e.nc.SubscribeSync("memory.facts.acme.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.nc.PublishRequest("memory.session.acme", "memory.facts.acme.alice", []byte(`{"session":"s1"}`)); err != nil {
		t.Fatal(err)
	}
	ask("memory.session.acme", `{"session":"s1"}`)
	if m, err := heard.NextMsg(50 * time.Millisecond); err == nil {
		t.Fatalf("the session endpoint answered on %s: %s", m.Subject, m.Data)
	}
}
