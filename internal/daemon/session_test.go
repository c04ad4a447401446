package daemon_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/view"
	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

// An agent reads its own sessions on memory.session.<tenant> (memctl session with an agent's
// credentials); it cannot ask another tenant's subject, and its own subject does not know
// another tenant's sessions of the same name.
func TestSessionsAreReadOnlyByTheirTenant(t *testing.T) {
	s := startSecured(t, nil)
	ctx := context.Background()
	ncA, _, vA := s.agent(t, "a")
	ncB, clB, _ := s.agent(t, "b")

	ack, err := clB.Publish(ctx, client.Turn{Session: "sb", User: "bob", Role: "user", Content: "my bank pin hint is Zorblax"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := clB.Retrieve(ctx, events.RetrieveRequest{Query: "pin", Session: "sb", After: ack.ID, WaitMS: 5000}); err != nil {
		t.Fatal(err)
	}
	// b reads its own session.
	m, err := ncB.Request("memory.session.b", []byte(`{"session":"sb"}`), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var v view.Session
	if err := json.Unmarshal(m.Data, &v); err != nil || v.Tenant != "b" || v.User != "bob" || len(v.Entries) != 1 || v.Entries[0].ID != ack.ID {
		t.Fatalf("b's own session: %v %s", err, m.Data)
	}
	// a cannot ask b's subject: the server refuses the publish.
	if _, err := ncA.Request("memory.session.b", []byte(`{"session":"sb"}`), time.Second); err == nil {
		t.Fatal("a read b's session")
	}
	vA.saw(t, "publish", "memory.session.b")
	// On its own subject, a has no session sb, whatever names it: the tenant is the subject's.
	for _, body := range []string{`{"session":"sb"}`, `{"session":"sb","tenant":"b"}`} {
		m, err := ncA.Request("memory.session.a", []byte(body), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if code := m.Header.Get("Nats-Service-Error-Code"); (code != "404" && code != "400") || strings.Contains(string(m.Data), "bob") {
			t.Errorf("a asking its own subject for %s: code %q, %s", body, code, m.Data)
		}
	}
}
