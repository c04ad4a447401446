// Package auth is agentmem's tenancy model on NATS: who may publish and subscribe to what, as a
// nats-server authorization block, and the credentials (NKeys) of each role.
//
// # The model: one account, per-tenant subject permissions
//
// Every credential is an NKey user of one NATS account (the one JetStream runs in). Isolation is
// enforced by the server through each user's subject permissions, never by client code:
//
//   - agent of tenant T: publish memory.turns.T.>, memory.retrieve.T, memory.forget.T; subscribe
//     memory.pressure.T.>, memory.summaries.T.>, memory.facts.T.> and its own reply inboxes
//     _INBOX_T.> (agents connect with that inbox prefix; the plain _INBOX.> of other users is
//     not theirs). No $JS.API, no $KV: no stream, bucket or consumer of anyone.
//   - worker: the JetStream and KV APIs, memory.> and the micro-service subjects, and responses
//     to requests it received (allow_responses), no agent inbox.
//   - operator: read-only stream and consumer information and service discovery (monitoring,
//     the acceptance tools' wait for ingestion).
//   - admin: everything (memctl for an operator, replays, forgets).
//
// The tenant of every request and turn is the subject's tenant token: the only one an agent can
// name. Workers reject a payload or CloudEvent attribute that names another tenant.
//
// Cost: a tenant is one user entry (or a few, one per agent credential) with 7 subject patterns;
// the server checks permissions with a per-connection cache, so 10, 1,000 or 100,000 tenants cost
// the same per message, and the configuration grows linearly (~0.5 KB per credential: ~50 MB of
// config at 100,000 tenants, where decentralised JWT auth — operator/account/user JWTs issued with
// nsc, the same permissions in each user JWT, nothing in the server config — is the better fit;
// see docs/security.md).
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

// InboxPrefix is the reply-inbox prefix of tenant's agents ("_INBOX_<tenant>"): connect with
// nats.CustomInboxPrefix(InboxPrefix(tenant)).
func InboxPrefix(tenant string) string { return "_INBOX_" + tenant }

// PermissionsFor returns the permissions of role (tenant only for agents).
func PermissionsFor(role Role, tenant string) (Permissions, error) {
	switch role {
	case RoleAgent:
		if err := events.ValidateToken("tenant", tenant); err != nil {
			return Permissions{}, err
		}
		return Permissions{
			PublishAllow: []string{"memory.turns." + tenant + ".>", "memory.retrieve." + tenant, "memory.forget." + tenant},
			SubscribeAllow: []string{"memory.pressure." + tenant + ".>", "memory.summaries." + tenant + ".>",
				"memory.facts." + tenant + ".>", InboxPrefix(tenant) + ".>"},
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

// Render writes the nats-server authorization block for users.
func Render(users []User) (string, error) {
	var b strings.Builder
	b.WriteString("# Generated by memctl auth: agentmem's users and their subject permissions.\n")
	b.WriteString("authorization {\n  users = [\n")
	for _, u := range users {
		p, err := PermissionsFor(u.Role, u.Tenant)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "    # %s (%s", u.Name, u.Role)
		if u.Tenant != "" {
			fmt.Fprintf(&b, " of tenant %s", u.Tenant)
		}
		b.WriteString(")\n")
		if p.All {
			fmt.Fprintf(&b, "    { nkey: %q }\n", u.NKey)
			continue
		}
		fmt.Fprintf(&b, "    { nkey: %q, permissions: { publish: { allow: %s }, subscribe: { allow: %s }", u.NKey, list(p.PublishAllow), list(p.SubscribeAllow))
		if p.AllowResponses {
			b.WriteString(", allow_responses: true")
		}
		b.WriteString(" } }\n")
	}
	b.WriteString("  ]\n}\n")
	return b.String(), nil
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
