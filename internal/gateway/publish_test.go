package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmem/agentmem/internal/gateway"
	"github.com/agentmem/agentmem/pkg/events"
)

// next waits for a message on ch.
func next(t testing.TB, ch <-chan *nats.Msg) *nats.Msg {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no message within 10s")
		return nil
	}
}

func TestPublishBinaryStructuredAndDuplicate(t *testing.T) {
	e := start(t, gateway.Config{})
	ch := make(chan *nats.Msg, 16)
	sub, err := e.nc.ChanSubscribe("memory.turns.acme.>", ch)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := e.nc.Flush(); err != nil {
		t.Fatal(err)
	}

	t.Run("binary", func(t *testing.T) {
		req := binaryTurn("t1", "s1", "alice", "user", "I love writing Go")
		req.header["ce-source"] = "agent/%E6%B5%8B%E8%AF%95" // percent-encoded UTF-8: agent/测试
		req.header["ce-traceid"] = "abc%20def"
		r := e.do(t, req)
		if r.status != http.StatusAccepted {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		var res gateway.PublishResult
		r.decode(t, &res)
		if res.ID != "t1" || res.Session != "s1" || res.Stream != e.topo.TurnsStream() || res.Seq == 0 || res.Duplicate {
			t.Fatalf("result %+v", res)
		}
		m := next(t, ch)
		if m.Subject != "memory.turns.acme.s1" {
			t.Fatalf("published on %s", m.Subject)
		}
		if got := m.Header.Get(events.HeaderMsgID); got != events.MsgID("acme", "s1", "t1") {
			t.Fatalf("Nats-Msg-Id %q", got)
		}
		if m.Header.Get("ce-id") != "t1" || m.Header.Get("content-type") != "application/json" {
			t.Fatalf("not binary mode: %v", m.Header)
		}
		ev, err := events.Decode(m)
		if err != nil {
			t.Fatal(err)
		}
		if src, _ := url.PathUnescape(ev.Source()); src != "agent/测试" || ev.Subject() != "s1" || ev.Extensions()["traceid"] != "abc def" {
			t.Fatalf("attributes not carried through: source %q subject %q extensions %v", ev.Source(), ev.Subject(), ev.Extensions())
		}
		turn, err := events.DecodeData[events.Turn](ev)
		if err != nil || turn.Content != "I love writing Go" || turn.User != "alice" {
			t.Fatalf("data %+v, %v", turn, err)
		}

		r = e.do(t, req)
		var dup gateway.PublishResult
		r.decode(t, &dup)
		if r.status != http.StatusAccepted || !dup.Duplicate || dup.Seq != res.Seq {
			t.Fatalf("republished: status %d, %+v (first %+v)", r.status, dup, res)
		}
		// JetStream stored it once; plain subscribers see the second publish too.
		if m := next(t, ch); m.Header.Get("ce-id") != "t1" {
			t.Fatalf("second copy %v", m.Header)
		}
	})

	t.Run("structured", func(t *testing.T) {
		body := jsonBody(t, structured("t2", "s1", events.TypeTurn, events.Turn{Role: "assistant", Content: "Noted: Go it is."}))
		r := e.do(t, request{method: "POST", path: "/v1/tenants/acme/events",
			header: map[string]string{"content-type": "application/cloudevents+json; charset=utf-8"}, body: body})
		if r.status != http.StatusAccepted {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		m := next(t, ch)
		if m.Header.Get("ce-id") != "t2" || m.Header.Get("ce-subject") != "s1" || m.Header.Get(events.HeaderMsgID) != "acme.s1.t2" {
			t.Fatalf("structured event not published in binary mode: %v", m.Header)
		}
		if !json.Valid(m.Data) || strings.Contains(string(m.Data), "specversion") {
			t.Fatalf("body is not the data: %s", m.Data)
		}
	})
}

func TestPublishRejectsInvalidEvents(t *testing.T) {
	e := start(t, gateway.Config{})
	before := e.turnsStored(t)
	turn := func(mut func(h map[string]string)) request {
		r := binaryTurn("x1", "s1", "alice", "user", "hello")
		mut(r.header)
		return r
	}
	structuredReq := func(ev map[string]any) request {
		return request{method: "POST", path: "/v1/tenants/acme/events",
			header: map[string]string{"content-type": events.ContentTypeStructured}, body: jsonBody(t, ev)}
	}
	for _, tc := range []struct {
		name   string
		req    request
		status int
		field  string
	}{
		{"no subject", turn(func(h map[string]string) { delete(h, "ce-subject") }), 400, "subject"},
		{"bad subject", turn(func(h map[string]string) { h["ce-subject"] = "a.b" }), 400, "subject"},
		{"no id", turn(func(h map[string]string) { delete(h, "ce-id") }), 400, "ce-id"},
		{"reserved id", turn(func(h map[string]string) { h["ce-id"] = events.ReservedIDPrefix + "7" }), 400, "id"},
		{"no specversion", turn(func(h map[string]string) { delete(h, "ce-specversion") }), 400, "ce-specversion"},
		{"bad time", turn(func(h map[string]string) { h["ce-time"] = "yesterday" }), 400, "ce-time"},
		{"bad percent-encoding", turn(func(h map[string]string) { h["ce-source"] = "agent/%zz" }), 400, "ce-source"},
		{"tenant extension", turn(func(h map[string]string) { h["ce-tenant"] = "globex" }), 400, "tenant"},
		{"unknown type", turn(func(h map[string]string) { h["ce-type"] = "agentmem.pressure.v1" }), 400, "type"},
		{"unsupported format", turn(func(h map[string]string) { h["content-type"] = "application/cloudevents+xml" }), 415, "content-type"},
		{"bad role", func() request {
			r := binaryTurn("x1", "s1", "alice", "robot", "hello")
			return r
		}(), 400, "role"},
		{"empty content", binaryTurn("x1", "s1", "alice", "user", "  "), 400, "content"},
		{"bad user", binaryTurn("x1", "s1", "al ice", "user", "hello"), 400, "user"},
		{"body not JSON", func() request {
			r := binaryTurn("x1", "s1", "alice", "user", "hello")
			r.body = "{nope"
			return r
		}(), 400, "body"},
		{"tenant in data", func() request {
			r := binaryTurn("x1", "s1", "alice", "user", "hello")
			r.body = `{"role":"user","content":"hello","user":"alice","tenant":"globex"}`
			return r
		}(), 400, "tenant"},
		{"bad path tenant", func() request {
			r := binaryTurn("x1", "s1", "alice", "user", "hello")
			r.path = "/v1/tenants/a.b/events"
			return r
		}(), 400, "tenant"},
		{"structured without specversion", structuredReq(map[string]any{"id": "x", "source": "a", "type": events.TypeTurn, "subject": "s1"}), 400, "specversion"},
		{"structured without subject", structuredReq(structured("x1", "", events.TypeTurn, events.Turn{Role: "user", Content: "hi", User: "alice"})), 400, "subject"},
		{"structured bad data", structuredReq(structured("x1", "s1", events.TypeTurn, map[string]any{"role": 7, "content": "hi"})), 400, "role"},
		{"structured not JSON", request{method: "POST", path: "/v1/tenants/acme/events",
			header: map[string]string{"content-type": events.ContentTypeStructured}, body: "[1,2"}, 400, "body"},
		{"session end naming a bad user", structuredReq(structured("x1", "s1", events.TypeSessionEnded, map[string]any{"user": "a/b"})), 400, "user"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(t, tc.req)
			p := r.problem(t)
			if r.status != tc.status || p.Field != tc.field || p.Detail == "" {
				t.Fatalf("status %d field %q (%s), want %d %q", r.status, p.Field, p.Detail, tc.status, tc.field)
			}
		})
	}
	if after := e.turnsStored(t); after != before {
		t.Fatalf("invalid events were stored: %d messages, %d before", after, before)
	}
}

func TestBatch(t *testing.T) {
	e := start(t, gateway.Config{})
	path := "/v1/tenants/acme/events"
	hdr := map[string]string{"content-type": gateway.ContentTypeBatch}

	t.Run("valid", func(t *testing.T) {
		batch := []any{
			structured("b1", "s1", events.TypeTurn, events.Turn{Role: "user", Content: "first", User: "alice"}),
			structured("b2", "s2", events.TypeTurn, events.Turn{Role: "user", Content: "second", User: "bob"}),
			structured("b3", "s1", events.TypeSessionEnded, events.SessionEnded{User: "alice"}),
		}
		r := e.do(t, request{method: "POST", path: path, header: hdr, body: jsonBody(t, batch)})
		if r.status != http.StatusAccepted {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		var res gateway.BatchResult
		r.decode(t, &res)
		if len(res.Results) != 3 {
			t.Fatalf("%d results", len(res.Results))
		}
		for i, want := range []string{"b1", "b2", "b3"} {
			got := res.Results[i]
			if got.ID != want || got.Duplicate || (i > 0 && got.Seq <= res.Results[i-1].Seq) {
				t.Fatalf("result %d: %+v", i, got)
			}
		}
		if res.Results[1].Session != "s2" {
			t.Fatalf("session of result 1: %q", res.Results[1].Session)
		}
	})

	t.Run("one bad event publishes nothing", func(t *testing.T) {
		before := e.turnsStored(t)
		batch := []any{
			structured("c1", "s1", events.TypeTurn, events.Turn{Role: "user", Content: "fine", User: "alice"}),
			structured("c2", "s1", events.TypeTurn, events.Turn{Role: "user", Content: ""}),
			structured("c3", "s1", events.TypeTurn, events.Turn{Role: "user", Content: "fine too"}),
			structured("c4", "bad.session", events.TypeTurn, events.Turn{Role: "user", Content: "x"}),
		}
		r := e.do(t, request{method: "POST", path: path, header: hdr, body: jsonBody(t, batch)})
		p := r.problem(t)
		if r.status != http.StatusBadRequest || p.Index == nil || *p.Index != 1 || p.Field != "content" {
			t.Fatalf("status %d, problem %+v", r.status, p)
		}
		if len(p.Errors) != 2 || p.Errors[0].Index != 1 || p.Errors[1].Index != 3 || p.Errors[1].Field != "subject" {
			t.Fatalf("errors %+v", p.Errors)
		}
		if !strings.Contains(p.Detail, "event 1") {
			t.Fatalf("detail does not name the event: %s", p.Detail)
		}
		if after := e.turnsStored(t); after != before {
			t.Fatalf("the batch stored %d messages", after-before)
		}
	})

	t.Run("duplicates in a batch", func(t *testing.T) {
		ev := structured("d1", "s1", events.TypeTurn, events.Turn{Role: "user", Content: "again", User: "alice"})
		r := e.do(t, request{method: "POST", path: path, header: hdr, body: jsonBody(t, []any{ev, ev})})
		var res gateway.BatchResult
		r.decode(t, &res)
		if r.status != http.StatusAccepted || len(res.Results) != 2 || res.Results[0].Duplicate || !res.Results[1].Duplicate {
			t.Fatalf("status %d, %+v", r.status, res)
		}
	})

	// Batches posted together are written together (group.go); each still gets its own events'
	// results, stored once, in order and contiguous.
	t.Run("concurrent batches", func(t *testing.T) {
		before := e.turnsStored(t)
		const clients, size = 8, 50
		errs := make(chan error, clients)
		for c := range clients {
			go func() {
				batch := make([]any, size)
				for i := range batch {
					batch[i] = structured(fmt.Sprintf("cc%d-%d", c, i), fmt.Sprintf("cs%d", c), events.TypeTurn,
						events.Turn{Role: "user", Content: fmt.Sprintf("turn %d of client %d", i, c), User: fmt.Sprintf("cu%d", c)})
				}
				resp, err := http.Post(e.srv.URL+path, gateway.ContentTypeBatch, strings.NewReader(jsonBody(t, batch)))
				if err != nil {
					errs <- err
					return
				}
				defer resp.Body.Close()
				var res gateway.BatchResult
				if err := json.NewDecoder(resp.Body).Decode(&res); err != nil || resp.StatusCode != http.StatusAccepted || len(res.Results) != size {
					errs <- fmt.Errorf("client %d: status %d, %d results (%v)", c, resp.StatusCode, len(res.Results), err)
					return
				}
				for i, r := range res.Results {
					if r.ID != fmt.Sprintf("cc%d-%d", c, i) || r.Duplicate || (i > 0 && r.Seq != res.Results[i-1].Seq+1) {
						errs <- fmt.Errorf("client %d, result %d: %+v", c, i, r)
						return
					}
				}
				errs <- nil
			}()
		}
		for range clients {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		if after := e.turnsStored(t); after != before+clients*size {
			t.Fatalf("%d messages stored, want %d", after-before, clients*size)
		}
	})

	t.Run("not an array", func(t *testing.T) {
		r := e.do(t, request{method: "POST", path: path, header: hdr, body: `{"id":"x"}`})
		if p := r.problem(t); r.status != 400 || p.Field != "body" {
			t.Fatalf("status %d, %+v", r.status, p)
		}
	})
}

func TestBodyLimit(t *testing.T) {
	e := start(t, gateway.Config{MaxBodyBytes: 1024})
	big := strings.Repeat("x", 2000)
	t.Run("content-length", func(t *testing.T) {
		r := e.do(t, binaryTurn("big", "s1", "alice", "user", big))
		if p := r.problem(t); r.status != http.StatusRequestEntityTooLarge || p.Field != "body" {
			t.Fatalf("status %d, %+v", r.status, p)
		}
	})
	t.Run("chunked", func(t *testing.T) {
		// A body of unknown length is cut at the limit while it is read.
		data, _ := json.Marshal(events.Turn{Role: "user", Content: big, User: "alice"})
		req, _ := http.NewRequestWithContext(context.Background(), "POST", e.srv.URL+"/v1/tenants/acme/events",
			io.MultiReader(strings.NewReader(string(data))))
		for k, v := range binaryTurn("big", "s1", "alice", "user", "").header {
			req.Header.Set(k, v)
		}
		resp, err := e.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if req.ContentLength != 0 && req.ContentLength != -1 {
			t.Fatalf("the request has a content length %d", req.ContentLength)
		}
		r := reply{status: resp.StatusCode, header: resp.Header, body: body}
		e.doc.checkResponse(t, "POST", "/v1/tenants/acme/events", resp, body)
		if p := r.problem(t); r.status != http.StatusRequestEntityTooLarge || p.Field != "body" {
			t.Fatalf("status %d, %+v", r.status, p)
		}
	})
	t.Run("retrieve", func(t *testing.T) {
		r := e.do(t, request{method: "POST", path: "/v1/tenants/acme/retrieve", body: `{"query":"` + big + `"}`})
		if r.status != http.StatusRequestEntityTooLarge {
			t.Fatalf("status %d", r.status)
		}
	})
}

func TestAuth(t *testing.T) {
	e := start(t, gateway.Config{Tokens: map[string]string{"acme-secret": "acme", "globex-secret": "globex"}})
	turn := binaryTurn("a1", "s1", "alice", "user", "hello")
	for _, tc := range []struct {
		name, auth string
		status     int
	}{
		{"no token", "", 401},
		{"not bearer", "Basic YWNtZTp4", 401},
		{"unknown token", "Bearer nope", 401},
		{"token of another tenant", "Bearer globex-secret", 403},
		{"token of the tenant", "Bearer acme-secret", 202},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := turn
			req.header = map[string]string{}
			for k, v := range turn.header {
				req.header[k] = v
			}
			if tc.auth != "" {
				req.header["Authorization"] = tc.auth
			}
			r := e.do(t, req)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			if tc.status >= 400 {
				p := r.problem(t)
				want := "authorization"
				if tc.status == 403 {
					want = "tenant"
				}
				if p.Field != want {
					t.Fatalf("field %q, want %q", p.Field, want)
				}
			}
			if tc.status == 401 && !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
				t.Fatalf("WWW-Authenticate %q", r.header.Get("WWW-Authenticate"))
			}
		})
	}
	t.Run("every tenant route is guarded", func(t *testing.T) {
		for _, req := range []request{
			{method: "POST", path: "/v1/tenants/acme/retrieve", body: `{"query":"x"}`},
			{method: "GET", path: "/v1/tenants/acme/sessions/s1"},
			{method: "GET", path: "/v1/tenants/acme/users/alice/facts"},
			{method: "DELETE", path: "/v1/tenants/acme/users/alice"},
		} {
			if r := e.do(t, req); r.status != 401 {
				t.Errorf("%s %s without a token: %d", req.method, req.path, r.status)
			}
			req.header = map[string]string{"Authorization": "Bearer globex-secret"}
			if r := e.do(t, req); r.status != 403 {
				t.Errorf("%s %s with globex's token: %d", req.method, req.path, r.status)
			}
		}
	})
	t.Run("the document needs no token", func(t *testing.T) {
		if r := e.do(t, request{method: "GET", path: "/v1/openapi.json"}); r.status != 200 {
			t.Fatalf("status %d", r.status)
		}
	})
}
