package inspector_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/inspector"
)

func TestListenExposure(t *testing.T) {
	for _, c := range []struct {
		listen   string
		loopback bool
	}{
		{"127.0.0.1:8080", true},
		{"127.0.0.1:0", true},
		{"127.8.9.10:8080", true},
		{"[::1]:8080", true},
		{"::1", true},
		{"[::ffff:127.0.0.1]:8080", true},
		{"localhost:8080", true},
		{"LOCALHOST:8080", true},
		{"localhost", true},
		{"0.0.0.0:8080", false},
		{"[::]:8080", false},
		{":8080", false},
		{"", false},
		{"203.0.113.7:8080", false},
		{"192.168.1.10:8080", false},
		{"[2001:db8::1]:8080", false},
		{"[fe80::1%lo]:8080", false},
		{"example.com:8080", false},
		{"localhost.example.com:8080", false},
		{"128.0.0.1:8080", false},
	} {
		t.Run(c.listen, func(t *testing.T) {
			if got := inspector.IsLoopback(c.listen); got != c.loopback {
				t.Fatalf("IsLoopback(%q) = %v, want %v", c.listen, got, c.loopback)
			}
			err := inspector.CheckExposure(c.listen, "")
			if c.loopback && err != nil {
				t.Fatalf("CheckExposure(%q, no token): %v", c.listen, err)
			}
			if !c.loopback {
				if !errors.Is(err, inspector.ErrTokenRequired) {
					t.Fatalf("CheckExposure(%q, no token) = %v, want ErrTokenRequired", c.listen, err)
				}
				if c.listen != "" && !strings.Contains(err.Error(), c.listen) {
					t.Fatalf("the error %q does not name the address %q", err, c.listen)
				}
			}
			if err := inspector.CheckExposure(c.listen, "s3cret"); err != nil {
				t.Fatalf("CheckExposure(%q, a token): %v", c.listen, err)
			}
			// New applies the same check before it touches NATS.
			_, err = inspector.New(inspector.Config{Listen: c.listen}, nil, nil, zerolog.Nop())
			if got := errors.Is(err, inspector.ErrTokenRequired); got == c.loopback {
				t.Fatalf("New(Listen %q, no token): %v", c.listen, err)
			}
		})
	}
}

// TestNoTokenAnswersLoopbackOnly serves the inspector without a token (on loopback, as it must)
// and calls its API from a loopback and from a public remote address: the second gets a 403
// problem, the page still loads.
func TestNoTokenAnswersLoopbackOnly(t *testing.T) {
	e := start(t, inspector.Config{})
	h := e.ins.Handler()
	serve := func(path, remote string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.RemoteAddr = remote
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	for _, remote := range []string{"127.0.0.1:51000", "[::1]:51000"} {
		if rec := serve("/api/tenants", remote); rec.Code != http.StatusOK {
			t.Errorf("from %s: %d %s", remote, rec.Code, rec.Body)
		}
	}
	for _, remote := range []string{"203.0.113.7:51000", "[2001:db8::7]:51000", "10.0.0.2:51000"} {
		for _, path := range []string{"/api/tenants", "/api/tenants/acme/sessions", "/api/tenants/acme/events", "/api/nothing"} {
			rec := serve(path, remote)
			if rec.Code != http.StatusForbidden || rec.Header().Get("Content-Type") != "application/problem+json" {
				t.Fatalf("GET %s from %s: %d %q, want a 403 problem", path, remote, rec.Code, rec.Header().Get("Content-Type"))
			}
			var p struct {
				Type, Title, Detail, Instance string
				Status                        int
				Error                         struct{ Code int }
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
				t.Fatalf("the problem body %q: %v", rec.Body, err)
			}
			if p.Type != "about:blank" || p.Title != "Forbidden" || p.Status != http.StatusForbidden || p.Instance != path ||
				!strings.Contains(p.Detail, "loopback") || p.Error.Code != http.StatusForbidden {
				t.Fatalf("GET %s from %s: problem %+v", path, remote, p)
			}
		}
		if rec := serve("/", remote); rec.Code != http.StatusOK {
			t.Errorf("the page from %s: %d (it holds no data)", remote, rec.Code)
		}
	}
}

// TestTokenAnswersAnyRemote: with a token the remote address does not matter, the token does.
func TestTokenAnswersAnyRemote(t *testing.T) {
	e := start(t, inspector.Config{Token: "s3cret", Listen: "0.0.0.0:8080"})
	for _, c := range []struct {
		token string
		code  int
	}{{"s3cret", http.StatusOK}, {"", http.StatusUnauthorized}} {
		req := httptest.NewRequest(http.MethodGet, "/api/tenants", nil)
		req.RemoteAddr = "203.0.113.7:51000"
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		rec := httptest.NewRecorder()
		e.ins.Handler().ServeHTTP(rec, req)
		if rec.Code != c.code {
			t.Errorf("token %q from a public address: %d, want %d", c.token, rec.Code, c.code)
		}
	}
}
