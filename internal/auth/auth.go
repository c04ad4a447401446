// Package auth is agentmem's tenancy model on NATS: which account each credential lives in, what
// it may publish and subscribe to, and the credentials of each role, in NATS's decentralised
// (operator, JWT) mode: an operator, a system account, the service account and one account per
// tenant, each an account JWT the server reads from its resolver, and one user JWT (a .creds
// file) per credential.
//
// # The model: a service account and one account per tenant
//
// The service account (AGENTMEM) holds JetStream, every stream and bucket, the workers, the
// operator and the admin. Each tenant's agents are users of that tenant's own account
// (TENANT_<tenant>), which holds nothing but imports of what the service account exports:
//
//   - memory.turns.<tenant>.* — a service import of the service account's
//     memory.intake.<tenant>.*, where ingest admits turns (no stream captures the intake);
//   - memory.retrieve.<tenant>, memory.forget.<tenant>, memory.session.<tenant> — service imports
//     (memory.session answers a session's short-term state: memctl session with an agent's
//     credentials);
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
// memory.retrieve.T, memory.forget.T, memory.session.T; subscribe to T's events and its
// inboxes), so a mistake is refused with a permissions violation instead of vanishing.
//
// Why JWTs rather than an accounts block in the server configuration: a tenant added to a
// configuration file needs a reload, and nats-server does not set up the imports of an account
// that a reload introduces (nor keep the existing accounts' JetStream API imports in place during
// the reload: requests and pull requests are lost for a moment). An account JWT is loaded when its
// first user connects, through the code path the server uses for every JWT account, and a reload
// that leaves an account's JWT as it was leaves the account alone: the store re-signs a JWT only
// when its claims change.
//
// Cost: a tenant is an account JWT (~1 KB) in the resolver and a user JWT per agent credential
// that only its holder keeps; the server holds an account in memory once it has been used.
package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/jwt/v2"
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
			PublishAllow: []string{"memory.turns." + tenant + ".*", "memory.retrieve." + tenant, "memory.forget." + tenant, "memory.session." + tenant},
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

// ServiceAccount is the NATS account of the service: JetStream, every stream and bucket, the
// workers, the operator and the admin. Agents are never in it.
const ServiceAccount = "AGENTMEM"

// AccountName is the NATS account of tenant's agents ("TENANT_<tenant>"; the prefix keeps a
// tenant named like a reserved account, $SYS or AGENTMEM, apart from it).
func AccountName(tenant string) string { return "TENANT_" + tenant }

// exports are what the service account offers the tenant accounts: the intake, retrieve, forget
// and session services (requests) and the pressure, summary and fact events (streams).
var exports = []struct {
	typ     jwt.ExportType
	subject string
}{
	{jwt.Service, "memory.intake.*.*"},
	{jwt.Service, "memory.retrieve.*"},
	{jwt.Service, "memory.forget.*"},
	{jwt.Service, "memory.session.*"},
	{jwt.Stream, "memory.pressure.*.>"},
	{jwt.Stream, "memory.summaries.*.>"},
	{jwt.Stream, "memory.facts.*.>"},
}

// tenantImport is one import of a tenant's account: its subject in the service account and, when
// it differs, its subject in the tenant's.
type tenantImport struct {
	typ            jwt.ExportType
	subject, local string
}

// imports are what tenant's account imports from the service account. The agent's
// memory.turns.<tenant>.<session> is the service account's memory.intake.<tenant>.<session>.
func imports(tenant string) []tenantImport {
	return []tenantImport{
		{jwt.Service, "memory.intake." + tenant + ".*", "memory.turns." + tenant + ".*"},
		{jwt.Service, "memory.retrieve." + tenant, ""},
		{jwt.Service, "memory.forget." + tenant, ""},
		{jwt.Service, "memory.session." + tenant, ""},
		{jwt.Stream, "memory.pressure." + tenant + ".>", ""},
		{jwt.Stream, "memory.summaries." + tenant + ".>", ""},
		{jwt.Stream, "memory.facts." + tenant + ".>", ""},
	}
}

// User is one credential of the store.
type User struct {
	Name   string `json:"name"`
	Role   Role   `json:"role"`
	Tenant string `json:"tenant,omitempty"`
	NKey   string `json:"nkey"` // the user's public key
}

// revocation is a removed credential: its account refuses the user from then on.
type revocation struct {
	Account string    `json:"account"` // account name
	NKey    string    `json:"nkey"`
	At      time.Time `json:"at"`
}

// signed is an account's (or the operator's) JWT and the hash of the claims it was made from, so
// that an unchanged account keeps its JWT (and the server leaves it alone on a reload).
type signed struct {
	Hash string `json:"hash"`
	JWT  string `json:"jwt"`
}

// secrets are the store's signing keys (NKey seeds) and its signed JWTs: keys.json, mode 0600.
type secrets struct {
	Operator string            `json:"operator"`
	Accounts map[string]string `json:"accounts"` // account name → seed
	Revoked  []revocation      `json:"revoked,omitempty"`
	Signed   map[string]signed `json:"signed,omitempty"` // account name (or "operator") → JWT
}

// Store is a directory of credentials: users.json (public: names, roles, tenants, public keys),
// keys.json (secret: the operator's and the accounts' seeds), auth.conf (the operator, the system
// account and the account JWTs, included by the server config) and one .creds file per user under
// creds/ (secret, mode 0600).
type Store struct {
	Dir   string
	Users []User
	sec   secrets
}

// ErrExists is returned when adding a user whose name is taken.
var ErrExists = errors.New("auth: user exists")

// systemAccount names the server's system account.
const systemAccount = "SYS"

// Open reads the store in dir (empty when there is none yet). It fails on a store written before
// the JWT model (users without keys.json).
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
	data, err = os.ReadFile(filepath.Join(dir, "keys.json"))
	switch {
	case errors.Is(err, os.ErrNotExist) && len(s.Users) > 0:
		return nil, fmt.Errorf("%s has users but no keys.json: it was written by an older memctl (NKey users); start a new directory with memctl auth init and add the credentials again", dir)
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, err
	default:
		if err := json.Unmarshal(data, &s.sec); err != nil {
			return nil, fmt.Errorf("reading %s: %w", filepath.Join(dir, "keys.json"), err)
		}
	}
	return s, nil
}

// CredsFile is where a user's credentials (its user JWT and seed) are written: clients connect
// with nats.UserCredentials(file), memctl and the workers with --creds.
func (s *Store) CredsFile(name string) string { return filepath.Join(s.Dir, "creds", name+".creds") }

func seedKey(seed *string, create func() (nkeys.KeyPair, error)) (nkeys.KeyPair, error) {
	if *seed != "" {
		return nkeys.FromSeed([]byte(*seed))
	}
	kp, err := create()
	if err != nil {
		return nil, err
	}
	b, err := kp.Seed()
	if err != nil {
		return nil, err
	}
	*seed = string(b)
	return kp, nil
}

// accountKey returns the signing key of account name, creating it on first use.
func (s *Store) accountKey(name string) (nkeys.KeyPair, error) {
	if s.sec.Accounts == nil {
		s.sec.Accounts = map[string]string{}
	}
	seed := s.sec.Accounts[name]
	kp, err := seedKey(&seed, nkeys.CreateAccount)
	s.sec.Accounts[name] = seed
	return kp, err
}

// AccountKey returns the public key of account name (its identity in the server, and the name of
// its JetStream directory), if the store has that account.
func (s *Store) AccountKey(name string) (string, bool) {
	seed, ok := s.sec.Accounts[name]
	if !ok {
		return "", false
	}
	kp, err := nkeys.FromSeed([]byte(seed))
	if err != nil {
		return "", false
	}
	pub, err := kp.PublicKey()
	return pub, err == nil
}

// accountOf is the account a user of role and tenant belongs to.
func accountOf(role Role, tenant string) string {
	if role == RoleAgent {
		return AccountName(tenant)
	}
	return ServiceAccount
}

// Add creates a user with a new NKey, writes its .creds file (a user JWT signed by its account,
// with the role's permissions) and saves the store.
func (s *Store) Add(name string, role Role, tenant string) (User, error) {
	if err := events.ValidateToken("name", name); err != nil {
		return User{}, err
	}
	p, err := PermissionsFor(role, tenant)
	if err != nil {
		return User{}, err
	}
	if slices.ContainsFunc(s.Users, func(u User) bool { return u.Name == name }) {
		return User{}, fmt.Errorf("%w: %q", ErrExists, name)
	}
	acc, err := s.accountKey(accountOf(role, tenant))
	if err != nil {
		return User{}, err
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
	uc := jwt.NewUserClaims(pub)
	uc.Name = name
	if !p.All {
		uc.Pub.Allow.Add(p.PublishAllow...)
		uc.Sub.Allow.Add(p.SubscribeAllow...)
		if p.AllowResponses {
			uc.Resp = &jwt.ResponsePermission{MaxMsgs: 1}
		}
	}
	token, err := uc.Encode(acc)
	if err != nil {
		return User{}, fmt.Errorf("signing the user JWT of %q: %w", name, err)
	}
	creds, err := jwt.FormatUserConfig(token, seed)
	if err != nil {
		return User{}, err
	}
	if err := os.MkdirAll(filepath.Join(s.Dir, "creds"), 0o700); err != nil {
		return User{}, err
	}
	if err := os.WriteFile(s.CredsFile(name), creds, 0o600); err != nil {
		return User{}, err
	}
	u := User{Name: name, Role: role, Tenant: tenant, NKey: pub}
	s.Users = append(s.Users, u)
	return u, s.Save()
}

// Remove deletes a user: its account revokes it, so the server refuses it (and closes its
// connections) once it has reloaded auth.conf.
func (s *Store) Remove(name string) error {
	i := slices.IndexFunc(s.Users, func(u User) bool { return u.Name == name })
	if i < 0 {
		return fmt.Errorf("auth: no user %q", name)
	}
	u := s.Users[i]
	s.Users = slices.Delete(s.Users, i, i+1)
	// Revocations cover JWTs issued up to and including their time (seconds).
	s.sec.Revoked = append(s.sec.Revoked, revocation{Account: accountOf(u.Role, u.Tenant), NKey: u.NKey, At: time.Now().UTC().Add(time.Second)})
	_ = os.Remove(s.CredsFile(name))
	return s.Save()
}

// Save writes users.json, keys.json and auth.conf.
func (s *Store) Save() error {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return err
	}
	conf, err := s.render()
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(s.Users, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(s.Dir, "users.json"), data, 0o600); err != nil {
		return err
	}
	keys, err := json.MarshalIndent(s.sec, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(s.Dir, "keys.json"), keys, 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(s.Dir, "auth.conf"), []byte(conf), 0o600)
}

// encoder is a claim that signs itself.
type encoder interface {
	Encode(nkeys.KeyPair) (string, error)
}

// sign returns the JWT of claims signed with key: the one signed before when the claims have not
// changed since, so that the server sees the same JWT and leaves the account alone.
func (s *Store) sign(name string, claims encoder, key nkeys.KeyPair) (string, error) {
	data, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	hash := hex.EncodeToString(sum[:])
	if prev, ok := s.sec.Signed[name]; ok && prev.Hash == hash {
		return prev.JWT, nil
	}
	token, err := claims.Encode(key)
	if err != nil {
		return "", fmt.Errorf("signing the JWT of %s: %w", name, err)
	}
	if s.sec.Signed == nil {
		s.sec.Signed = map[string]signed{}
	}
	s.sec.Signed[name] = signed{Hash: hash, JWT: token}
	return token, nil
}

// render writes auth.conf: the operator, the system account and every account JWT, preloaded
// into the server's memory resolver.
func (s *Store) render() (string, error) {
	op, err := seedKey(&s.sec.Operator, nkeys.CreateOperator)
	if err != nil {
		return "", err
	}
	opPub, err := op.PublicKey()
	if err != nil {
		return "", err
	}
	accounts := []string{systemAccount, ServiceAccount}
	var tenants []string
	names := make([]string, 0, len(s.Users)+len(s.sec.Revoked))
	for _, u := range s.Users {
		names = append(names, accountOf(u.Role, u.Tenant))
	}
	for _, r := range s.sec.Revoked {
		names = append(names, r.Account) // an account stays while it must refuse a removed user
	}
	for _, name := range names {
		if !slices.Contains(accounts, name) && !slices.Contains(tenants, name) {
			tenants = append(tenants, name)
		}
	}
	slices.Sort(tenants)
	accounts = append(accounts, tenants...)
	pubs := map[string]string{}
	for _, name := range accounts {
		kp, err := s.accountKey(name)
		if err != nil {
			return "", err
		}
		if pubs[name], err = kp.PublicKey(); err != nil {
			return "", err
		}
	}
	oc := jwt.NewOperatorClaims(opPub)
	oc.Name = "agentmem"
	oc.SystemAccount = pubs[systemAccount]
	opJWT, err := s.sign("operator", oc, op)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("# Generated by memctl auth: agentmem's operator and accounts (JWTs) with their imports and exports.\n")
	fmt.Fprintf(&b, "operator: %q\nsystem_account: %q\nresolver: MEMORY\nresolver_preload: {\n", opJWT, pubs[systemAccount])
	for _, name := range accounts {
		ac := jwt.NewAccountClaims(pubs[name])
		ac.Name = name
		switch name {
		case systemAccount:
		case ServiceAccount:
			ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: jwt.NoLimit, DiskStorage: jwt.NoLimit, Streams: jwt.NoLimit, Consumer: jwt.NoLimit}
			for _, e := range exports {
				ac.Exports.Add(&jwt.Export{Name: e.subject, Subject: jwt.Subject(e.subject), Type: e.typ})
			}
		default:
			for _, imp := range imports(strings.TrimPrefix(name, "TENANT_")) {
				ac.Imports.Add(&jwt.Import{Name: imp.subject, Account: pubs[ServiceAccount], Subject: jwt.Subject(imp.subject),
					LocalSubject: jwt.RenamingSubject(imp.local), Type: imp.typ})
			}
		}
		for _, r := range s.sec.Revoked {
			if r.Account == name {
				ac.RevokeAt(r.NKey, r.At)
			}
		}
		token, err := s.sign(name, ac, op)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "  # %s\n  %s: %q\n", name, pubs[name], token)
	}
	b.WriteString("}\n")
	return b.String(), nil
}

// ServerConfig writes a complete nats-server configuration that includes auth.conf, with TLS
// when certificate files are given: what memoryd reads with --nats-config.
func ServerConfig(authConf, certFile, keyFile, caFile string) string {
	var b strings.Builder
	b.WriteString("# agentmem server configuration (memoryd --nats-config); auth.conf holds the operator and the accounts.\n")
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
