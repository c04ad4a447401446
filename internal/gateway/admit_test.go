package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/gateway"
	"github.com/agentmem/agentmem/internal/limits"
	"github.com/agentmem/agentmem/internal/view"
	"github.com/agentmem/agentmem/pkg/events"
)

// A turn ingest would dead-letter for its size gets 413 naming content, in ingest's words, and is
// not stored: the gateway's default is ingest's, MaxContentBytes sets another and a tenant's
// max_turn_bytes limit replaces it, as in ingest.
func TestContentLimit(t *testing.T) {
	lim := limits.New(limits.Config{Tenants: map[string]limits.Limit{"tiny": {MaxTurnBytes: 10}}})
	for _, c := range []struct {
		name   string
		cfg    gateway.Config
		tenant string
		size   int
		want   string // "" : accepted
	}{
		{"default limit", gateway.Config{}, "acme", 256<<10 + 1, "content is 262145 bytes; the limit is 262144"},
		{"at the default limit", gateway.Config{}, "acme", 256 << 10, ""},
		{"configured limit", gateway.Config{MaxContentBytes: 100}, "acme", 101, "content is 101 bytes; the limit is 100"},
		{"tenant limit", gateway.Config{MaxContentBytes: 100, Limits: lim}, "tiny", 11, "content is 11 bytes; the limit is 10"},
		{"other tenant", gateway.Config{MaxContentBytes: 100, Limits: lim}, "acme", 11, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := start(t, c.cfg)
			before := e.turnsStored(t)
			req := binaryTurn("big", "s1", "alice", "user", strings.Repeat("x", c.size))
			req.path = "/v1/tenants/" + c.tenant + "/events"
			r := e.do(t, req)
			if c.want == "" {
				if r.status != http.StatusAccepted {
					t.Fatalf("status %d: %s", r.status, r.body)
				}
				return
			}
			p := r.problem(t)
			if r.status != http.StatusRequestEntityTooLarge || p.Field != "content" || p.Detail != c.want {
				t.Fatalf("status %d, field %q, detail %q; want 413 content %q", r.status, p.Field, p.Detail, c.want)
			}
			if after := e.turnsStored(t); after != before {
				t.Fatalf("a turn over the limit was stored")
			}
		})
	}
	if _, err := gateway.New(gateway.Config{MaxContentBytes: -1}, nil, nil, events.DefaultTopology(), zerolog.Nop()); err == nil || !strings.Contains(err.Error(), "max content bytes") {
		t.Fatalf("a negative MaxContentBytes: %v", err)
	}
}

// The first turn of a session must name its user, and a turn may not name another user than the
// session's owner: the gateway says so with 400 naming user, in ingest's words, instead of
// storing a turn ingest dead-letters. A turn without user after a stored turn that named one is
// accepted, whether ingest has applied that turn yet or not.
func TestOwnerChecks(t *testing.T) {
	e := start(t, gateway.Config{})
	path := "/v1/tenants/acme/events"
	before := e.turnsStored(t)

	r := e.do(t, binaryTurn("f1", "fresh", "", "user", "hello"))
	if p := r.problem(t); r.status != http.StatusBadRequest || p.Field != "user" || p.Detail != `user is required on the first turn of session "fresh"` {
		t.Fatalf("first turn without user: status %d, %+v", r.status, p)
	}
	if after := e.turnsStored(t); after != before {
		t.Fatalf("a first turn without user was stored")
	}

	// Stored, and then at once a turn without user: not refused, whether applied or not.
	if r := e.do(t, binaryTurn("o1", "owned", "alice", "user", "I am alice")); r.status != http.StatusAccepted {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	if r := e.do(t, binaryTurn("o2", "owned", "", "user", "still alice")); r.status != http.StatusAccepted {
		t.Fatalf("a turn without user right after the owner's: status %d: %s", r.status, r.body)
	}
	waitTurns(t, e, "owned", 2)
	r = e.do(t, binaryTurn("o3", "owned", "bob", "user", "I am bob"))
	if p := r.problem(t); r.status != http.StatusBadRequest || p.Field != "user" || p.Detail != `session "owned" belongs to user "alice"; the event names user "bob"` {
		t.Fatalf("another user: status %d, %+v", r.status, p)
	}
	end := request{method: "POST", path: path, header: map[string]string{"content-type": events.ContentTypeStructured},
		body: jsonBody(t, structured("e1", "owned", events.TypeSessionEnded, events.SessionEnded{User: "bob"}))}
	if r := e.do(t, end); r.status != http.StatusBadRequest || r.problem(t).Field != "user" {
		t.Fatalf("a session end naming another user: status %d: %s", r.status, r.body)
	}
	if r := e.do(t, binaryTurn("o4", "owned", "", "assistant", "hi alice")); r.status != http.StatusAccepted {
		t.Fatalf("a later turn without user: status %d: %s", r.status, r.body)
	}

	// A session whose only turns were rejected has no owner yet.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	raw := binaryTurn("r1", "rejected", "", "user", "no user")
	msg, err := events.TurnSubject("acme", "rejected")
	if err != nil {
		t.Fatal(err)
	}
	ev, err := events.NewEvent("r1", events.TypeTurn, "test", time.Now(), events.Turn{Role: "user", Content: "no user"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := events.BinaryMsg(msg, ev)
	if err != nil {
		t.Fatal(err)
	}
	ack, err := e.js.PublishMsg(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	brokertest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if s := sessionView(t, e, "rejected"); s == nil || s.Rejected < 1 {
			return fmt.Errorf("turn %d not decided yet", ack.Sequence)
		}
		return nil
	})
	raw.header["ce-id"] = "r2"
	if r := e.do(t, raw); r.status != http.StatusBadRequest || r.problem(t).Field != "user" {
		t.Fatalf("a session whose turns were all rejected: status %d: %s", r.status, r.body)
	}
}

// In a batch, an earlier event that names the user of a new session counts: a later turn without
// user is its owner's, a later turn naming another user is refused with its index, and nothing of
// the batch is stored.
func TestBatchOwnerChecks(t *testing.T) {
	e := start(t, gateway.Config{})
	path := "/v1/tenants/acme/events"
	hdr := map[string]string{"content-type": gateway.ContentTypeBatch}
	turn := func(id, sess, user string) map[string]any {
		return structured(id, sess, events.TypeTurn, events.Turn{Role: "user", Content: "text of " + id, User: user})
	}
	before := e.turnsStored(t)
	r := e.do(t, request{method: "POST", path: path, header: hdr, body: jsonBody(t, []any{
		turn("a1", "b1", "alice"), turn("a2", "b1", ""), turn("a3", "b2", ""), turn("a4", "b1", "bob"),
		turn("a5", "b1", strings.Repeat("u", 65)),
	})})
	p := r.problem(t)
	if r.status != http.StatusBadRequest || p.Index == nil || *p.Index != 2 || p.Field != "user" {
		t.Fatalf("status %d, problem %+v", r.status, p)
	}
	if len(p.Errors) != 3 || p.Errors[0].Index != 2 || p.Errors[1].Index != 3 || p.Errors[2].Index != 4 ||
		!strings.Contains(p.Errors[0].Detail, `first turn of session "b2"`) || !strings.Contains(p.Errors[1].Detail, `belongs to user "alice"`) {
		t.Fatalf("errors %+v", p.Errors)
	}
	if after := e.turnsStored(t); after != before {
		t.Fatalf("a refused batch stored %d messages", after-before)
	}
	r = e.do(t, request{method: "POST", path: path, header: hdr, body: jsonBody(t, []any{turn("a1", "b1", "alice"), turn("a2", "b1", "")})})
	if r.status != http.StatusAccepted {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
}

// Bytes that are not UTF-8 are refused with 400 naming data and the offset of the first bad one,
// in every mode; nothing is stored with U+FFFD in their place.
func TestNotUTF8Refused(t *testing.T) {
	e := start(t, gateway.Config{})
	before := e.turnsStored(t)
	data := "{\"role\":\"user\",\"content\":\"caf\xe9\",\"user\":\"alice\"}"
	binary := binaryTurn("u1", "s1", "alice", "user", "x")
	binary.body = data
	envelope := `{"specversion":"1.0","id":"u2","source":"agent/test","type":"agentmem.turn.v1","subject":"s1","datacontenttype":"application/json","data":` + data + `}`
	for _, c := range []struct {
		name string
		req  request
	}{
		{"binary", binary},
		{"structured", request{method: "POST", path: "/v1/tenants/acme/events", header: map[string]string{"content-type": events.ContentTypeStructured}, body: envelope}},
		{"batch", request{method: "POST", path: "/v1/tenants/acme/events", header: map[string]string{"content-type": gateway.ContentTypeBatch}, body: "[" + envelope + "]"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := e.do(t, c.req)
			p := r.problem(t)
			if r.status != http.StatusBadRequest || p.Field != "data" || !strings.Contains(p.Detail, "not valid UTF-8 at byte 29") {
				t.Fatalf("status %d, field %q, detail %q", r.status, p.Field, p.Detail)
			}
		})
	}
	if after := e.turnsStored(t); after != before {
		t.Fatalf("a turn that is not UTF-8 was stored")
	}
}

// sessionView reads a session through the gateway; nil while it does not exist.
func sessionView(t *testing.T, e *env, sess string) *view.Session {
	t.Helper()
	r := e.do(t, request{method: "GET", path: "/v1/tenants/acme/sessions/" + sess})
	if r.status == http.StatusNotFound {
		return nil
	}
	if r.status != http.StatusOK {
		t.Fatalf("GET session %s: status %d: %s", sess, r.status, r.body)
	}
	var v view.Session
	r.decode(t, &v)
	return &v
}

// waitTurns waits until ingest applied n turns of the session.
func waitTurns(t *testing.T, e *env, sess string, n int) {
	t.Helper()
	brokertest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if v := sessionView(t, e, sess); v == nil || v.Turns < n {
			return fmt.Errorf("session %s: fewer than %d turns applied", sess, n)
		}
		return nil
	})
}
