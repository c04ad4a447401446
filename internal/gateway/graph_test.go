package gateway_test

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/gateway"
)

// TestGraphOverHTTP: a user's entities and relations, at now and at a time before a move; the
// moved-from city's edge is in the history, ended. Checked against the OpenAPI document.
func TestGraphOverHTTP(t *testing.T) {
	e := start(t, gateway.Config{})
	say := func(id, session, text, at string) {
		req := binaryTurn(id, session, "alice", "user", text)
		req.header["ce-time"] = at
		if r := e.do(t, req); r.status != http.StatusAccepted {
			t.Fatalf("publish: %d %s", r.status, r.body)
		}
	}
	end := func(session string, turns int) {
		brokertest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
			r := e.send(t, request{method: "GET", path: "/v1/tenants/acme/sessions/" + session})
			var s gateway.Session
			if r.status == http.StatusOK {
				r.decode(t, &s)
			}
			if s.Turns != turns {
				return fmt.Errorf("session: %d %s", r.status, r.body)
			}
			return nil
		})
		if r := e.do(t, request{method: "POST", path: "/v1/tenants/acme/sessions/" + session + "/end"}); r.status != http.StatusAccepted {
			t.Fatalf("end: %d %s", r.status, r.body)
		}
	}
	say("t1", "s1", "My sister Anna lives in Rome. I live in Paris.", "2026-11-01T10:00:00Z")
	end("s1", 1)
	var before gateway.Graph
	brokertest.CheckFor(t, 20*time.Second, 50*time.Millisecond, func() error {
		r := e.do(t, request{method: "GET", path: "/v1/tenants/acme/users/alice/graph"})
		r.decode(t, &before)
		if len(before.Relations) < 2 {
			return fmt.Errorf("graph: %s", r.body)
		}
		return nil
	})
	say("t2", "s2", "I moved from Paris to Lisbon.", "2026-11-20T10:00:00Z")
	end("s2", 1)
	var now gateway.Graph
	brokertest.CheckFor(t, 20*time.Second, 50*time.Millisecond, func() error {
		r := e.do(t, request{method: "GET", path: "/v1/tenants/acme/users/alice/graph"})
		r.decode(t, &now)
		// The Lisbon edge is written, then the Paris edge it supersedes is ended.
		for _, h := range now.History {
			if h.ObjectName == "Paris" && h.ValidTo != nil && len(now.History) >= 3 {
				return nil
			}
		}
		return fmt.Errorf("graph: %s", r.body)
	})
	rels := func(g gateway.Graph) (out []string) {
		for _, r := range g.Relations {
			out = append(out, r.SubjectName+" "+r.Relation+" "+r.ObjectName)
		}
		slices.Sort(out)
		return out
	}
	if got, want := rels(now), []string{"user lives_in Lisbon", "user sister Anna"}; !slices.Equal(got, want) || now.User != "alice" {
		t.Errorf("now: %q, want %q", got, want)
	}
	for _, h := range now.History {
		if h.ObjectName == "Paris" && (h.ValidTo == nil || h.SupersededBy == "") {
			t.Errorf("the Paris edge has not ended: %+v", h)
		}
	}
	// Before the move, Paris held and Lisbon was not named yet.
	at := "2026-11-10T00:00:00Z"
	r := e.do(t, request{method: "GET", path: "/v1/tenants/acme/users/alice/graph?at=" + at})
	var then gateway.Graph
	r.decode(t, &then)
	if got, want := rels(then), []string{"user lives_in Paris", "user sister Anna"}; !slices.Equal(got, want) {
		t.Errorf("at %s: %q, want %q", at, got, want)
	}
	for _, n := range then.Entities {
		if n.Name == "Lisbon" {
			t.Errorf("at %s: Lisbon is shown, named later", at)
		}
	}
	// Bad input: a problem naming the field.
	if p := e.do(t, request{method: "GET", path: "/v1/tenants/acme/users/alice/graph?at=yesterday"}).problem(t); p.Status != 400 || p.Field != "at" {
		t.Errorf("bad at: %+v", p)
	}
	if p := e.do(t, request{method: "GET", path: "/v1/tenants/acme/users/a*b/graph"}).problem(t); p.Status != 400 {
		t.Errorf("bad user: %+v", p)
	}
	// Another tenant sees nothing of alice's graph.
	var other gateway.Graph
	e.do(t, request{method: "GET", path: "/v1/tenants/umbrella/users/alice/graph"}).decode(t, &other)
	if len(other.Entities)+len(other.History) != 0 {
		t.Errorf("umbrella sees %+v", other)
	}
}
