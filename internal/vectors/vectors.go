// Package vectors is the vector store: the embeddings of turns, summaries and facts, one per entry
// and embedding model, in a JetStream KV bucket (events.Topology.VectorBucket) under the entry's
// tenant and user and the model. A summary's or a fact's vector has a value of its own (Key), the
// turns' vectors are written several to a value, a pack per user and batch (PackKey, packs.go),
// and a backfill's completion marker says a model has a vector of every entry (MarkerKey,
// markers.go). Every value read is checked against its key; forget purges a user's vectors of
// every model, history included (Store.Forget).
//
// The embedding stage (package embedder) writes the vectors; retrievers read them and hold them
// in memory (package vector is that in-memory index); forget removes them. It is a package of its
// own, beside the session, long-term and usage stores, so that none of those stages imports
// another.
package vectors

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/internal/archive"
	"github.com/agentmem/agentmem/internal/integrity"
	"github.com/agentmem/agentmem/internal/wire"
	"github.com/agentmem/agentmem/pkg/events"
)

// Kinds of entries a vector belongs to.
const (
	KindTurn    byte = 't'
	KindSummary byte = 's'
	KindFact    byte = 'f'
)

// Vector is one stored embedding: the entry it belongs to (tenant, user, id, kind), the model that
// made it, and its components quantised to int8 with one scale (component i is Q[i]·Scale).
type Vector struct {
	Tenant, User, Model, ID string
	Kind                    byte
	Scale                   float32
	Q                       []int8
}

// Float32 returns the vector's components.
func (v Vector) Float32() []float32 {
	out := make([]float32, len(v.Q))
	for i, q := range v.Q {
		out[i] = float32(q) * v.Scale
	}
	return out
}

// Quantize returns vec as int8 components and their scale (the largest magnitude maps to 127).
func Quantize(vec []float32) ([]int8, float32) {
	var m float64
	for _, x := range vec {
		m = max(m, math.Abs(float64(x)))
	}
	q := make([]int8, len(vec))
	if m == 0 || math.IsNaN(m) || math.IsInf(m, 0) {
		return q, 0
	}
	scale := m / 127
	for i, x := range vec {
		q[i] = int8(math.Round(float64(x) / scale))
	}
	return q, float32(scale)
}

// ModelToken is the key token of an embedding model's name: "m" and 16 hex digits of its SHA-256
// (names hold ':' and '/', which keys cannot).
func ModelToken(model string) string {
	sum := sha256.Sum256([]byte(model))
	return "m" + hex.EncodeToString(sum[:8])
}

var plainID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,200}$`)

// EntryToken is the key token of an entry id: the id itself when it is made of letters, digits,
// '-' and '_' (UUIDs, derived ids), else '=' and its unpadded base64url form.
func EntryToken(id string) string {
	if plainID.MatchString(id) {
		return id
	}
	return "=" + base64.RawURLEncoding.EncodeToString([]byte(id))
}

// Key is the bucket key of the vector of entry id of (tenant, user) made by model.
func Key(tenant, user, model, id string) string {
	return tenant + "." + user + "." + ModelToken(model) + "." + EntryToken(id)
}

// Ref is what a vector key names: the entry's owner, the model's token (ModelToken) and the
// entry's token (EntryToken).
type Ref struct {
	Tenant, User string
	Model        string
	Entry        string
	// Pack is the pack id of a pack key (PackKey), whose entries are in its value; Entry is
	// empty then.
	Pack string
}

// ID returns the entry id the key's entry token stands for; ok is false when the token is not
// one EntryToken makes.
func (k Ref) ID() (id string, ok bool) { return EntryID(k.Entry) }

// ParseKey parses a vector key, "<tenant>.<user>.<model token>.<entry token>" (Key), or a pack
// key, "<tenant>.<user>.<model token>.p.<pack id>" (PackKey), as the bucket's watchers and
// listings see it. A completion marker's key (MarkerKey) is neither. Its error wraps
// events.ErrInvalid and says what is wrong: the number of tokens, the tenant, the user, the model,
// the entry or the pack.
func ParseKey(key string) (Ref, error) {
	parts := strings.Split(key, ".")
	var k Ref
	switch {
	case len(parts) == 4:
		k = Ref{Tenant: parts[0], User: parts[1], Model: parts[2], Entry: parts[3]}
	case len(parts) == 5 && parts[3] == packToken:
		if parts[4] == "" {
			return Ref{}, fmt.Errorf("vector key %q: %w", key, &events.FieldError{Field: "pack", Message: "must not be empty"})
		}
		k = Ref{Tenant: parts[0], User: parts[1], Model: parts[2], Pack: parts[4]}
	default:
		return Ref{}, fmt.Errorf("vector key %q: %w", key,
			&events.FieldError{Message: "want <tenant>.<user>.<model>.<entry> or <tenant>.<user>.<model>.p.<pack>"})
	}
	if err := events.ValidateToken("tenant", k.Tenant); err != nil {
		return Ref{}, fmt.Errorf("vector key %q: %w", key, err)
	}
	if err := events.ValidateToken("user", k.User); err != nil {
		return Ref{}, fmt.Errorf("vector key %q: %w", key, err)
	}
	if k.Model == "" {
		return Ref{}, fmt.Errorf("vector key %q: %w", key, &events.FieldError{Field: "model", Message: "must not be empty"})
	}
	if k.Entry == "" && k.Pack == "" {
		return Ref{}, fmt.Errorf("vector key %q: %w", key, &events.FieldError{Field: "entry", Message: "must not be empty"})
	}
	return k, nil
}

// UserFilter is the key filter of every vector of a user (all models).
func UserFilter(tenant, user string) string { return tenant + "." + user + ".>" }

// ModelFilter is the key filter of a user's vectors made by model.
func ModelFilter(tenant, user, model string) string {
	return tenant + "." + user + "." + ModelToken(model) + ".>"
}

const (
	codecMagic   = 'V'
	codecVersion = 1
	encodingInt8 = 1
)

// Encode is the stored form of v: a header naming its owner, model and entry (checked against
// the key on every read), then the int8 components with their scale. A 1536-dimensional vector
// takes 1536 bytes plus its header.
func Encode(v Vector) []byte {
	b := make([]byte, 0, 16+len(v.Tenant)+len(v.User)+len(v.Model)+len(v.ID)+len(v.Q))
	b = append(b, codecMagic, codecVersion, encodingInt8, v.Kind)
	for _, s := range []string{v.Tenant, v.User, v.Model, v.ID} {
		b = wire.AppendText(b, s)
	}
	return appendComponents(b, v)
}

// appendComponents appends v's dimension, scale and int8 components (the end of a vector's value,
// and of each vector of a pack).
func appendComponents(b []byte, v Vector) []byte {
	b = binary.AppendUvarint(b, uint64(len(v.Q)))
	b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v.Scale))
	for _, q := range v.Q {
		b = append(b, byte(q))
	}
	return b
}

// readComponents reads what appendComponents wrote into v.
func readComponents(r *wire.Reader, v *Vector) {
	dim := r.Uvarint()
	if s := r.Bytes(4); s != nil {
		v.Scale = math.Float32frombits(binary.LittleEndian.Uint32(s))
	}
	q := r.Bytes(dim)
	if r.Err() != nil {
		return
	}
	v.Q = make([]int8, dim)
	for i, x := range q {
		v.Q[i] = int8(x)
	}
}

var errShort = errors.New("vectors: truncated vector value")

// Decode reads a value written by Encode.
func Decode(b []byte) (Vector, error) {
	var v Vector
	if len(b) < 4 || b[0] != codecMagic {
		return v, errors.New("vectors: not a vector value")
	}
	if b[1] != codecVersion || b[2] != encodingInt8 {
		return v, fmt.Errorf("vectors: vector value version %d encoding %d unknown", b[1], b[2])
	}
	v.Kind = b[3]
	r := wire.NewReader(b[4:])
	v.Tenant, v.User, v.Model, v.ID = r.Text(), r.Text(), r.Text(), r.Text()
	readComponents(r, &v)
	if r.Err() != nil || r.Len() != 0 {
		return v, errShort
	}
	return v, nil
}

// Store is the vector bucket: single vectors, packs and completion markers.
type Store struct {
	kv     jetstream.KeyValue
	js     jetstream.JetStream
	bucket string
	rep    *integrity.Reporter
	// batches: the bucket allows atomic batches (not when persisted lazily,
	// events.Topology.Lazy, where a write syncs nothing).
	batches bool
}

// Open binds the topology's vector bucket, which must exist (events.Topology.Ensure).
func Open(ctx context.Context, js jetstream.JetStream, topo events.Topology) (*Store, error) {
	kv, err := events.BindBucket(ctx, js, topo.VectorBucket())
	if err != nil {
		return nil, err
	}
	st, err := kv.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading bucket %q: %w", topo.VectorBucket(), err)
	}
	bs, ok := st.(*jetstream.KeyValueBucketStatus)
	return &Store{kv: kv, js: js, bucket: topo.VectorBucket(), batches: ok && bs.StreamInfo().Config.AllowAtomicPublish}, nil
}

// Instrument returns a copy of s that reports the corrupt values it reads.
func (s *Store) Instrument(r *integrity.Reporter) *Store {
	c := *s
	c.rep = r
	return &c
}

// Bucket names the bucket.
func (s *Store) Bucket() string { return s.bucket }

// Has reports whether the entry has a vector of model.
func (s *Store) Has(ctx context.Context, tenant, user, model, id string) (bool, error) {
	key := Key(tenant, user, model, id)
	e, err := s.kv.Get(ctx, key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading %s: %w", key, err)
	}
	_, cerr := s.Check(key, e.Value())
	s.rep.Report(cerr)
	return cerr == nil, nil
}

// Put stores v once: a vector already stored under its key is kept (a vector is a function of
// the entry's text and the model, so a second one would be the same).
func (s *Store) Put(ctx context.Context, v Vector) error {
	key := Key(v.Tenant, v.User, v.Model, v.ID)
	_, err := s.kv.Create(ctx, key, Encode(v))
	if err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
		return fmt.Errorf("storing %s: %w", key, err)
	}
	return nil
}

// Check decodes the value of key and compares the owner, model and entry it names with the key;
// a mismatch or an undecodable value is corrupt.
func (s *Store) Check(key string, data []byte) (Vector, *integrity.Error) {
	v, err := Decode(data)
	if err != nil {
		return v, integrity.Undecoded(s.bucket, key, err)
	}
	k, err := ParseKey(key)
	if err != nil {
		return v, integrity.Undecoded(s.bucket, key, err)
	}
	if e := integrity.Mismatch(s.bucket, key, integrity.Tenant, v.Tenant, k.Tenant); e != nil {
		return v, e
	}
	if e := integrity.Mismatch(s.bucket, key, integrity.User, v.User, k.User); e != nil {
		return v, e
	}
	if e := integrity.Mismatch(s.bucket, key, integrity.ID, ModelToken(v.Model)+"."+EntryToken(v.ID), k.Model+"."+k.Entry); e != nil {
		return v, e
	}
	return v, nil
}

// Scan calls fn with every vector of (tenant, user) made by model, in one batched read of the
// bucket's stream. Corrupt values are reported and left out.
func (s *Store) Scan(ctx context.Context, tenant, user, model string, fn func(Vector)) error {
	return s.scan(ctx, ModelFilter(tenant, user, model), fn)
}

// ScanAll calls fn with every vector whose key matches filter ("acme.>", ">").
func (s *Store) ScanAll(ctx context.Context, filter string, fn func(Vector)) error {
	return s.scan(ctx, filter, fn)
}

func (s *Store) scan(ctx context.Context, filter string, fn func(Vector)) error {
	prefix := "$KV." + s.bucket + "."
	latest := map[string][]byte{}
	var order []string
	err := archive.NewReader(s.js, "KV_"+s.bucket).Scan(ctx, prefix+filter, 1, 0, func(m *jetstream.RawStreamMsg) error {
		if archive.KVRemoved(m) {
			delete(latest, m.Subject)
			return nil
		}
		if _, ok := latest[m.Subject]; !ok {
			order = append(order, m.Subject)
		}
		latest[m.Subject] = m.Data
		return nil
	})
	if err != nil {
		return fmt.Errorf("reading vectors %s: %w", filter, err)
	}
	for _, subj := range order {
		data, ok := latest[subj]
		if !ok {
			continue
		}
		key := strings.TrimPrefix(subj, prefix)
		if _, marker := IsMarkerKey(key); marker {
			continue
		}
		vs, cerr := s.Entries(key, data)
		if cerr != nil {
			s.rep.Report(cerr)
			continue
		}
		for _, v := range vs {
			fn(v)
		}
	}
	return nil
}

// Watch follows every vector written from now on (deletes and purges included, with a nil
// value); the caller stops it.
func (s *Store) Watch(ctx context.Context) (jetstream.KeyWatcher, error) {
	return s.kv.WatchAll(ctx, jetstream.UpdatesOnly())
}

// Forget removes every vector of a user, all models, history included, and returns how many
// vectors there were (a pack counts its vectors; corrupt values are not counted but removed).
func (s *Store) Forget(ctx context.Context, tenant, user string) (uint64, error) {
	var n uint64
	if err := s.scan(ctx, UserFilter(tenant, user), func(Vector) { n++ }); err != nil {
		return 0, err
	}
	if _, err := archive.PurgeKV(ctx, s.js, s.bucket, UserFilter(tenant, user)); err != nil {
		return 0, err
	}
	return n, nil
}

// EntryID is the entry id of a key token made by EntryToken.
func EntryID(token string) (string, bool) {
	if !strings.HasPrefix(token, "=") {
		return token, plainID.MatchString(token)
	}
	b, err := base64.RawURLEncoding.DecodeString(token[1:])
	return string(b), err == nil
}
