package auth

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
)

func newStore(t *testing.T) *Store {
	t.Helper()
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []struct {
		name   string
		role   Role
		tenant string
	}{{"worker", RoleWorker, ""}, {"admin", RoleAdmin, ""}, {"agent-a", RoleAgent, "a"}, {"agent-b", RoleAgent, "b"}} {
		if _, err := s.Add(u.name, u.role, u.tenant); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// The rendered configuration is one nats-server accepts: an operator, the system account and
// the account JWTs of the service and of each tenant, with the model's imports and exports.
func TestRenderIsAServerConfig(t *testing.T) {
	s := newStore(t)
	conf := filepath.Join(s.Dir, "server.conf")
	if err := os.WriteFile(conf, []byte(ServerConfig("auth.conf", "", "", "")), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(conf)
	if err != nil {
		t.Fatalf("nats-server refuses the configuration: %v", err)
	}
	if len(opts.TrustedOperators) != 1 || opts.SystemAccount == "" {
		t.Fatalf("operator mode not configured: %d operators, system account %q", len(opts.TrustedOperators), opts.SystemAccount)
	}
	data, _ := os.ReadFile(filepath.Join(s.Dir, "auth.conf"))
	claims := map[string]*jwt.AccountClaims{}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if _, tok, ok := strings.Cut(line, ": \""); ok && strings.HasPrefix(line, "A") {
			ac, err := jwt.DecodeAccountClaims(strings.TrimSuffix(tok, "\""))
			if err != nil {
				t.Fatal(err)
			}
			claims[ac.Name] = ac
		}
	}
	for _, name := range []string{"SYS", ServiceAccount, AccountName("a"), AccountName("b")} {
		if claims[name] == nil {
			t.Fatalf("no account JWT named %s; have %v", name, claims)
		}
	}
	svc := claims[ServiceAccount]
	if svc.Limits.JetStreamLimits.DiskStorage != jwt.NoLimit || len(svc.Exports) != 7 {
		t.Fatalf("service account: JetStream %+v, %d exports", svc.Limits.JetStreamLimits, len(svc.Exports))
	}
	a := claims[AccountName("a")]
	if len(a.Imports) != 7 || a.Limits.JetStreamLimits.DiskStorage != 0 {
		t.Fatalf("tenant a: %d imports, JetStream %+v", len(a.Imports), a.Limits.JetStreamLimits)
	}
	// memory.session.a: memctl session with a's credentials reads a's sessions through it.
	var subjects []string
	for _, imp := range a.Imports {
		subjects = append(subjects, string(imp.Subject))
	}
	p, _ := PermissionsFor(RoleAgent, "a")
	if !slices.Contains(subjects, "memory.session.a") || !slices.Contains(p.PublishAllow, "memory.session.a") {
		t.Errorf("tenant a imports %v and its agents may publish to %v: want memory.session.a in both", subjects, p.PublishAllow)
	}
	for _, imp := range a.Imports {
		if !strings.Contains(string(imp.Subject), ".a.") && !strings.HasSuffix(string(imp.Subject), ".a") {
			t.Errorf("tenant a imports %s, a subject of another tenant", imp.Subject)
		}
		if imp.Account != svc.Subject {
			t.Errorf("tenant a imports from %s, not the service account", imp.Account)
		}
	}
}

// An account whose claims did not change keeps its JWT (so a reload leaves it alone); a removed
// credential changes its own account's JWT only.
func TestUnchangedAccountsKeepTheirJWT(t *testing.T) {
	s := newStore(t)
	before := s.sec.Signed
	snapshot := map[string]string{}
	for k, v := range before {
		snapshot[k] = v.JWT
	}
	if _, err := s.Add("agent-c", RoleAgent, "c"); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove("agent-b"); err != nil {
		t.Fatal(err)
	}
	for name, old := range snapshot {
		changed := s.sec.Signed[name].JWT != old
		if want := name == AccountName("b"); changed != want {
			t.Errorf("account %s: JWT changed=%v, want %v", name, changed, want)
		}
	}
	ac, err := jwt.DecodeAccountClaims(s.sec.Signed[AccountName("b")].JWT)
	if err != nil {
		t.Fatal(err)
	}
	if len(ac.Revocations) != 1 {
		t.Fatalf("b's account revokes %d users, want 1", len(ac.Revocations))
	}
	if _, err := os.Stat(s.CredsFile("agent-b")); !os.IsNotExist(err) {
		t.Errorf("the removed credential's file is still there: %v", err)
	}
	reopened, err := Open(s.Dir)
	if err != nil || len(reopened.Users) != 4 || reopened.sec.Signed[AccountName("c")].JWT == "" {
		t.Fatalf("reopened store: %v, %d users", err, len(reopened.Users))
	}
}

func TestOpenRefusesAnOldStore(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "users.json"), []byte(`[{"name":"w","role":"worker","nkey":"U..."}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "memctl auth init") {
		t.Fatalf("an old store: %v, want an error saying to start a new one", err)
	}
}

func TestAddRefusesBadInput(t *testing.T) {
	s := newStore(t)
	for _, tc := range []struct {
		name   string
		role   Role
		tenant string
	}{{"worker", RoleWorker, ""}, {"bad name", RoleAgent, "a"}, {"x", RoleAgent, "a.b"}, {"y", "root", ""}} {
		if _, err := s.Add(tc.name, tc.role, tc.tenant); err == nil {
			t.Errorf("Add(%q, %q, %q) was accepted", tc.name, tc.role, tc.tenant)
		}
	}
}
