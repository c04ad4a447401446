package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmem/agentmem/internal/gateway"
	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

func TestPublishRetrieveSessionRoundTrip(t *testing.T) {
	e := start(t, gateway.Config{})
	for _, req := range []request{
		binaryTurn("r1", "s1", "alice", "user", "I love writing Go, it is my favourite language"),
		binaryTurn("r2", "s1", "", "assistant", "Noted: Go it is."),
		binaryTurn("r3", "s1", "", "user", "我最喜欢的编程语言是 Go"),
	} {
		if r := e.do(t, req); r.status != http.StatusAccepted {
			t.Fatalf("publish: %d %s", r.status, r.body)
		}
	}
	at := "2026-11-30T12:00:00Z"
	body := `{"query":"what is my favourite programming language?","session":"s1","limit":50,"after":"r3","wait_ms":10000,"at":"` + at + `"}`
	r := e.do(t, request{method: "POST", path: "/v1/tenants/acme/retrieve", header: map[string]string{"content-type": "application/json"}, body: body})
	if r.status != http.StatusOK {
		t.Fatalf("retrieve: %d %s", r.status, r.body)
	}
	var got events.RetrieveReply
	r.decode(t, &got)
	var ids []string
	for _, en := range got.Entries {
		ids = append(ids, en.ID)
	}
	if !slices.Contains(ids, "r1") || got.Context == "" {
		t.Fatalf("retrieve found %v, context %q", ids, got.Context)
	}

	t.Run("same reply as through NATS", func(t *testing.T) {
		cl, err := client.New(e.nc, client.Options{Tenant: "acme"})
		if err != nil {
			t.Fatal(err)
		}
		var req events.RetrieveRequest
		if err := json.Unmarshal([]byte(body), &req); err != nil {
			t.Fatal(err)
		}
		want, err := cl.Retrieve(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("HTTP reply differs from the NATS reply:\nhttp %+v\nnats %+v", got, want)
		}
	})

	t.Run("session", func(t *testing.T) {
		r := e.do(t, request{method: "GET", path: "/v1/tenants/acme/sessions/s1"})
		if r.status != http.StatusOK {
			t.Fatalf("%d %s", r.status, r.body)
		}
		var s gateway.Session
		r.decode(t, &s)
		if s.Tenant != "acme" || s.Session != "s1" || s.User != "alice" || s.Turns != 3 || s.Kept != 3 || s.Tokens <= 0 || s.Budget <= 0 {
			t.Fatalf("session %+v", s)
		}
		if s.Ratio != float64(s.Tokens)/float64(s.Budget) {
			t.Fatalf("ratio %v for %d/%d", s.Ratio, s.Tokens, s.Budget)
		}
		var got []string
		for _, en := range s.Entries {
			if en.State != gateway.StateKept || en.Type != "CONVERSATION" || en.Tokens <= 0 || en.Timestamp.IsZero() {
				t.Fatalf("entry %+v", en)
			}
			got = append(got, en.ID+"/"+en.Role)
		}
		if strings.Join(got, " ") != "r1/user r2/assistant r3/user" {
			t.Fatalf("entries %v", got)
		}
	})

	for _, tc := range []struct {
		name, path string
		status     int
		field      string
	}{
		{"unknown session", "/v1/tenants/acme/sessions/nope", 404, "session"},
		{"session of another tenant", "/v1/tenants/globex/sessions/s1", 404, "session"},
		{"bad session", "/v1/tenants/acme/sessions/bad%20id", 400, "session"},
		{"bad tenant", "/v1/tenants/a.b/sessions/s1", 400, "tenant"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(t, request{method: "GET", path: tc.path})
			if p := r.problem(t); r.status != tc.status || p.Field != tc.field {
				t.Fatalf("status %d field %q (%s)", r.status, p.Field, p.Detail)
			}
		})
	}
}

func TestRetrieveErrors(t *testing.T) {
	e := start(t, gateway.Config{})
	for _, tc := range []struct {
		name, ct, body string
		status         int
		field          string
	}{
		{"no query", "application/json", `{"session":"s1"}`, 400, "query"},
		{"bad limit", "application/json", `{"query":"x","limit":-1}`, 400, "limit"},
		{"another tenant", "application/json", `{"query":"x","tenant":"globex"}`, 400, "tenant"},
		{"not JSON", "application/json", `{"query":`, 400, "body"},
		{"mem0's user_id", "application/json", `{"query":"x","user_id":"alice"}`, 400, "user_id"},
		{"top_k", "application/json", `{"query":"x","top_k":3}`, 400, "top_k"},
		{"short without session", "", `{"query":"x","sources":["short"]}`, 400, "sources"},
		{"not JSON content", "text/plain", `{"query":"x"}`, 415, "content-type"},
		{"after not applied in time", "application/json", `{"query":"x","session":"s1","after":"never","wait_ms":300}`, 503, "after"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(t, request{method: "POST", path: "/v1/tenants/acme/retrieve", header: map[string]string{"content-type": tc.ct}, body: tc.body})
			p := r.problem(t)
			if r.status != tc.status || p.Field != tc.field || p.Detail == "" {
				t.Fatalf("status %d field %q (%s), want %d %q", r.status, p.Field, p.Detail, tc.status, tc.field)
			}
			if strings.HasSuffix(tc.field, "_id") && !strings.Contains(p.Detail, `did you mean "user"?`) {
				t.Fatalf("detail %q does not say which field was meant", p.Detail)
			}
		})
	}
}

func TestFactsAndForget(t *testing.T) {
	e := start(t, gateway.Config{})
	facts := make(chan *nats.Msg, 64)
	sub, err := e.nc.ChanSubscribe("memory.facts.acme.alice", facts)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := e.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	end := structured("end1", "s1", events.TypeSessionEnded, events.SessionEnded{User: "alice"})
	for _, req := range []request{
		binaryTurn("f1", "s1", "alice", "user", "My favourite programming language is Go."),
		binaryTurn("f2", "s1", "alice", "user", "I live in Paris."),
		{method: "POST", path: "/v1/tenants/acme/events", header: map[string]string{"content-type": events.ContentTypeStructured}, body: jsonBody(t, end)},
	} {
		if r := e.do(t, req); r.status != http.StatusAccepted {
			t.Fatalf("publish: %d %s", r.status, r.body)
		}
	}
	// The extractor announces each fact it stores; wait for two.
	for range 2 {
		ev, err := events.Decode(next(t, facts))
		if err != nil {
			t.Fatal(err)
		}
		if fe, _ := events.DecodeData[events.FactEvent](ev); fe.Op != events.FactAdded {
			t.Fatalf("fact event %+v", fe)
		}
	}
	list := func(t *testing.T, query string) gateway.Facts {
		t.Helper()
		r := e.do(t, request{method: "GET", path: "/v1/tenants/acme/users/alice/facts" + query})
		if r.status != http.StatusOK {
			t.Fatalf("facts: %d %s", r.status, r.body)
		}
		var f gateway.Facts
		r.decode(t, &f)
		return f
	}
	live := list(t, "")
	if len(live.Facts) < 2 || live.User != "alice" || live.History {
		t.Fatalf("facts %+v", live)
	}
	for _, f := range live.Facts {
		if f.State != gateway.FactLive || f.ID == "" || f.Content == "" || len(f.Provenance) == 0 {
			t.Fatalf("fact %+v", f)
		}
	}

	// Delete one fact through the forget service: it leaves the live list and stays in the
	// history.
	gone := live.Facts[0]
	reqBody, _ := json.Marshal(events.ForgetRequest{User: "alice", FactID: gone.ID})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if m, err := e.nc.RequestWithContext(ctx, "memory.forget.acme", reqBody); err != nil || m.Header.Get("Nats-Service-Error-Code") != "" {
		t.Fatalf("deleting a fact: %v %v", err, m.Header)
	}
	if now := list(t, ""); len(now.Facts) != len(live.Facts)-1 || slices.ContainsFunc(now.Facts, func(f gateway.Fact) bool { return f.ID == gone.ID }) {
		t.Fatalf("after deleting %s: %+v", gone.ID, now.Facts)
	}
	hist := list(t, "?history=true")
	i := slices.IndexFunc(hist.Facts, func(f gateway.Fact) bool { return f.ID == gone.ID })
	if !hist.History || len(hist.Facts) != len(live.Facts) || i < 0 || hist.Facts[i].State != gateway.FactDeleted {
		t.Fatalf("history %+v", hist)
	}

	for _, tc := range []struct {
		name, method, path string
		field              string
	}{
		{"bad history", "GET", "/v1/tenants/acme/users/alice/facts?history=maybe", "history"},
		{"bad user", "GET", "/v1/tenants/acme/users/al.ice/facts", "user"},
		{"forget a bad user", "DELETE", "/v1/tenants/acme/users/al.ice", "user"},
		{"forget with a bad tenant", "DELETE", "/v1/tenants/ac%21me/users/alice", "tenant"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(t, request{method: tc.method, path: tc.path})
			if p := r.problem(t); r.status != 400 || p.Field != tc.field {
				t.Fatalf("status %d field %q (%s)", r.status, p.Field, p.Detail)
			}
		})
	}

	t.Run("forget", func(t *testing.T) {
		r := e.do(t, request{method: "DELETE", path: "/v1/tenants/acme/users/alice"})
		if r.status != http.StatusOK {
			t.Fatalf("forget: %d %s", r.status, r.body)
		}
		var fr events.ForgetReply
		r.decode(t, &fr)
		if fr.Forgotten["turns"] != 3 || fr.Forgotten["facts"] == 0 {
			t.Fatalf("forgot %v", fr.Forgotten)
		}
		if f := list(t, "?history=true"); len(f.Facts) != 0 {
			t.Fatalf("facts after forget: %+v", f.Facts)
		}
		if r := e.do(t, request{method: "GET", path: "/v1/tenants/acme/sessions/s1"}); r.status != 404 {
			t.Fatalf("session after forget: %d %s", r.status, r.body)
		}
		if f := list(t, ""); len(f.Facts) != 0 {
			t.Fatalf("unknown user: %+v", f)
		}
	})
}

// TestRetrieveCarriesTraceContext: the caller's W3C traceparent goes on with the NATS request,
// so the retriever's span joins the caller's trace.
func TestRetrieveCarriesTraceContext(t *testing.T) {
	e := start(t, gateway.Config{})
	seen := make(chan *nats.Msg, 1)
	sub, err := e.nc.ChanSubscribe("memory.retrieve.acme", seen) // next to the retriever's queue group
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := e.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	r := e.do(t, request{method: "POST", path: "/v1/tenants/acme/retrieve",
		header: map[string]string{"content-type": "application/json", "traceparent": tp}, body: `{"query":"anything"}`})
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	select {
	case m := <-seen:
		if got := m.Header.Get("traceparent"); got != tp {
			t.Fatalf("the NATS request carries traceparent %q, want %q", got, tp)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the request was not seen on memory.retrieve.acme")
	}
}
