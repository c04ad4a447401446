package daemon_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/gateway"
	"github.com/agentmem/agentmem/internal/inspector"
	"github.com/agentmem/agentmem/pkg/events"
)

// TestHTTPWithAuthOn: with NATS authentication on, the HTTP API and the inspector that memoryd
// serves on its own (worker) connection publish, retrieve, read the buckets and stream events.
func TestHTTPWithAuthOn(t *testing.T) {
	s := startSecured(t, nil)
	nc := s.d.Conn()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	topo := events.DefaultTopology()
	gw, err := gateway.New(gateway.Config{Tokens: map[string]string{"tok-a": "a"}}, nc, js, topo, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	ins, err := inspector.New(inspector.Config{Topology: topo, Token: "insp"}, nc, js, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer ins.Close()
	mux := http.NewServeMux()
	mux.Handle("/v1/", gw.Handler())
	mux.Handle("/inspector/", http.StripPrefix("/inspector", ins.Handler()))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	do := func(method, path, token, ctype, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		c := &http.Client{Timeout: 20 * time.Second}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	ev := `{"specversion":"1.0","id":"t1","type":"agentmem.turn.v1","source":"test","subject":"s1",` +
		`"datacontenttype":"application/json","data":{"user":"u1","role":"user","content":"我在杭州工作，喜欢龙井茶"}}`
	if code, body := do("POST", "/v1/tenants/a/events", "tok-a", "application/cloudevents+json", ev); code != http.StatusAccepted {
		t.Fatalf("publish: %d %s", code, body)
	}
	if code, body := do("POST", "/v1/tenants/a/retrieve", "tok-a", "application/json", `{"query":"龙井茶","session":"s1","after":"t1","wait_ms":5000}`); code != 200 || !strings.Contains(body, "龙井茶") {
		t.Fatalf("retrieve: %d %s", code, body)
	}
	for _, c := range []struct{ path, has string }{
		{"/v1/tenants/a/sessions/s1", `"id":"t1"`},
		{"/inspector/api/tenants", `"a"`},
		{"/inspector/api/tenants/a/sessions/s1", "我在杭州工作"},
		{"/inspector/api/tenants/a/search?q=" + "%E9%BE%99%E4%BA%95" + "&session=s1&user=u1", "龙井茶"},
	} {
		token := "tok-a"
		if strings.HasPrefix(c.path, "/inspector/") {
			token = "insp"
		}
		if code, body := do("GET", c.path, token, "", ""); code != 200 || !strings.Contains(body, c.has) {
			t.Errorf("GET %s: %d %.300s", c.path, code, body)
		}
	}
}
