package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker"
	"github.com/agentmem/agentmem/internal/daemon"
	"github.com/agentmem/agentmem/internal/gateway"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/pkg/events"
)

// env is a real in-process agentmem (daemon.Start: NATS, JetStream, every worker) with the
// gateway in front of it on an httptest server.
type env struct {
	d    *daemon.Daemon
	nc   *nats.Conn // the test's own connection (to observe and to compare with)
	js   jetstream.JetStream
	g    *gateway.Gateway
	srv  *httptest.Server
	doc  *apiDoc
	topo events.Topology
}

// start starts agentmem and the gateway with cfg.
func start(t testing.TB, cfg gateway.Config) *env {
	t.Helper()
	d, err := daemon.Start(context.Background(), daemon.Config{
		Broker: broker.Config{Listen: "127.0.0.1:-1", DataDir: t.TempDir()},
		Ingest: ingest.Config{IdleTimeout: -1},
	}, zerolog.Nop())
	if err != nil {
		t.Fatalf("starting agentmem: %v", err)
	}
	e := &env{d: d, doc: loadDoc(t), topo: events.DefaultTopology()}
	gnc, err := nats.Connect(d.URL(), nats.Name("gateway"))
	if err != nil {
		_ = d.Stop()
		t.Fatal(err)
	}
	if e.nc, err = nats.Connect(d.URL(), nats.Name("test")); err != nil {
		gnc.Close()
		_ = d.Stop()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if e.srv != nil {
			e.srv.Close()
		}
		gnc.Close()
		e.nc.Close()
		if err := d.Stop(); err != nil {
			t.Errorf("stopping agentmem: %v", err)
		}
	})
	gjs, _ := jetstream.New(gnc)
	e.js, _ = jetstream.New(e.nc)
	if e.g, err = gateway.New(cfg, gnc, gjs, e.topo, zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
	e.srv = httptest.NewServer(e.g.Handler())
	return e
}

// request is one HTTP request of a test.
type request struct {
	method, path string
	header       map[string]string
	body         string
}

// reply is a response with its body read.
type reply struct {
	status int
	header http.Header
	body   []byte
}

// problem decodes the body as a problem.
func (r reply) problem(t testing.TB) gateway.Problem {
	t.Helper()
	var p gateway.Problem
	if ct := r.header.Get("Content-Type"); ct != gateway.ContentTypeProblem {
		t.Fatalf("content-type %q, want %s (status %d, body %s)", ct, gateway.ContentTypeProblem, r.status, r.body)
	}
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatalf("problem body %s: %v", r.body, err)
	}
	if p.Status != r.status || p.Type == "" || p.Title == "" {
		t.Fatalf("problem %+v does not match the status %d", p, r.status)
	}
	return p
}

// decode decodes a JSON body into v.
func (r reply) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decoding %s: %v", r.body, err)
	}
}

// do sends a request to the gateway and checks the response against the OpenAPI document.
func (e *env) do(t testing.TB, req request) reply {
	t.Helper()
	r := e.send(t, req)
	path, _, _ := strings.Cut(req.path, "?")
	e.doc.checkResponse(t, req.method, path, &http.Response{StatusCode: r.status, Header: r.header}, r.body)
	return r
}

// send sends a request without checking the document (for paths it does not have).
func (e *env) send(t testing.TB, req request) reply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var body io.Reader
	if req.body != "" {
		body = strings.NewReader(req.body)
	}
	hr, err := http.NewRequestWithContext(ctx, req.method, e.srv.URL+req.path, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range req.header {
		hr.Header.Set(k, v)
	}
	resp, err := e.srv.Client().Do(hr)
	if err != nil {
		t.Fatalf("%s %s: %v", req.method, req.path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}

// binaryTurn is a turn in binary mode.
func binaryTurn(id, session, user, role, content string) request {
	data, _ := json.Marshal(events.Turn{Role: role, Content: content, User: user})
	return request{method: "POST", path: "/v1/tenants/acme/events", header: map[string]string{
		"ce-specversion": "1.0", "ce-id": id, "ce-type": events.TypeTurn, "ce-source": "agent/test",
		"ce-subject": session, "ce-time": "2026-11-30T10:00:00Z", "content-type": "application/json",
	}, body: string(data)}
}

// structured returns a structured-mode event as a JSON object.
func structured(id, session, typ string, data any) map[string]any {
	return map[string]any{"specversion": "1.0", "id": id, "source": "agent/test", "type": typ,
		"subject": session, "time": "2026-11-30T10:00:00Z", "datacontenttype": "application/json", "data": data}
}

func jsonBody(t testing.TB, v any) string {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// turnsStored is how many messages the turns stream holds.
func (e *env) turnsStored(t testing.TB) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := e.js.Stream(ctx, e.topo.TurnsStream())
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}
