package gateway_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/gateway"
	"github.com/agentmem/agentmem/pkg/events"
)

// authed returns req with the bearer token tok (and more headers).
func authed(req request, tok string) request {
	h := map[string]string{"Authorization": "Bearer " + tok}
	for k, v := range req.header {
		h[k] = v
	}
	req.header = h
	return req
}

// TestEndSessionOverHTTP: POST .../sessions/{session}/end publishes the session end into the turns
// stream as an agent would (fresh id, Nats-Msg-Id, the owner's user), and the extractor stores the
// session's facts at once (the harness has no idle end).
func TestEndSessionOverHTTP(t *testing.T) {
	e := start(t, gateway.Config{})
	turns := make(chan *nats.Msg, 16)
	sub, err := e.nc.ChanSubscribe("memory.turns.acme.s1", turns)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := e.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, req := range []request{
		binaryTurn("t1", "s1", "alice", "user", "My favourite programming language is Go."),
		binaryTurn("t2", "s1", "", "user", "I live in Paris."),
	} {
		if r := e.do(t, req); r.status != http.StatusAccepted {
			t.Fatalf("publish: %d %s", r.status, r.body)
		}
		next(t, turns)
	}
	// The end takes the session's owner from its state: wait until ingest applied both turns.
	brokertest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		r := e.send(t, request{method: "GET", path: "/v1/tenants/acme/sessions/s1"})
		var s gateway.Session
		if r.status == http.StatusOK {
			r.decode(t, &s)
		}
		if s.Turns != 2 {
			return fmt.Errorf("session: %d %s", r.status, r.body)
		}
		return nil
	})

	r := e.do(t, request{method: "POST", path: "/v1/tenants/acme/sessions/s1/end"})
	if r.status != http.StatusAccepted {
		t.Fatalf("end: %d %s", r.status, r.body)
	}
	var res gateway.PublishResult
	r.decode(t, &res)
	if _, err := uuid.Parse(res.ID); err != nil || res.Session != "s1" || res.Seq == 0 || res.Duplicate {
		t.Fatalf("end result %+v", res)
	}
	m := next(t, turns)
	ev, err := events.Decode(m)
	if err != nil {
		t.Fatal(err)
	}
	end, err := events.DecodeData[events.SessionEnded](ev)
	if err != nil || ev.Type() != events.TypeSessionEnded || ev.ID() != res.ID || ev.Subject() != "s1" || end.User != "alice" ||
		m.Header.Get("Nats-Msg-Id") != "acme.s1."+res.ID {
		t.Fatalf("stored end: type %s id %s subject %s data %s msg-id %s (%v)", ev.Type(), ev.ID(), ev.Subject(), ev.Data(), m.Header.Get("Nats-Msg-Id"), err)
	}
	if again := e.do(t, request{method: "POST", path: "/v1/tenants/acme/sessions/s1/end", body: `{"user":"alice"}`}); again.status != http.StatusAccepted {
		t.Fatalf("end again: %d %s", again.status, again.body)
	} else {
		var res2 gateway.PublishResult
		again.decode(t, &res2)
		if res2.ID == res.ID || res2.Duplicate {
			t.Fatalf("a second end reused id %s: %+v", res.ID, res2)
		}
	}

	// The facts of the session are there now.
	brokertest.CheckFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		var f gateway.Facts
		r := e.do(t, request{method: "GET", path: "/v1/tenants/acme/users/alice/facts"})
		r.decode(t, &f)
		if len(f.Facts) < 2 {
			return fmt.Errorf("facts after the end: %s", r.body)
		}
		return nil
	})

	// A session ingest does not know ends when its user is named.
	if r := e.do(t, request{method: "POST", path: "/v1/tenants/acme/sessions/fresh/end", header: map[string]string{"content-type": "application/json"},
		body: `{"user":"bob"}`}); r.status != http.StatusAccepted {
		t.Fatalf("end of a session not applied yet, with its user: %d %s", r.status, r.body)
	}

	for _, tc := range []struct {
		name, path, ct, body string
		status               int
		field                string
	}{
		{"unknown session without a user", "/v1/tenants/acme/sessions/nope/end", "", "", 404, "session"},
		{"session of another tenant", "/v1/tenants/globex/sessions/s1/end", "", "", 404, "session"},
		{"another user than the owner", "/v1/tenants/acme/sessions/s1/end", "application/json", `{"user":"mallory"}`, 400, "user"},
		{"bad user", "/v1/tenants/acme/sessions/s1/end", "", `{"user":"a.b"}`, 400, "user"},
		{"unknown field", "/v1/tenants/acme/sessions/s1/end", "", `{"usr":"alice"}`, 400, "usr"},
		{"user not a string", "/v1/tenants/acme/sessions/s1/end", "", `{"user":5}`, 400, "user"},
		{"not JSON", "/v1/tenants/acme/sessions/s1/end", "", `{"user":`, 400, "body"},
		{"not JSON content", "/v1/tenants/acme/sessions/s1/end", "text/plain", `{}`, 415, "content-type"},
		{"bad session", "/v1/tenants/acme/sessions/s%201/end", "", "", 400, "session"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(t, request{method: "POST", path: tc.path, header: map[string]string{"content-type": tc.ct}, body: tc.body})
			if p := r.problem(t); r.status != tc.status || p.Field != tc.field || p.Detail == "" {
				t.Fatalf("status %d field %q (%s), want %d %q", r.status, p.Field, p.Detail, tc.status, tc.field)
			}
		})
	}
}

// TestOneFact: get, correct (PUT and PATCH) and delete one fact over HTTP, through the same
// forget service memctl and pkg/client use; unknown ids are 404s; another tenant's token touches
// nothing.
func TestOneFact(t *testing.T) {
	const acme, globex = "tok-acme", "tok-globex"
	e := start(t, gateway.Config{Tokens: map[string]string{acme: "acme", globex: "globex"}})
	do := func(t *testing.T, method, path, body string) reply {
		t.Helper()
		req := request{method: method, path: path, body: body}
		if body != "" {
			req.header = map[string]string{"content-type": "application/json"}
		}
		return e.do(t, authed(req, acme))
	}
	for _, req := range []request{
		binaryTurn("f1", "s1", "alice", "user", "My favourite programming language is Go."),
		binaryTurn("f2", "s1", "alice", "user", "I live in Paris."),
	} {
		if r := e.do(t, authed(req, acme)); r.status != http.StatusAccepted {
			t.Fatalf("publish: %d %s", r.status, r.body)
		}
	}
	if r := do(t, "POST", "/v1/tenants/acme/sessions/s1/end", `{"user":"alice"}`); r.status != http.StatusAccepted {
		t.Fatalf("end: %d %s", r.status, r.body)
	}
	var live gateway.Facts
	brokertest.CheckFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		r := do(t, "GET", "/v1/tenants/acme/users/alice/facts", "")
		r.decode(t, &live)
		if len(live.Facts) < 2 {
			return fmt.Errorf("facts: %s", r.body)
		}
		return nil
	})
	i := slices.IndexFunc(live.Facts, func(f gateway.Fact) bool { return strings.Contains(f.Content, "Paris") })
	if i < 0 {
		t.Fatalf("no Paris fact in %+v", live.Facts)
	}
	paris := live.Facts[i]
	path := "/v1/tenants/acme/users/alice/facts/" + paris.ID
	fact := func(t *testing.T, path string) gateway.Fact {
		t.Helper()
		r := do(t, "GET", path, "")
		if r.status != http.StatusOK {
			t.Fatalf("get %s: %d %s", path, r.status, r.body)
		}
		var f gateway.Fact
		r.decode(t, &f)
		return f
	}
	if got := fact(t, path); got.ID != paris.ID || got.Content != paris.Content || got.State != gateway.FactLive || len(got.Provenance) == 0 {
		t.Fatalf("get %+v, listed %+v", got, paris)
	}

	// Another tenant's token touches nothing: 403 on acme's URLs, 404 on its own.
	for _, method := range []string{"GET", "PUT", "PATCH", "DELETE"} {
		body := ""
		if method == "PUT" || method == "PATCH" {
			body = `{"content":"The user lives in Berlin"}`
		}
		r := e.do(t, authed(request{method: method, path: path, body: body}, globex))
		if p := r.problem(t); r.status != http.StatusForbidden || p.Field != "tenant" {
			t.Fatalf("%s with globex's token: %d %+v", method, r.status, p)
		}
		r = e.do(t, authed(request{method: method, path: strings.Replace(path, "/acme/", "/globex/", 1), body: body}, globex))
		if p := r.problem(t); r.status != http.StatusNotFound || p.Field != "id" {
			t.Fatalf("%s of acme's fact id on globex: %d %+v", method, r.status, p)
		}
	}
	if r := e.do(t, authed(request{method: "POST", path: "/v1/tenants/acme/sessions/s1/end"}, globex)); r.status != http.StatusForbidden {
		t.Fatalf("end with globex's token: %d %s", r.status, r.body)
	}
	if got := fact(t, path); got.State != gateway.FactLive || got.Content != paris.Content {
		t.Fatalf("after globex's attempts: %+v", got)
	}

	// Correct: a new fact supersedes the old one, which stays in the history.
	r := do(t, "PUT", path, `{"content":"The user lives in Lyon"}`)
	if r.status != http.StatusOK {
		t.Fatalf("correct: %d %s", r.status, r.body)
	}
	var lyon gateway.Fact
	r.decode(t, &lyon)
	if lyon.ID == paris.ID || lyon.Content != "The user lives in Lyon" || lyon.State != gateway.FactLive || lyon.Category != paris.Category ||
		r.header.Get("Location") != "/v1/tenants/acme/users/alice/facts/"+lyon.ID {
		t.Fatalf("correcting fact %+v (Location %q)", lyon, r.header.Get("Location"))
	}
	if old := fact(t, path); old.State != gateway.FactSuperseded || old.SupersededBy != lyon.ID || old.ValidTo == nil {
		t.Fatalf("corrected fact %+v", old)
	}
	lyonPath := "/v1/tenants/acme/users/alice/facts/" + lyon.ID
	r = do(t, "PATCH", lyonPath, `{"content":"The user lives in Nantes"}`)
	var nantes gateway.Fact
	r.decode(t, &nantes)
	if r.status != http.StatusOK || nantes.Content != "The user lives in Nantes" || fact(t, lyonPath).SupersededBy != nantes.ID {
		t.Fatalf("patch: %d %s", r.status, r.body)
	}

	// Delete: it leaves the live facts and stays in the history; again changes nothing.
	nantesPath := "/v1/tenants/acme/users/alice/facts/" + nantes.ID
	for range 2 {
		r := do(t, "DELETE", nantesPath, "")
		var f gateway.Fact
		r.decode(t, &f)
		if r.status != http.StatusOK || f.ID != nantes.ID || f.State != gateway.FactDeleted {
			t.Fatalf("delete: %d %s", r.status, r.body)
		}
	}
	var now gateway.Facts
	do(t, "GET", "/v1/tenants/acme/users/alice/facts", "").decode(t, &now)
	for _, f := range now.Facts {
		if f.ID == paris.ID || f.ID == lyon.ID || f.ID == nantes.ID {
			t.Fatalf("live facts %+v hold a corrected or deleted fact", now.Facts)
		}
	}
	if got := fact(t, nantesPath); got.State != gateway.FactDeleted {
		t.Fatalf("deleted fact %+v", got)
	}

	for _, tc := range []struct {
		name, method, path, ct, body string
		status                       int
		field                        string
	}{
		{"get unknown id", "GET", "/v1/tenants/acme/users/alice/facts/nope", "", "", 404, "id"},
		{"correct unknown id", "PUT", "/v1/tenants/acme/users/alice/facts/nope", "", `{"content":"x"}`, 404, "id"},
		{"delete unknown id", "DELETE", "/v1/tenants/acme/users/alice/facts/nope", "", "", 404, "id"},
		{"fact of another user", "GET", "/v1/tenants/acme/users/bob/facts/" + paris.ID, "", "", 404, "id"},
		{"bad id", "GET", "/v1/tenants/acme/users/alice/facts/a.b", "", "", 400, "id"},
		{"bad user", "DELETE", "/v1/tenants/acme/users/al.ice/facts/" + paris.ID, "", "", 400, "user"},
		{"no content", "PUT", path, "application/json", `{}`, 400, "content"},
		{"blank content", "PATCH", path, "", `{"content":"  "}`, 400, "content"},
		{"another field", "PATCH", path, "", `{"content":"x","category":"identity"}`, 400, "category"},
		{"the same content", "PUT", nantesPath, "", `{"content":"the user lives in  Nantes."}`, 400, "content"},
		{"no body", "PUT", path, "", "", 400, "body"},
		{"not JSON content", "PUT", path, "text/plain", `{"content":"x"}`, 415, "content-type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(t, authed(request{method: tc.method, path: tc.path, header: map[string]string{"content-type": tc.ct}, body: tc.body}, acme))
			if p := r.problem(t); r.status != tc.status || p.Field != tc.field || p.Detail == "" {
				t.Fatalf("status %d field %q (%s), want %d %q", r.status, p.Field, p.Detail, tc.status, tc.field)
			}
		})
	}
}
