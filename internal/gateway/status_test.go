package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/deadletter"
	"github.com/agentmem/agentmem/internal/gateway"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/pkg/events"
)

// publishNATS publishes a turn of tenant acme straight to the turns stream, as a NATS agent
// does (binary mode, Nats-Msg-Id), and waits for JetStream to store it.
func (e *env) publishNATS(t *testing.T, tenant, id, session, user, content string) {
	t.Helper()
	subject, err := events.TurnSubject(tenant, session)
	if err != nil {
		t.Fatal(err)
	}
	msg := nats.NewMsg(subject)
	msg.Data, _ = json.Marshal(events.Turn{Role: "user", Content: content, User: user})
	for k, v := range map[string]string{
		"ce-specversion": "1.0", "ce-id": id, "ce-type": events.TypeTurn, "ce-source": "agent/test",
		"ce-time": "2026-11-30T10:00:00Z", "content-type": "application/json",
		events.HeaderMsgID: events.MsgID(tenant, session, id),
	} {
		msg.Header.Set(k, v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := e.js.PublishMsg(ctx, msg); err != nil {
		t.Fatalf("publishing %s: %v", id, err)
	}
}

// eventStatus asks for an event's status; ok is false on a 404.
func (e *env) eventStatus(t *testing.T, tenant, session, id string) (gateway.EventStatus, bool) {
	t.Helper()
	r := e.do(t, request{method: "GET", path: fmt.Sprintf("/v1/tenants/%s/sessions/%s/events/%s", tenant, session, id)})
	if r.status == http.StatusNotFound {
		if p := r.problem(t); p.Field != "id" {
			t.Fatalf("404 names field %q (%s), want id", p.Field, p.Detail)
		}
		return gateway.EventStatus{}, false
	}
	if r.status != http.StatusOK {
		t.Fatalf("event status: %d %s", r.status, r.body)
	}
	var s gateway.EventStatus
	r.decode(t, &s)
	if s.ID != id || s.Session != session {
		t.Fatalf("status of %s/%s names %s/%s", session, id, s.Session, s.ID)
	}
	return s, true
}

// waitStatus polls an event's status until it is want; every status seen before must be one of
// along.
func (e *env) waitStatus(t *testing.T, tenant, session, id, want string, along ...string) gateway.EventStatus {
	t.Helper()
	var got gateway.EventStatus
	brokertest.CheckFor(t, 20*time.Second, 20*time.Millisecond, func() error {
		s, ok := e.eventStatus(t, tenant, session, id)
		if ok && s.Status == want {
			got = s
			return nil
		}
		if ok && !strings.Contains(strings.Join(along, " "), s.Status) {
			t.Fatalf("event %s is %q (%s) while waiting for %q", id, s.Status, s.Reason, want)
		}
		return fmt.Errorf("event %s is not %q (found %v, %+v)", id, want, ok, s)
	})
	return got
}

// pauseIngest pauses every ingest consumer until the returned func resumes them.
func (e *env) pauseIngest(t *testing.T) (resume func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for p := range e.topo.Partitions {
		if _, err := e.js.PauseConsumer(ctx, e.topo.TurnsStream(), ingest.TurnsConsumerName(e.topo, p), time.Now().Add(time.Hour)); err != nil {
			t.Fatalf("pausing %s: %v", ingest.TurnsConsumerName(e.topo, p), err)
		}
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for p := range e.topo.Partitions {
			if _, err := e.js.ResumeConsumer(ctx, e.topo.TurnsStream(), ingest.TurnsConsumerName(e.topo, p)); err != nil {
				t.Fatalf("resuming %s: %v", ingest.TurnsConsumerName(e.topo, p), err)
			}
		}
	}
}

// TestEventStatus: a writer over HTTP learns what became of its event: pending while ingest has
// not decided it, applied, or rejected with the dead letter's reason; an id agentmem never saw
// is a 404, also for another tenant asking for this tenant's id.
func TestEventStatus(t *testing.T) {
	e := start(t, gateway.Config{})

	t.Run("pending then applied", func(t *testing.T) {
		resume := e.pauseIngest(t)
		if r := e.do(t, binaryTurn("a1", "s1", "alice", "user", "I write Go")); r.status != http.StatusAccepted {
			t.Fatalf("publish: %d %s", r.status, r.body)
		}
		s, ok := e.eventStatus(t, "acme", "s1", "a1")
		if !ok || s.Status != gateway.EventPending || s.DeadLetter != nil {
			t.Fatalf("status while ingest is paused: found %v, %+v", ok, s)
		}
		resume()
		s = e.waitStatus(t, "acme", "s1", "a1", gateway.EventApplied, gateway.EventPending)
		if s.Reason != "" || s.DeadLetter != nil {
			t.Fatalf("applied status %+v", s)
		}
	})

	// No user on a session's first turn: ingest dead-letters it.
	e.publishNATS(t, "acme", "bad1", "s2", "", "hello without a user")
	s := e.waitStatus(t, "acme", "s2", "bad1", gateway.EventRejected, gateway.EventPending)
	dl := s.DeadLetter
	if !strings.Contains(s.Reason, "user is required") || dl == nil || dl.Reason != s.Reason {
		t.Fatalf("rejected status %+v", s)
	}
	if dl.ID != "bad1" || dl.Session != "s2" || dl.Subject != "memory.turns.acme.s2" || dl.Class != deadletter.ClassOwner ||
		dl.Seq == 0 || dl.StreamSeq == 0 || dl.Time.IsZero() || !strings.Contains(dl.Body, "hello without a user") || dl.Truncated {
		t.Fatalf("dead letter %+v", dl)
	}

	t.Run("unknown id", func(t *testing.T) {
		if s, ok := e.eventStatus(t, "acme", "s2", "never"); ok {
			t.Fatalf("status of an unknown id: %+v", s)
		}
		if s, ok := e.eventStatus(t, "acme", "nosuchsession", "a1"); ok {
			t.Fatalf("status of an id of another session: %+v", s)
		}
	})

	t.Run("another tenant", func(t *testing.T) {
		for _, id := range []string{"a1", "bad1"} {
			for _, sess := range []string{"s1", "s2"} {
				if s, ok := e.eventStatus(t, "globex", sess, id); ok {
					t.Fatalf("globex sees acme's %s/%s: %+v", sess, id, s)
				}
			}
		}
	})

	t.Run("bad input", func(t *testing.T) {
		for _, tc := range []struct{ path, field string }{
			{"/v1/tenants/acme/sessions/bad.s/events/a1", "session"},
			{"/v1/tenants/a.b/sessions/s1/events/a1", "tenant"},
			{"/v1/tenants/acme/sessions/s1/events/" + strings.Repeat("x", gateway.MaxEventIDBytes+1), "id"},
		} {
			r := e.do(t, request{method: "GET", path: tc.path})
			if p := r.problem(t); r.status != 400 || p.Field != tc.field {
				t.Fatalf("%s: status %d field %q (%s)", tc.path[:40], r.status, p.Field, p.Detail)
			}
		}
	})
}

// TestDeadLetters: the tenant's dead letters, newest first, limited, by session; never another
// tenant's.
func TestDeadLetters(t *testing.T) {
	e := start(t, gateway.Config{})
	// One after the other: sessions are applied in parallel, so the order of their dead letters
	// is the order they were rejected in.
	for _, l := range []struct{ tenant, id, session string }{{"acme", "x1", "s1"}, {"acme", "x2", "s2"}, {"globex", "g1", "s1"}} {
		e.publishNATS(t, l.tenant, l.id, l.session, "", "a bad turn of "+l.tenant)
		e.waitStatus(t, l.tenant, l.session, l.id, gateway.EventRejected, gateway.EventPending)
	}
	list := func(t *testing.T, tenant, query string) []string {
		t.Helper()
		r := e.do(t, request{method: "GET", path: "/v1/tenants/" + tenant + "/dead-letters" + query})
		if r.status != http.StatusOK {
			t.Fatalf("dead letters: %d %s", r.status, r.body)
		}
		var got gateway.DeadLetters
		r.decode(t, &got)
		var ids []string
		for _, dl := range got.DeadLetters {
			if dl.Reason == "" || dl.Class == "" || dl.Time.IsZero() {
				t.Fatalf("dead letter %+v", dl)
			}
			ids = append(ids, dl.Session+"/"+dl.ID)
		}
		return ids
	}
	for _, tc := range []struct{ tenant, query, want string }{
		{"acme", "", "s2/x2 s1/x1"},
		{"acme", "?limit=1", "s2/x2"},
		{"acme", "?session=s1", "s1/x1"},
		{"acme", "?session=s3", ""},
		{"globex", "", "s1/g1"},
		{"initech", "", ""},
	} {
		if got := strings.Join(list(t, tc.tenant, tc.query), " "); got != tc.want {
			t.Errorf("%s %q: %q, want %q", tc.tenant, tc.query, got, tc.want)
		}
	}
	for _, tc := range []struct{ query, field string }{
		{"?limit=0", "limit"}, {"?limit=1001", "limit"}, {"?limit=x", "limit"}, {"?session=a.b", "session"},
	} {
		r := e.do(t, request{method: "GET", path: "/v1/tenants/acme/dead-letters" + tc.query})
		if p := r.problem(t); r.status != 400 || p.Field != tc.field {
			t.Fatalf("%s: status %d field %q (%s)", tc.query, r.status, p.Field, p.Detail)
		}
	}
}

// TestRetrieveAfterRejected: a read-your-writes retrieve whose turn ingest dead-lettered answers
// 400 on field after with the reason, at once, instead of waiting wait_ms and answering 503;
// whether the turn was rejected before the request or while it waits.
func TestRetrieveAfterRejected(t *testing.T) {
	e := start(t, gateway.Config{})
	retrieve := func(after string) reply {
		body := `{"query":"anything","session":"s9","after":"` + after + `","wait_ms":20000}`
		return e.do(t, request{method: "POST", path: "/v1/tenants/acme/retrieve", header: map[string]string{"content-type": "application/json"}, body: body})
	}
	check := func(t *testing.T, r reply, id string, took time.Duration) {
		t.Helper()
		p := r.problem(t)
		want := fmt.Sprintf("turn %q of session \"s9\" was rejected: ", id)
		if r.status != 400 || p.Field != "after" || !strings.Contains(p.Detail, want) || !strings.Contains(p.Detail, "user is required") {
			t.Fatalf("status %d field %q detail %q", r.status, p.Field, p.Detail)
		}
		if took >= 20*time.Second {
			t.Fatalf("answered after %s: it waited out wait_ms", took)
		}
	}
	// Rejected before the request.
	e.publishNATS(t, "acme", "r1", "s9", "", "no user")
	e.waitStatus(t, "acme", "s9", "r1", gateway.EventRejected, gateway.EventPending)
	start := time.Now()
	check(t, retrieve("r1"), "r1", time.Since(start))

	// Rejected while the request waits (or before it, if the request is slow to start: the
	// answer is the same).
	type result struct {
		r    reply
		took time.Duration
	}
	done := make(chan result, 1)
	errc := make(chan error, 1)
	go func() {
		start := time.Now()
		resp, err := e.srv.Client().Post(e.srv.URL+"/v1/tenants/acme/retrieve", "application/json",
			strings.NewReader(`{"query":"anything","session":"s9","after":"r2","wait_ms":20000}`))
		if err != nil {
			errc <- err
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			errc <- err
			return
		}
		done <- result{reply{status: resp.StatusCode, header: resp.Header, body: b}, time.Since(start)}
	}()
	e.publishNATS(t, "acme", "r2", "s9", "", "no user either")
	select {
	case res := <-done:
		check(t, res.r, "r2", res.took)
	case err := <-errc:
		t.Fatal(err)
	case <-time.After(30 * time.Second):
		t.Fatal("no answer")
	}
}
