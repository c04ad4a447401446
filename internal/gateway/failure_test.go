package gateway_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/gateway"
	"github.com/agentmem/agentmem/pkg/events"
)

// bare is a gateway on a NATS server with JetStream but no agentmem: no streams, buckets or
// services, so that every failure of what the gateway depends on can be staged.
func bare(t *testing.T, cfg gateway.Config) (*env, *brokertest.Env) {
	t.Helper()
	b := brokertest.Start(t)
	g, err := gateway.New(cfg, b.Connect(t), b.JS, events.DefaultTopology(), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	e := &env{nc: b.NC, js: b.JS, g: g, doc: loadDoc(t), topo: events.DefaultTopology()}
	e.srv = httptest.NewServer(g.Handler())
	t.Cleanup(e.srv.Close)
	return e, b
}

func TestNATSFailures(t *testing.T) {
	// The timeout leaves room for JetStream's own retries of a publish nothing answers (2 × 250ms).
	e, b := bare(t, gateway.Config{Timeout: 1500 * time.Millisecond})
	// A "service" that takes requests and never answers.
	silent, err := b.NC.Subscribe("memory.retrieve.slow", func(*nats.Msg) {})
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Unsubscribe()
	// A service that answers with service errors, as the agentmem services do.
	svcErr := func(code, field, msg string) nats.MsgHandler {
		return func(m *nats.Msg) {
			r := nats.NewMsg(m.Reply)
			r.Header.Set(micro.ErrorCodeHeader, code)
			r.Header.Set(micro.ErrorHeader, msg)
			r.Data = []byte(`{"error":{"code":` + code + `,"field":"` + field + `","message":"` + msg + `"}}`)
			_ = m.RespondMsg(r)
		}
	}
	for subject, h := range map[string]nats.MsgHandler{
		"memory.retrieve.limited": svcErr("429", "", "rate limit: more than 5 retrieves/s"),
		"memory.forget.acme":      svcErr("404", "user", "no such user"),
		"memory.retrieve.weird": func(m *nats.Msg) {
			r := nats.NewMsg(m.Reply)
			r.Header.Set(micro.ErrorCodeHeader, "oops")
			_ = m.RespondMsg(r)
		},
	} {
		s, err := b.NC.Subscribe(subject, h)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Unsubscribe()
	}
	if err := b.NC.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		req    request
		status int
		field  string
	}{
		{"no retriever", request{method: "POST", path: "/v1/tenants/acme/retrieve", body: `{"query":"x"}`}, 503, ""},
		{"retriever does not answer", request{method: "POST", path: "/v1/tenants/slow/retrieve", body: `{"query":"x"}`}, 504, ""},
		{"service error 429", request{method: "POST", path: "/v1/tenants/limited/retrieve", body: `{"query":"x"}`}, 429, ""},
		{"service error 404 with a field", request{method: "DELETE", path: "/v1/tenants/acme/users/alice"}, 404, "user"},
		{"service error that is no HTTP status", request{method: "POST", path: "/v1/tenants/weird/retrieve", body: `{"query":"x"}`}, 502, ""},
		{"no stream", binaryTurn("t1", "s1", "alice", "user", "hello"), 503, ""},
		{"no session bucket", request{method: "GET", path: "/v1/tenants/acme/sessions/s1"}, 503, ""},
		{"no long-term bucket", request{method: "GET", path: "/v1/tenants/acme/users/alice/facts"}, 503, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			r := e.do(t, tc.req)
			p := r.problem(t)
			if r.status != tc.status || p.Field != tc.field || p.Detail == "" {
				t.Fatalf("status %d field %q (%s), want %d %q", r.status, p.Field, p.Detail, tc.status, tc.field)
			}
			if took := time.Since(start); took > 10*time.Second {
				t.Fatalf("took %s", took)
			}
		})
	}
}

func TestUnroutedRequestsGetProblems(t *testing.T) {
	e, _ := bare(t, gateway.Config{})
	r := e.send(t, request{method: "GET", path: "/v1/nope"})
	if p := r.problem(t); r.status != 404 || !strings.Contains(p.Detail, "/v1/nope") {
		t.Fatalf("status %d, %+v", r.status, p)
	}
	r = e.send(t, request{method: "GET", path: "/v1/tenants/acme/events"})
	if p := r.problem(t); r.status != 405 || !strings.Contains(r.header.Get("Allow"), "POST") || p.Detail == "" {
		t.Fatalf("status %d, Allow %q, %+v", r.status, r.header.Get("Allow"), p)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, cfg := range []gateway.Config{
		{MaxBodyBytes: -1},
		{Timeout: -time.Second},
		{ReadTimeout: -time.Second},
		{Tokens: map[string]string{"": "acme"}},
		{Tokens: map[string]string{"t": "a.b"}},
	} {
		if _, err := gateway.New(cfg, nil, nil, events.DefaultTopology(), zerolog.Nop()); err == nil {
			t.Errorf("New accepted %+v", cfg)
		}
	}
}

// TestSlowClientsAreCutOff serves the gateway as the gateway command and memoryd do (Serve, with
// read timeouts) and talks to it over raw TCP: a client that never finishes its headers, and one
// that never finishes its body, are cut off in bounded time while a normal client is served.
func TestSlowClientsAreCutOff(t *testing.T) {
	const (
		headerTimeout = 200 * time.Millisecond
		readTimeout   = 400 * time.Millisecond
		bound         = 5 * time.Second
	)
	b := brokertest.Start(t)
	g, err := gateway.New(gateway.Config{ReadHeaderTimeout: headerTimeout, ReadTimeout: readTimeout, Timeout: time.Second},
		b.Connect(t), b.JS, events.DefaultTopology(), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- g.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(bound):
			t.Error("Serve did not return after its context ended")
		}
	})
	addr := ln.Addr().String()

	// waitClosed reads until the server closes the connection and returns what it sent and when.
	waitClosed := func(t *testing.T, c net.Conn, since time.Time) (string, time.Duration) {
		t.Helper()
		_ = c.SetReadDeadline(time.Now().Add(bound))
		got, err := io.ReadAll(c)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("the server kept the connection open for %s", bound)
		}
		return string(got), time.Since(since)
	}

	t.Run("headers never finished", func(t *testing.T) {
		// From before the dial: the server's timeouts run from when it accepted the connection.
		began := time.Now()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := io.WriteString(c, "POST /v1/tenants/acme/events HTTP/1.1\r\nHost: x\r\nce-id: "); err != nil {
			t.Fatal(err)
		}
		_, took := waitClosed(t, c, began)
		if took < headerTimeout {
			t.Fatalf("closed after %s, before the header timeout", took)
		}
	})

	t.Run("headers sent slowly", func(t *testing.T) {
		// From before the dial: the server's timeouts run from when it accepted the connection.
		began := time.Now()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// One header line at a time, each well within the timeout, never ending: the header
		// timeout bounds the whole header, not each read.
		tick := time.NewTicker(headerTimeout / 4)
		defer tick.Stop()
		closed := make(chan struct{})
		go func() {
			defer close(closed)
			_ = c.SetReadDeadline(time.Now().Add(bound))
			_, _ = io.ReadAll(c)
		}()
		_, _ = io.WriteString(c, "POST /v1/tenants/acme/events HTTP/1.1\r\nHost: x\r\n")
	loop:
		for i := 0; ; i++ {
			select {
			case <-closed:
				break loop
			case <-tick.C:
				if _, err := io.WriteString(c, "x-slow: "+strings.Repeat("a", i%7+1)+"\r\n"); err != nil {
					<-closed
					break loop
				}
			}
		}
		if took := time.Since(began); took > bound || took < headerTimeout {
			t.Fatalf("closed after %s", took)
		}
	})

	t.Run("body never finished", func(t *testing.T) {
		// From before the dial: the server's timeouts run from when it accepted the connection.
		began := time.Now()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		head := "POST /v1/tenants/acme/events HTTP/1.1\r\nHost: x\r\nContent-Type: application/cloudevents+json\r\nContent-Length: 1000\r\n\r\n{\"specversion\":"
		if _, err := io.WriteString(c, head); err != nil {
			t.Fatal(err)
		}
		got, took := waitClosed(t, c, began)
		if took < readTimeout {
			t.Fatalf("closed after %s, before the read timeout", took)
		}
		resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(got)), nil)
		if err != nil {
			t.Fatalf("no response before the close: %q", got)
		}
		if resp.StatusCode != http.StatusRequestTimeout || resp.Header.Get("Content-Type") != gateway.ContentTypeProblem {
			t.Fatalf("status %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	})

	t.Run("a normal client is served meanwhile", func(t *testing.T) {
		resp, err := http.Get("http://" + addr + "/v1/openapi.json")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
	})
}
