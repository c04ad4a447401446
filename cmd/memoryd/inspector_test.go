package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// request sends a request to a memoryd started by startMemoryd: a bearer token and a content
// type ("" for none); it answers the status and the body.
type request func(method, path, token, ctype, body string) (int, string)

// get sends a GET with a bearer token ("" for none).
func (do request) get(path, token string) (int, string) {
	return do(http.MethodGet, path, token, "", "")
}

// startMemoryd runs memoryd with an HTTP listener and args, waits until it is ready, and returns
// a function that sends it requests.
func startMemoryd(t *testing.T, args ...string) request {
	t.Helper()
	dir := t.TempDir()
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"--listen", freeAddr(t), "--data", filepath.Join(dir, "data"), "--http", addr,
			"--log-level", "error"}, args...))
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("memoryd: %v", err)
		}
	})
	do := func(method, path, token, ctype, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case err := <-done:
			t.Fatalf("memoryd stopped: %v", err)
		default:
		}
		if code, _ := do(http.MethodGet, "/readyz", "", "", ""); code == http.StatusOK {
			return do
		}
		if time.Now().After(deadline) {
			t.Fatal("memoryd's HTTP server not ready within 30s")
		}
		tick := time.NewTimer(50 * time.Millisecond)
		<-tick.C
	}
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestInspectorWithTenantsNeedsItsOwnToken: with HTTP tenants and no inspector token, the
// inspector answers no caller, loopback included, and says which flag to set; a single-user
// memoryd keeps serving loopback callers without one.
func TestInspectorWithTenantsNeedsItsOwnToken(t *testing.T) {
	t.Run("tenants", func(t *testing.T) {
		get := startMemoryd(t, "--http-tokens", writeFile(t, "tokens.json", `{"tok-acme":"acme","tok-beta":"beta"}`)).get
		for _, tok := range []string{"", "tok-acme"} {
			code, body := get("/inspector/api/tenants", tok)
			if code != http.StatusForbidden || !strings.Contains(body, "--inspector-token") {
				t.Fatalf("inspector with tenants and no inspector token (bearer %q): %d %s", tok, code, body)
			}
		}
		if code, _ := get("/inspector/", ""); code != http.StatusOK {
			t.Fatalf("the page itself (no data): %d", code)
		}
	})
	t.Run("single-user", func(t *testing.T) {
		get := startMemoryd(t).get
		if code, body := get("/inspector/api/tenants", ""); code != http.StatusOK {
			t.Fatalf("single-user inspector on loopback: %d %s", code, body)
		}
	})
}

// TestInspectorTokenScopedToOneTenant: a token of --inspector-tokens sees its tenant only.
func TestInspectorTokenScopedToOneTenant(t *testing.T) {
	get := startMemoryd(t,
		"--http-tokens", writeFile(t, "tokens.json", `{"tok-acme":"acme","tok-beta":"beta"}`),
		"--inspector-token", "ops-all",
		"--inspector-tokens", writeFile(t, "inspector.json", `{"ops-acme":"acme"}`)).get
	if code, body := get("/inspector/api/tenants", "ops-acme"); code != http.StatusOK || !strings.Contains(body, `"acme"`) || strings.Contains(body, "beta") {
		t.Fatalf("tenants seen by acme's operator: %d %s", code, body)
	}
	for _, path := range []string{"/inspector/api/tenants/beta/sessions", "/inspector/api/tenants/beta/users/u1/facts",
		"/inspector/api/tenants/beta/usage", "/inspector/api/tenants/beta/search?q=x&user=u1"} {
		if code, body := get(path, "ops-acme"); code != http.StatusNotFound {
			t.Errorf("GET %s by acme's operator: %d %s, want 404", path, code, firstLine(body))
		}
	}
	if code, body := get("/inspector/api/tenants/acme/sessions", "ops-acme"); code != http.StatusOK {
		t.Fatalf("acme's sessions by acme's operator: %d %s", code, body)
	}
	if code, body := get("/inspector/api/usage", "ops-acme"); code != http.StatusOK || strings.Contains(body, "beta") {
		t.Fatalf("usage by acme's operator: %d %s", code, body)
	}
	if code, body := get("/inspector/api/tenants/beta/sessions", "ops-all"); code != http.StatusOK {
		t.Fatalf("beta's sessions by the operator of every tenant: %d %s", code, body)
	}
	if code, _ := get("/inspector/api/tenants", "tok-acme"); code != http.StatusUnauthorized {
		t.Fatalf("an HTTP API token is not an inspector token: %d", code)
	}
}
