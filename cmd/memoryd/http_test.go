package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestHTTPServesAPIInspectorAndMetrics runs memoryd itself with --http and bearer tokens and
// checks that one listener serves the HTTP API (a turn published over HTTP is read back),
// the inspector page and its API, /metrics and the health endpoints.
func TestHTTPServesAPIInspectorAndMetrics(t *testing.T) {
	do := startMemoryd(t, "--http-tokens", writeFile(t, "tokens.json", `{"tok-acme":"acme"}`), "--inspector-token", "insp")
	ev := `{"specversion":"1.0","id":"t1","type":"agentmem.turn.v1","source":"test","subject":"s1",` +
		`"datacontenttype":"application/json","data":{"user":"u1","role":"user","content":"我喜欢喝龙井茶"}}`
	if code, body := do("POST", "/v1/tenants/acme/events", "tok-acme", "application/cloudevents+json", ev); code != http.StatusAccepted {
		t.Fatalf("publish over HTTP: %d %s", code, body)
	}
	if code, body := do("POST", "/v1/tenants/acme/events", "", "application/cloudevents+json", ev); code != http.StatusUnauthorized {
		t.Fatalf("publish without a token: %d %s", code, body)
	}
	retrieve := `{"query":"龙井","session":"s1","after":"t1","wait_ms":5000}`
	if code, body := do("POST", "/v1/tenants/acme/retrieve", "tok-acme", "application/json", retrieve); code != http.StatusOK || !strings.Contains(body, "龙井茶") {
		t.Fatalf("retrieve over HTTP: %d %s", code, body)
	}
	for _, c := range []struct {
		path, token string
		code        int
		has         string
	}{
		{"/v1/tenants/acme/sessions/s1", "tok-acme", 200, `"id":"t1"`},
		{"/v1/openapi.json", "", 200, `"openapi"`},
		{"/inspector/", "", 200, "<html"},
		{"/inspector/api/tenants", "insp", 200, "acme"},
		{"/inspector/api/tenants", "", 401, ""},
		{"/metrics", "", 200, `agentmem_http_requests_total{code="202",method="POST",route="/v1/tenants/{tenant}/events"} 1`},
		{"/healthz", "", 200, "ok"},
	} {
		code, body := do("GET", c.path, c.token, "", "")
		if code != c.code || !strings.Contains(body, c.has) {
			t.Errorf("GET %s: %d, want %d with %q; %s", c.path, code, c.code, c.has, firstLine(body))
		}
	}
	if code, _ := do("GET", "/", "", "", ""); code != http.StatusOK {
		t.Errorf("GET / (redirected to the inspector): %d", code)
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return fmt.Sprintf("%.200s", s)
}

// TestHTTPRefusesAnUnprotectedInspector: memoryd does not start with --http on a non-loopback
// address and no --inspector-token, and says which flag to set; on loopback it needs none.
func TestHTTPRefusesAnUnprotectedInspector(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "203.0.113.7:8080"} {
		t.Run(addr, func(t *testing.T) {
			dir := t.TempDir()
			err := run(context.Background(), []string{"--listen", freeAddr(t), "--data", filepath.Join(dir, "data"),
				"--http", addr, "--log-level", "error"})
			if err == nil || !strings.Contains(err.Error(), "--inspector-token is required when --http listens on a non-loopback address ("+addr+")") ||
				!strings.Contains(err.Error(), "127.0.0.1") {
				t.Fatalf("run with --http %s and no --inspector-token: %v", addr, err)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Fatalf("memoryd started before refusing (%d entries in its data directory)", len(entries))
			}
		})
	}
}
