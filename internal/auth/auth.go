// Package auth is agentmem's tenancy model on NATS: which account each credential lives in, what
// it may publish and subscribe to, and the credentials (NKeys) of each role, rendered as a
// nats-server accounts block.
//
// # The model: a service account and one account per tenant
//
// The service account (AGENTMEM) holds JetStream, every stream and bucket, the workers, the
// operator and the admin. Each tenant's agents are users of that tenant's own account
// (TENANT_<tenant>), which holds nothing but imports of what the service account exports:
//
//   - memory.turns.<tenant>.* — a service import of the service account's
//     memory.intake.<tenant>.*, where ingest admits turns (no stream captures the intake);
//   - memory.retrieve.<tenant>, memory.forget.<tenant> — service imports;
//   - memory.pressure.<tenant>.>, memory.summaries.<tenant>.>, memory.facts.<tenant>.> — stream
//     imports.
//
// Why accounts: permissions on subjects stop an agent from publishing where it may not, but not
// a deputy that publishes where the agent asks (a reply subject). Across an import the server
// replaces the agent's reply subject with one of its own (_R_.…) that leads back into the
// agent's account only, so no service and no JetStream acknowledgement can be made to publish
// into the service account or another tenant's. Admission then scopes deduplication ids to
// the subject's tenant and session and drops every Nats-* header an agent set (package ingest).
//
// Inside its account an agent is still held to its own subjects (publish memory.turns.T.*,
// memory.retrieve.T, memory.forget.T; subscribe to T's events and its inboxes), so a mistake is
// refused with a permissions violation instead of vanishing.
//
// Cost: a tenant is an account with six imports and a user entry per agent credential (~1.5 KB
// of configuration). For many thousands of tenants use decentralised JWT auth, where the same
// accounts are account JWTs fetched from a resolver when first used (see docs/security.md).
package auth

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nats-io/nkeys"

	"github.com/agentmem/agentmem/pkg/events"
)

// Role is what a credential is for.
type Role string

// The roles.
const (
	RoleAgent    Role = "agent"
	RoleWorker   Role = "worker"
	RoleOperator Role = "operator"
	RoleAdmin    Role = "admin"
)

// Permissions are a user's subject permissions.
type Permissions struct {
	PublishAllow   []string `json:"publish_allow"`
	SubscribeAllow []string `json:"subscribe_allow"`
	AllowResponses bool     `json:"allow_responses"`
	All            bool     `json:"all,omitempty"`
}

// InboxPrefix is a reply-inbox prefix tenant's agents may use ("_INBOX_<tenant>", from the
// one-account model; the default _INBOX works as well, inboxes are per account now).
func InboxPrefix(tenant string) string { return "_INBOX_" + tenant }

// PermissionsFor returns the permissions of role (tenant only for agents).
func PermissionsFor(role Role, tenant string) (Permissions, error) {
	switch role {
	case RoleAgent:
		if err := events.ValidateToken("tenant", tenant); err != nil {
			return Permissions{}, err
		}
		return Permissions{
			PublishAllow: []string{"memory.turns." + tenant + ".*", "memory.retrieve." + tenant, "memory.forget." + tenant},
			SubscribeAllow: []string{"memory.pressure." + tenant + ".>", "memory.summaries." + tenant + ".>",
				"memory.facts." + tenant + ".>", "_INBOX.>", InboxPrefix(tenant) + ".>"},
		}, nil
	case RoleWorker:
		return Permissions{
			PublishAllow:   []string{"$JS.API.>", "$JS.ACK.>", "$JS.FC.>", "$KV.>", "memory.>", "$SRV.>"},
			SubscribeAllow: []string{"memory.>", "_INBOX.>", "$SRV.>", "$JS.EVENT.ADVISORY.>"},
			AllowResponses: true,
		}, nil
	case RoleOperator:
		return Permissions{
			PublishAllow: []string{"$JS.API.INFO", "$JS.API.STREAM.NAMES", "$JS.API.STREAM.LIST", "$JS.API.STREAM.INFO.>",
				"$JS.API.CONSUMER.NAMES.>", "$JS.API.CONSUMER.LIST.>", "$JS.API.CONSUMER.INFO.>", "$SRV.>"},
			SubscribeAllow: []string{"_INBOX.>"},
		}, nil
	case RoleAdmin:
		return Permissions{All: true}, nil
	}
	return Permissions{}, fmt.Errorf("auth: unknown role %q (agent, worker, operator, admin)", role)
}

// User is one credential of the configuration.
type User struct {
	Name   string `json:"name"`
	Role   Role   `json:"role"`
	Tenant string `json:"tenant,omitempty"`
	NKey   string `json:"nkey"` // public key
}

// Store is a directory of credentials: users.json (public: names, roles, tenants, public keys),
// auth.conf (the rendered nats-server authorization, included by the server config) and one
// seed file per user under creds/ (secret, mode 0600).
type Store struct {
	Dir   string
	Users []User
}

// ErrExists is returned when adding a user whose name is taken.
var ErrExists = errors.New("auth: user exists")

// Open reads the store in dir (empty when there is none yet).
func Open(dir string) (*Store, error) {
	s := &Store{Dir: dir}
	data, err := os.ReadFile(filepath.Join(dir, "users.json"))
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, &s.Users); err != nil {
		return nil, fmt.Errorf("reading %s: %w", filepath.Join(dir, "users.json"), err)
	}
	return s, nil
}

// SeedFile is where a user's seed is written.
func (s *Store) SeedFile(name string) string { return filepath.Join(s.Dir, "creds", name+".nk") }

// Add creates a user with a new NKey, writes its seed file and saves the store.
func (s *Store) Add(name string, role Role, tenant string) (User, error) {
	if err := events.ValidateToken("name", name); err != nil {
		return User{}, err
	}
	if _, err := PermissionsFor(role, tenant); err != nil {
		return User{}, err
	}
	if slices.ContainsFunc(s.Users, func(u User) bool { return u.Name == name }) {
		return User{}, fmt.Errorf("%w: %q", ErrExists, name)
	}
	kp, err := nkeys.CreateUser()
	if err != nil {
		return User{}, err
	}
	pub, err := kp.PublicKey()
	if err != nil {
		return User{}, err
	}
	seed, err := kp.Seed()
	if err != nil {
		return User{}, err
	}
	if err := os.MkdirAll(filepath.Join(s.Dir, "creds"), 0o700); err != nil {
		return User{}, err
	}
	if err := os.WriteFile(s.SeedFile(name), append(seed, '\n'), 0o600); err != nil {
		return User{}, err
	}
	u := User{Name: name, Role: role, Tenant: tenant, NKey: pub}
	s.Users = append(s.Users, u)
	return u, s.Save()
}

// Remove deletes a user (revoking the credential once the server reloads auth.conf).
func (s *Store) Remove(name string) error {
	i := slices.IndexFunc(s.Users, func(u User) bool { return u.Name == name })
	if i < 0 {
		return fmt.Errorf("auth: no user %q", name)
	}
	s.Users = slices.Delete(s.Users, i, i+1)
	_ = os.Remove(s.SeedFile(name))
	return s.Save()
}

// Save writes users.json and auth.conf.
func (s *Store) Save() error {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return err
	}
	data, err := json.MarshalIndent(s.Users, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(s.Dir, "users.json"), data, 0o600); err != nil {
		return err
	}
	conf, err := Render(s.Users)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(s.Dir, "auth.conf"), []byte(conf), 0o600)
}

// ServiceAccount is the NATS account of the service: JetStream, every stream and bucket, the
// workers, the operator and the admin. Agents are never in it.
const ServiceAccount = "AGENTMEM"

// AccountName is the NATS account of tenant's agents ("TENANT_<tenant>"; the prefix keeps a
// tenant named like a reserved account, $SYS or AGENTMEM, apart from it).
func AccountName(tenant string) string { return "TENANT_" + tenant }

// Exports are what the service account offers the tenant accounts: the intake, retrieve and
// forget services (requests) and the pressure, summary and fact events (streams).
var exports = []struct{ kind, subject string }{
	{"service", "memory.intake.*.*"},
	{"service", "memory.retrieve.*"},
	{"service", "memory.forget.*"},
	{"stream", "memory.pressure.*.>"},
	{"stream", "memory.summaries.*.>"},
	{"stream", "memory.facts.*.>"},
}

// imports are what tenant's account imports from the service account. The agent's
// memory.turns.<tenant>.<session> is the service account's memory.intake.<tenant>.<session>.
func imports(tenant string) []string {
	svc := func(subject, to string) string {
		s := fmt.Sprintf("{ service: { account: %q, subject: %q }", ServiceAccount, subject)
		if to != "" {
			s += fmt.Sprintf(", to: %q", to)
		}
		return s + " }"
	}
	stream := func(subject string) string {
		return fmt.Sprintf("{ stream: { account: %q, subject: %q } }", ServiceAccount, subject)
	}
	return []string{
		svc("memory.intake."+tenant+".*", "memory.turns."+tenant+".*"),
		svc("memory.retrieve."+tenant, ""),
		svc("memory.forget."+tenant, ""),
		stream("memory.pressure." + tenant + ".>"),
		stream("memory.summaries." + tenant + ".>"),
		stream("memory.facts." + tenant + ".>"),
	}
}

// Render writes the nats-server accounts block for users: the service account (JetStream, the
// workers, operators and admins, and its exports) and one account per tenant holding that
// tenant's agents and its imports. A reply subject an agent chooses is one of its own account:
// the server routes every answer of the service back into the requester's account, so neither
// a service nor JetStream can be made to publish into the service account or another tenant's.
func Render(users []User) (string, error) {
	var b strings.Builder
	b.WriteString("# Generated by memctl auth: agentmem's accounts, users and their subject permissions.\n")
	b.WriteString("accounts {\n")
	fmt.Fprintf(&b, "  %s {\n    jetstream: enabled\n    users: [\n", ServiceAccount)
	tenants := map[string][]User{}
	var order []string
	for _, u := range users {
		if u.Role == RoleAgent {
			if _, ok := tenants[u.Tenant]; !ok {
				order = append(order, u.Tenant)
			}
			tenants[u.Tenant] = append(tenants[u.Tenant], u)
			continue
		}
		if err := renderUser(&b, u); err != nil {
			return "", err
		}
	}
	b.WriteString("    ]\n    exports: [\n")
	for _, e := range exports {
		fmt.Fprintf(&b, "      { %s: %q }\n", e.kind, e.subject)
	}
	b.WriteString("    ]\n  }\n")
	slices.Sort(order)
	for _, t := range order {
		fmt.Fprintf(&b, "  # tenant %s\n  %s {\n    users: [\n", t, AccountName(t))
		for _, u := range tenants[t] {
			if err := renderUser(&b, u); err != nil {
				return "", err
			}
		}
		b.WriteString("    ]\n    imports: [\n")
		for _, imp := range imports(t) {
			fmt.Fprintf(&b, "      %s\n", imp)
		}
		b.WriteString("    ]\n  }\n")
	}
	b.WriteString("}\n")
	return b.String(), nil
}

func renderUser(b *strings.Builder, u User) error {
	p, err := PermissionsFor(u.Role, u.Tenant)
	if err != nil {
		return err
	}
	fmt.Fprintf(b, "      # %s (%s", u.Name, u.Role)
	if u.Tenant != "" {
		fmt.Fprintf(b, " of tenant %s", u.Tenant)
	}
	b.WriteString(")\n")
	if p.All {
		fmt.Fprintf(b, "      { nkey: %q }\n", u.NKey)
		return nil
	}
	fmt.Fprintf(b, "      { nkey: %q, permissions: { publish: { allow: %s }, subscribe: { allow: %s }", u.NKey, list(p.PublishAllow), list(p.SubscribeAllow))
	if p.AllowResponses {
		b.WriteString(", allow_responses: true")
	}
	b.WriteString(" } }\n")
	return nil
}

func list(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// ServerConfig writes a complete nats-server configuration that includes auth.conf, with TLS
// when certificate files are given: what memoryd reads with --nats-config.
func ServerConfig(authConf, certFile, keyFile, caFile string) string {
	var b strings.Builder
	b.WriteString("# agentmem server configuration (memoryd --nats-config); auth.conf holds the users.\n")
	fmt.Fprintf(&b, "include %q\n", authConf)
	if certFile != "" {
		fmt.Fprintf(&b, "tls {\n  cert_file: %q\n  key_file: %q\n", certFile, keyFile)
		if caFile != "" {
			fmt.Fprintf(&b, "  ca_file: %q\n", caFile)
		}
		b.WriteString("  timeout: 2\n}\n")
	}
	return b.String()
}

// RandomName is a short random suffix for generated user names.
func RandomName(prefix string) string {
	var r [4]byte
	_, _ = rand.Read(r[:])
	return prefix + "-" + hex.EncodeToString(r[:])
}
