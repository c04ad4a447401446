package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/auth"
	"github.com/agentmem/agentmem/internal/broker"
	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/daemon"
	"github.com/agentmem/agentmem/internal/ingest"
)

// secured is an in-process memoryd with authentication on, as docs/security.md sets it up:
// the worker, the admin and one agent credential each of tenants acme and beta.
type secured struct {
	url   string
	store *auth.Store
}

// creds returns the credentials file of user name ("admin", "agent-acme", "agent-beta").
func (s *secured) creds(name string) string { return s.store.CredsFile(name) }

func startSecured(t *testing.T) *secured {
	t.Helper()
	dir := t.TempDir()
	store, err := auth.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []struct {
		name   string
		role   auth.Role
		tenant string
	}{{"worker", auth.RoleWorker, ""}, {"admin", auth.RoleAdmin, ""}, {"agent-acme", auth.RoleAgent, "acme"}, {"agent-beta", auth.RoleAgent, "beta"}} {
		if _, err := store.Add(u.name, u.role, u.tenant); err != nil {
			t.Fatal(err)
		}
	}
	conf := filepath.Join(dir, "server.conf")
	if err := os.WriteFile(conf, []byte(auth.ServerConfig("auth.conf", "", "", "")), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := daemon.Start(context.Background(), daemon.Config{
		Broker:        broker.Config{Listen: "127.0.0.1:-1", DataDir: t.TempDir(), ConfigFile: conf},
		Ingest:        ingest.Config{IdleTimeout: -1},
		ClientOptions: []nats.Option{nats.UserCredentials(store.CredsFile("worker"))},
	}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Stop(); err != nil {
			t.Error(err)
		}
	})
	return &secured{url: d.URL(), store: store}
}

// runCaptured runs memctl with args and returns what it printed on standard output and on
// standard error (where nats.go's default error handler writes), and how long it took.
func runCaptured(t *testing.T, args ...string) (stdout, stderr string, took time.Duration, err error) {
	t.Helper()
	r, w, perr := os.Pipe()
	if perr != nil {
		t.Fatal(perr)
	}
	saved := os.Stderr
	os.Stderr = w
	read := make(chan string)
	go func() {
		data, _ := io.ReadAll(r)
		read <- string(data)
	}()
	var out bytes.Buffer
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a command that hangs fails the test
	defer cancel()
	err = run(ctx, args, &out)
	took = time.Since(start)
	os.Stderr = saved
	_ = w.Close()
	stderr = <-read
	_ = r.Close()
	return out.String(), stderr, took, err
}

// With authentication on, a tenant agent's credentials publish, wait and search without a
// permissions violation; a rejected turn says why at once; credentials of another tenant are
// refused at once, saying so, and so are admin-only commands.
func TestTenantAgentCredentials(t *testing.T) {
	s := startSecured(t)
	acme := []string{"--nats", s.url, "--creds", s.creds("agent-acme"), "--tenant", "acme"}

	out, errOut, _, err := runCaptured(t, append([]string{"publish", "--session", "s1", "--user", "alice", "--wait", "--wait-timeout", "20s", "hello"}, acme...)...)
	if err != nil || !strings.Contains(out, "applied to session acme/s1") {
		t.Fatalf("publish with acme's credentials: %v\n%s", err, out)
	}
	if errOut != "" {
		t.Errorf("publish with acme's credentials printed on standard error:\n%s", errOut)
	}

	out, errOut, took, err := runCaptured(t, append([]string{"publish", "--session", "s2", "--wait", "--wait-timeout", "20s", "no user yet"}, acme...)...)
	if err == nil || !strings.Contains(err.Error(), "dead-lettered: user is required") {
		t.Errorf("a rejected turn: %v, want dead-lettered with the reason", err)
	}
	if !strings.Contains(out, "dead-lettered, not applied: user is required") || strings.Contains(out, "within") || errOut != "" {
		t.Errorf("a rejected turn printed\n%s\nand on standard error\n%s", out, errOut)
	}
	if took > 10*time.Second {
		t.Errorf("a rejected turn took %s to be reported", took)
	}

	out, _, _, err = runCaptured(t, append([]string{"search", "--session", "s1", "hello"}, acme...)...)
	if err != nil || !strings.Contains(out, "hello") {
		t.Errorf("search with acme's credentials: %v\n%s", err, out)
	}

	// Credentials of tenant beta for tenant acme: refused at once (memctl waits 10s for a reply).
	beta := []string{"--nats", s.url, "--creds", s.creds("agent-beta"), "--tenant", "acme"}
	for _, args := range [][]string{
		{"search", "--session", "s1", "hello"},
		{"publish", "--session", "s1", "--user", "alice", "--wait", "hi"},
		{"end", "--session", "s1"},
		{"forget", "--user", "alice"},
	} {
		_, errOut, took, err := runCaptured(t, append(args, beta...)...)
		if err == nil || !strings.Contains(err.Error(), "not permitted") || !strings.Contains(err.Error(), `tenant "beta"`) || !strings.Contains(err.Error(), "--tenant beta") {
			t.Errorf("%s with beta's credentials for acme: %v, want not permitted naming beta", args[0], err)
		}
		if took > 5*time.Second {
			t.Errorf("%s with beta's credentials for acme took %s, want at once", args[0], took)
		}
		if errOut != "" {
			t.Errorf("%s with beta's credentials printed on standard error:\n%s", args[0], errOut)
		}
	}

	// A command that reads streams, with an agent's credentials.
	_, _, took, err = runCaptured(t, append([]string{"dlq", "list"}, acme...)...)
	if err == nil || !strings.Contains(err.Error(), "not permitted") || !strings.Contains(err.Error(), "admin credentials") || took > 4*time.Second {
		t.Errorf("dlq list with an agent's credentials: %v after %s, want not permitted, admin credentials, at once", err, took)
	}
	out, _, _, err = runCaptured(t, "dlq", "list", "--nats", s.url, "--creds", s.creds("admin"), "--tenant", "acme")
	if err != nil || !strings.Contains(out, "user is required") {
		t.Errorf("dlq list with the admin's credentials: %v\n%s", err, out)
	}
}

// memctl session reads a session through memory.session.<tenant>: a tenant agent's credentials
// read the tenant's own sessions, never another tenant's, and the admin's read any.
func TestSessionWithAgentCredentials(t *testing.T) {
	s := startSecured(t)
	acme := []string{"--nats", s.url, "--creds", s.creds("agent-acme"), "--tenant", "acme"}
	if out, _, _, err := runCaptured(t, append([]string{"publish", "--session", "s1", "--user", "alice", "--wait", "--wait-timeout", "20s", "--id", "t1", "my secret plan"}, acme...)...); err != nil {
		t.Fatalf("publish: %v\n%s", err, out)
	}
	for _, creds := range []string{"agent-acme", "admin"} {
		out, errOut, _, err := runCaptured(t, "session", "--session", "s1", "--nats", s.url, "--creds", s.creds(creds), "--tenant", "acme")
		if err != nil || !strings.Contains(out, "session acme/s1  user alice") || !strings.Contains(out, "t1") || errOut != "" {
			t.Errorf("session with %s's credentials: %v\n%s%s", creds, err, out, errOut)
		}
	}
	out, _, _, err := runCaptured(t, append([]string{"session", "--session", "s1", "--json"}, acme...)...)
	var v struct {
		Tenant, Session, User string
		Turns                 int
		Entries               []struct{ ID, State string }
	}
	if err != nil || json.Unmarshal([]byte(out), &v) != nil || v.Tenant != "acme" || v.User != "alice" || v.Turns != 1 || len(v.Entries) != 1 || v.Entries[0].ID != "t1" {
		t.Errorf("session --json: %v\n%s", err, out)
	}
	// Tenant beta's credentials: acme's subject is refused at once; beta's own subject knows no
	// session s1 (beta's s1 is not acme's).
	_, _, took, err := runCaptured(t, "session", "--session", "s1", "--nats", s.url, "--creds", s.creds("agent-beta"), "--tenant", "acme")
	if err == nil || !strings.Contains(err.Error(), `not permitted: these credentials may not publish to "memory.session.acme"`) || took > 5*time.Second {
		t.Errorf("session of acme with beta's credentials: %v after %s, want not permitted at once", err, took)
	}
	out, _, _, err = runCaptured(t, "session", "--session", "s1", "--nats", s.url, "--creds", s.creds("agent-beta"), "--tenant", "beta")
	if err == nil || !strings.Contains(err.Error(), "session beta/s1 not found") || strings.Contains(out, "alice") {
		t.Errorf("session s1 of beta: %v\n%s, want not found", err, out)
	}
}

// memctl import with an agent's credentials publishes the turns at once; the look-up of the
// sessions it may already hold, which takes the admin's, is skipped with a note.
func TestImportWithAgentCredentials(t *testing.T) {
	s := startSecured(t)
	file := filepath.Join(t.TempDir(), "history.jsonl")
	lines := `{"session":"s1","user":"alice","role":"user","content":"I prefer tea","time":"2026-01-02T10:00:00Z"}` + "\n" +
		`{"session":"s1","role":"assistant","content":"noted","time":"2026-01-02T10:00:05Z"}` + "\n"
	if err := os.WriteFile(file, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, took, err := runCaptured(t, "import", "--quiet", "--nats", s.url, "--creds", s.creds("agent-acme"), "--tenant", "acme", file)
	if err != nil || took > 5*time.Second {
		t.Fatalf("import with acme's credentials: %v after %s\n%s%s", err, took, out, errOut)
	}
	if !strings.Contains(errOut, "cannot read the session store (not permitted") || strings.Contains(errOut, "nats: permissions violation") {
		t.Errorf("import with acme's credentials printed on standard error:\n%s", errOut)
	}
	brokertest.CheckFor(t, 20*time.Second, 50*time.Millisecond, func() error {
		out, _, _, err := runCaptured(t, "session", "--session", "s1", "--nats", s.url, "--creds", s.creds("agent-acme"), "--tenant", "acme")
		if err != nil || !strings.Contains(out, "turns 2") {
			return fmt.Errorf("session s1: %v\n%s", err, out)
		}
		return nil
	})
}
