// Package longterm is the long-term store: the facts and summaries of each user, kept across
// sessions in a JetStream KV bucket, and the index of each user's sessions.
//
// Keys (only [-/_=.a-zA-Z0-9] are allowed, so nothing is ever derived from raw text):
//
//	<tenant>.<user>.f.<fact id>      a fact (id derived from its normalised content)
//	<tenant>.<user>.k.<key id>       the slot of a stable key (user.city): which fact holds it
//	<tenant>.<user>.s.<summary id>   a summary (id derived from the turn ids it covers)
//	<tenant>.<user>.x.<session>      the session index
//	<tenant>.<user>.n.<entity id>    an entity of the user's graph (graph.go)
//	<tenant>.<user>.a.<entity id>    an alias: the entity of that id is another's other name
//	<tenant>.<user>.e.<edge id>      an edge (a relation between two entities), kept as a fact
//	<tenant>.<user>.r.<key id>       the slot of an edge's key: which edge holds it
//
// Every value names its owner (a fact and a summary their tenant, user and id, a session index
// entry its session and, written since, its tenant and user; a slot the key whose id it is
// under), and every read checks it against the key. A value that does not decode or names
// another owner is corrupt: it is reported (Instrument) and read as absent, a write replaces it
// (revision-checked) as if the key were free.
//
// Every write decides atomically by itself: a new fact or summary is a KV create on its derived
// key (two workers racing store it once), and a change to an existing record is a
// revision-checked update retried on conflict, so the result never depends on which worker won:
// the earliest timestamp is kept and provenance becomes the union.
package longterm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/internal/archive"
	"github.com/agentmem/agentmem/internal/fact"
	"github.com/agentmem/agentmem/internal/integrity"
	"github.com/agentmem/agentmem/pkg/events"
)

// Fact is a durable statement about a user.
type Fact struct {
	ID           string         `json:"id"`
	Tenant       string         `json:"tenant"`
	User         string         `json:"user"`
	Content      string         `json:"content"`
	Category     string         `json:"category"`
	Key          string         `json:"key,omitempty"`
	Tokens       int            `json:"tokens"`
	ValidFrom    time.Time      `json:"valid_from"`
	ValidTo      *time.Time     `json:"valid_to,omitempty"`
	SupersededBy string         `json:"superseded_by,omitempty"`
	Provenance   []string       `json:"provenance"`
	Sessions     []string       `json:"sessions,omitempty"`
	Confidence   float64        `json:"confidence"`
	Extractor    string         `json:"extractor"`
	Metadata     map[string]any `json:"metadata,omitempty"`
	Deleted      bool           `json:"deleted,omitempty"`
	// Version counts the fact's statements after an end: 1 (written as absent) for its first
	// statement, n+1 for the fact stated again after version n was superseded or deleted.
	// Restates is the id of version n.
	Version  int    `json:"version,omitempty"`
	Restates string `json:"restates,omitempty"`

	// StatedAt is the time of each provenance turn (a turn it lacks counts as stated at
	// ValidFrom; facts stored before it was kept have none).
	StatedAt map[string]time.Time `json:"stated_at,omitempty"`

	// Triple is set on an edge of the user's graph (AddEdge, graph.go): a fact about two
	// entities, stored under its own kind but kept, superseded and versioned as a fact.
	Triple *Triple `json:"triple,omitempty"`
}

// Live reports whether the fact is valid now (not superseded, not deleted).
func (f Fact) Live() bool { return f.ValidTo == nil && !f.Deleted }

// LiveAt reports whether the fact was valid at t.
func (f Fact) LiveAt(t time.Time) bool {
	if f.Deleted || f.ValidFrom.After(t) {
		return false
	}
	return f.ValidTo == nil || f.ValidTo.After(t)
}

// Event converts the fact to its wire form.
func (f Fact) Event() events.Fact {
	return events.Fact{
		ID: f.ID, Content: f.Content, Category: f.Category, Key: f.Key, ValidFrom: f.ValidFrom,
		ValidTo: f.ValidTo, SupersededBy: f.SupersededBy, Provenance: f.Provenance, Confidence: f.Confidence,
	}
}

// Summary is a summary kept in long-term memory.
type Summary struct {
	ID         string         `json:"id"`
	Tenant     string         `json:"tenant"`
	User       string         `json:"user"`
	Session    string         `json:"session"`
	Content    string         `json:"content"`
	Tokens     int            `json:"tokens"`
	Timestamp  time.Time      `json:"timestamp"`
	Replaces   []string       `json:"replaces"`
	Provenance []string       `json:"provenance"`
	Summarizer string         `json:"summarizer"`
	Usage      events.Usage   `json:"usage"`
	Metadata   map[string]any `json:"metadata,omitempty"`
}

// SessionRef is one entry of a user's session index. Tenant and User name its owner (entries
// written before they were added have neither; their key alone places them).
type SessionRef struct {
	Tenant  string    `json:"tenant,omitempty"`
	User    string    `json:"user,omitempty"`
	Session string    `json:"session"`
	First   time.Time `json:"first,omitzero"`
	Last    time.Time `json:"last,omitzero"`
	// ExtractedSeq is the turns-stream sequence up to which the session's facts were extracted.
	ExtractedSeq uint64 `json:"extracted_seq,omitempty"`
}

// slot records which fact holds a stable key.
type slot struct {
	Key       string    `json:"key"`
	FactID    string    `json:"fact_id"`
	ValidFrom time.Time `json:"valid_from"`
}

// ErrNotFound is returned for a record that does not exist.
var ErrNotFound = errors.New("longterm: not found")

// maxRetries bounds revision-conflict retries of one write.
const maxRetries = 50

// Store is the long-term store of one topology.
type Store struct {
	kv     jetstream.KeyValue
	js     jetstream.JetStream
	bucket string
	rep    *integrity.Reporter
}

// Open binds to the long-term bucket of topo, which must exist (events.Topology.Ensure).
func Open(ctx context.Context, js jetstream.JetStream, topo events.Topology) (*Store, error) {
	kv, err := events.BindBucket(ctx, js, topo.LongTermBucket())
	if err != nil {
		return nil, err
	}
	return &Store{kv: kv, js: js, bucket: topo.LongTermBucket()}, nil
}

// Instrument returns a copy of s that reports the corrupt values it reads to r.
func (s *Store) Instrument(r *integrity.Reporter) *Store {
	c := *s
	c.rep = r
	return &c
}

func userPrefix(tenant, user string) string { return tenant + "." + user + "." }

// Kinds of record, the third token of a key.
const (
	kindFact    = "f"
	kindSlot    = "k"
	kindSummary = "s"
	kindSession = "x"
	kindEntity  = "n"
	kindEdge    = "e"
	kindRelSlot = "r"
	kindAlias   = "a"
)

// temporal names the kinds of one temporal model's records: facts and their key slots, or
// edges and theirs. Both are kept, superseded and versioned by the same code (AddFact).
type temporal struct{ record, slot string }

var (
	factKinds = temporal{kindFact, kindSlot}
	edgeKinds = temporal{kindEdge, kindRelSlot}
)

// recordKey is the key of one record: its owner, kind and id.
type recordKey struct{ tenant, user, kind, id string }

func (k recordKey) String() string { return userPrefix(k.tenant, k.user) + k.kind + "." + k.id }

// FactKey is the KV key of a fact.
func FactKey(tenant, user, id string) string { return recordKey{tenant, user, kindFact, id}.String() }

// SummaryKey is the KV key of a summary.
func SummaryKey(tenant, user, id string) string {
	return recordKey{tenant, user, kindSummary, id}.String()
}

// SessionKey is the KV key of a session index entry.
func SessionKey(tenant, user, session string) string {
	return recordKey{tenant, user, kindSession, session}.String()
}

// Key is what a long-term key names: a record's owner, kind and id.
type Key struct {
	Tenant, User string
	// Kind is the record's kind token: "f" a fact, "s" a summary, "x" a session, "k" the slot of
	// a fact's stable key; of the graph (graph.go), "n" an entity, "a" an alias, "e" an edge and
	// "r" the slot of an edge's key.
	Kind string
	// ID is the record's id; it may hold dots.
	ID string
}

// ParseKey parses a long-term key, "<tenant>.<user>.<kind>.<id>" (FactKey, SummaryKey,
// SessionKey), as the bucket's watchers and listings see it. Its error wraps events.ErrInvalid
// and says what is wrong: the number of tokens, the tenant, the user, the kind or the id.
func ParseKey(key string) (Key, error) {
	parts := strings.SplitN(key, ".", 4)
	if len(parts) != 4 {
		return Key{}, fmt.Errorf("long-term key %q: %w", key,
			&events.FieldError{Message: "want <tenant>.<user>.<kind>.<id>"})
	}
	k := Key{Tenant: parts[0], User: parts[1], Kind: parts[2], ID: parts[3]}
	if err := events.ValidateToken("tenant", k.Tenant); err != nil {
		return Key{}, fmt.Errorf("long-term key %q: %w", key, err)
	}
	if err := events.ValidateToken("user", k.User); err != nil {
		return Key{}, fmt.Errorf("long-term key %q: %w", key, err)
	}
	switch k.Kind {
	case kindFact, kindSlot, kindSummary, kindSession, kindEntity, kindEdge, kindRelSlot, kindAlias:
	default:
		return Key{}, fmt.Errorf("long-term key %q: %w", key,
			&events.FieldError{Field: "kind", Message: fmt.Sprintf("%q is not one of f, k, s, x, n, a, e, r", k.Kind)})
	}
	if k.ID == "" {
		return Key{}, fmt.Errorf("long-term key %q: %w", key, &events.FieldError{Field: "id", Message: "must not be empty"})
	}
	return k, nil
}

// check reports whether the decoded record v (a *Fact, *Summary, *SessionRef or *slot) belongs
// under k; nil when it does.
func (s *Store) check(k recordKey, v any) *integrity.Error {
	key := k.String()
	var pairs [][3]string // field, got, want
	switch r := v.(type) {
	case *Fact:
		pairs = [][3]string{{integrity.Tenant, r.Tenant, k.tenant}, {integrity.User, r.User, k.user}, {integrity.ID, r.ID, k.id}}
		if (k.kind == kindEdge) != (r.Triple != nil) {
			return integrity.Undecoded(s.bucket, key, errors.New("an edge needs its triple, a fact has none"))
		}
	case *Entity:
		pairs = [][3]string{{integrity.Tenant, r.Tenant, k.tenant}, {integrity.User, r.User, k.user}, {integrity.ID, r.ID, k.id}}
	case *Alias:
		pairs = [][3]string{{integrity.Tenant, r.Tenant, k.tenant}, {integrity.User, r.User, k.user}, {integrity.ID, r.ID, k.id}}
	case *Summary:
		pairs = [][3]string{{integrity.Tenant, r.Tenant, k.tenant}, {integrity.User, r.User, k.user}, {integrity.ID, r.ID, k.id}}
	case *SessionRef:
		pairs = [][3]string{{integrity.Session, r.Session, k.id}}
		if r.Tenant != "" || r.User != "" {
			pairs = append(pairs, [3]string{integrity.Tenant, r.Tenant, k.tenant}, [3]string{integrity.User, r.User, k.user})
		}
	case *slot:
		pairs = [][3]string{{integrity.ID, fact.KeyID(k.tenant, k.user, r.Key), k.id}}
	}
	for _, p := range pairs {
		if cerr := integrity.Mismatch(s.bucket, key, p[0], p[1], p[2]); cerr != nil {
			return cerr
		}
	}
	return nil
}

// decode decodes and checks the value of k.
func (s *Store) decode(k recordKey, data []byte, v any) *integrity.Error {
	if err := json.Unmarshal(data, v); err != nil {
		return integrity.Undecoded(s.bucket, k.String(), err)
	}
	return s.check(k, v)
}

// get reads the record at k into v. A corrupt value comes back as cerr, with its revision; err
// is ErrNotFound or a failure to read.
func (s *Store) get(ctx context.Context, k recordKey, v any) (rev uint64, cerr *integrity.Error, err error) {
	key := k.String()
	e, err := s.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return 0, nil, ErrNotFound
	}
	if err != nil {
		return 0, nil, fmt.Errorf("reading %q: %w", key, err)
	}
	return e.Revision(), s.decode(k, e.Value(), v), nil
}

// read reads the record at k into v for a reader: a corrupt value is reported and reads as
// absent (an error matching both ErrNotFound and integrity.ErrCorrupt).
func (s *Store) read(ctx context.Context, k recordKey, v any) error {
	_, cerr, err := s.get(ctx, k, v)
	if err != nil {
		return err
	}
	if cerr != nil {
		s.rep.Report(cerr)
		return fmt.Errorf("%w: %w", ErrNotFound, cerr)
	}
	return nil
}

// outcome is what update did.
type outcome int

const (
	unchanged outcome = iota
	created
	changed
)

// update applies change to the record at k atomically: create when absent (init), else a
// revision-checked update, retried on conflict. change reports whether it changed anything. A
// corrupt record counts as absent: init replaces it, revision-checked.
func update[T any](ctx context.Context, s *Store, k recordKey, init func() (T, bool), change func(*T) bool) (T, outcome, error) {
	var zero T
	key := k.String()
	for range maxRetries {
		var cur T
		rev, cerr, err := s.get(ctx, k, &cur)
		if cerr != nil {
			s.rep.Report(cerr)
		}
		switch {
		case errors.Is(err, ErrNotFound) || cerr != nil:
			v, ok := init()
			if !ok {
				if cerr != nil {
					return zero, unchanged, fmt.Errorf("%w: %w", ErrNotFound, cerr)
				}
				return zero, unchanged, ErrNotFound
			}
			data, err := json.Marshal(v)
			if err != nil {
				return zero, unchanged, err
			}
			if cerr != nil {
				_, err = s.kv.Update(ctx, key, data, rev)
			} else {
				_, err = s.kv.Create(ctx, key, data)
			}
			if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
				continue
			} else if err != nil {
				return zero, unchanged, fmt.Errorf("creating %q: %w", key, err)
			}
			return v, created, nil
		case err != nil:
			return zero, unchanged, err
		}
		if !change(&cur) {
			return cur, unchanged, nil
		}
		data, err := json.Marshal(cur)
		if err != nil {
			return zero, unchanged, err
		}
		if _, err := s.kv.Update(ctx, key, data, rev); errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) {
			continue
		} else if err != nil {
			return zero, unchanged, fmt.Errorf("updating %q: %w", key, err)
		}
		return cur, changed, nil
	}
	return zero, unchanged, fmt.Errorf("updating %q: too many concurrent writers", key)
}

// PutSummary stores a summary once (a second put of the same id changes nothing) and reports
// whether it was new.
func (s *Store) PutSummary(ctx context.Context, sum Summary) (bool, error) {
	_, out, err := update(ctx, s, recordKey{sum.Tenant, sum.User, kindSummary, sum.ID},
		func() (Summary, bool) { return sum, true },
		func(*Summary) bool { return false })
	return out == created, err
}

// Summary reads one summary.
func (s *Store) Summary(ctx context.Context, tenant, user, id string) (Summary, error) {
	var sum Summary
	err := s.read(ctx, recordKey{tenant, user, kindSummary, id}, &sum)
	return sum, err
}

// Fact reads one fact.
func (s *Store) Fact(ctx context.Context, tenant, user, id string) (Fact, error) {
	var f Fact
	err := s.read(ctx, recordKey{tenant, user, kindFact, id}, &f)
	return f, err
}

// TouchSession records that user has session, seen between first and last.
func (s *Store) TouchSession(ctx context.Context, tenant, user, session string, first, last time.Time) error {
	_, _, err := update(ctx, s, recordKey{tenant, user, kindSession, session},
		func() (SessionRef, bool) {
			return SessionRef{Tenant: tenant, User: user, Session: session, First: first, Last: last}, true
		},
		func(r *SessionRef) bool {
			changed := r.owned(tenant, user)
			if r.First.IsZero() || first.Before(r.First) {
				r.First, changed = first, true
			}
			if last.After(r.Last) {
				r.Last, changed = last, true
			}
			return changed
		})
	return err
}

// SessionRef reads one entry of a user's session index.
func (s *Store) SessionRef(ctx context.Context, tenant, user, session string) (SessionRef, error) {
	var r SessionRef
	err := s.read(ctx, recordKey{tenant, user, kindSession, session}, &r)
	return r, err
}

// owned fills in the owner of an entry written before SessionRef named it; it reports whether
// it did.
func (r *SessionRef) owned(tenant, user string) bool {
	if r.Tenant != "" {
		return false
	}
	r.Tenant, r.User = tenant, user
	return true
}

// MarkExtracted records that the session's facts were extracted up to seq (it never goes back).
func (s *Store) MarkExtracted(ctx context.Context, tenant, user, session string, seq uint64) error {
	_, _, err := update(ctx, s, recordKey{tenant, user, kindSession, session},
		func() (SessionRef, bool) {
			return SessionRef{Tenant: tenant, User: user, Session: session, ExtractedSeq: seq}, true
		},
		func(r *SessionRef) bool {
			changed := r.owned(tenant, user)
			if seq <= r.ExtractedSeq {
				return changed
			}
			r.ExtractedSeq = seq
			return true
		})
	return err
}

// FactChange is what AddFact did.
type FactChange struct {
	// Added is true when the fact was new: its first statement, or a new version of a fact that
	// was superseded or deleted and is stated again (Fact.Restates names the version before).
	Added bool
	// Fact is the stored fact after the change.
	Fact Fact
	// Superseded lists the facts this one replaced (their valid_to and superseded_by set).
	Superseded []Fact
	// SupersededBy is set when the new fact is older than the live fact of its key: it went
	// straight into the history.
	SupersededBy string
	// Restated are the changes of a fact that ended here (Fact, or one of Superseded) but had
	// been stated again after its end: that restatement is stored as its next version.
	Restated []FactChange
}

// maxVersions bounds the versions of one fact AddFact walks through (a fact stated, replaced
// and stated again that many times).
const maxVersions = 256

// VersionID is the id of the version of a fact that follows version id: the fact stated again
// after version id was superseded or deleted. It is derived from id alone, so every worker (and
// a replay) that sees the same restatement stores it under the same key.
func VersionID(id string) string {
	sum := sha256.Sum256([]byte("restated\x00" + id))
	return "fact_" + hex.EncodeToString(sum[:16])
}

// AddFact stores a fact once: a new fact is created; the same fact (same id, i.e. the same
// normalised content) stated again while it holds keeps its earliest valid_from and gains the
// union of the provenance. A fact with a key supersedes the live fact of that key when it is
// newer, or goes into the history when it is older, so the outcome does not depend on the order
// of arrival.
//
// A fact stated again after it ended (superseded by another fact of its key, or deleted) is
// valid again from that statement on: the statements made after the end are stored as the
// fact's next version (id VersionID of the ended one, Restates naming it), which supersedes
// whatever holds the key then. Statements made while a version held are merged into that
// version. f.StatedAt gives each provenance turn's time; without it every turn counts as
// stated at f.ValidFrom.
func (s *Store) AddFact(ctx context.Context, f Fact) (FactChange, error) {
	if f.Triple != nil {
		return FactChange{}, fmt.Errorf("fact %q: %w", f.ID, errTripleInFact)
	}
	return s.add(ctx, factKinds, f)
}

// add is AddFact for the records of tk.
func (s *Store) add(ctx context.Context, tk temporal, f Fact) (FactChange, error) {
	var ch FactChange
	f.StatedAt = f.statedOf(f.Provenance)
	for range maxVersions {
		var next *Fact
		stored, out, err := update(ctx, s, recordKey{f.Tenant, f.User, tk.record, f.ID},
			func() (Fact, bool) { next = nil; return f, true },
			func(cur *Fact) bool {
				during, after := f.splitAt(cur.ValidTo)
				next = nil
				if after != nil {
					after.ID, after.Restates, after.Version = VersionID(cur.ID), cur.ID, cur.version()+1
					next = after
				}
				return during != nil && cur.merge(*during)
			})
		if err != nil {
			return ch, err
		}
		if next != nil {
			f = *next
			continue
		}
		ch.Added, ch.Fact = out == created, stored
		if f.Key == "" || stored.Deleted {
			return ch, nil
		}
		return s.settleKey(ctx, tk, stored, ch)
	}
	return ch, fmt.Errorf("storing fact %q: more than %d versions", f.ID, maxVersions)
}

// statedOf returns the times of StatedAt of the turns in prov (nil when it has none of them).
func (f Fact) statedOf(prov []string) map[string]time.Time {
	var out map[string]time.Time
	for _, p := range prov {
		if at, ok := f.StatedAt[p]; ok {
			if out == nil {
				out = make(map[string]time.Time, len(prov))
			}
			out[p] = at
		}
	}
	return out
}

// restateLate stores the statements of x, a fact that has just ended (superseded), made after
// its end as x's next version (AddFact), which supersedes whatever holds the key then:
// a restatement that was stored before the fact it restates against (extractions out of
// order). It returns nil when x has no such statement.
func (s *Store) restateLate(ctx context.Context, tk temporal, x Fact) (*FactChange, error) {
	if x.ValidTo == nil || x.Deleted {
		return nil, nil
	}
	var late []string
	for _, p := range x.Provenance {
		if at, ok := x.StatedAt[p]; ok && at.After(*x.ValidTo) {
			late = append(late, p)
		}
	}
	if len(late) == 0 {
		return nil, nil
	}
	again := Fact{
		ID: x.ID, Tenant: x.Tenant, User: x.User, Content: x.Content, Category: x.Category, Key: x.Key,
		Tokens: x.Tokens, ValidFrom: *x.ValidTo, Provenance: late, StatedAt: x.statedOf(late), Sessions: x.Sessions,
		Confidence: x.Confidence, Extractor: x.Extractor, Metadata: x.Metadata, Triple: x.Triple,
	}
	ch, err := s.add(ctx, tk, again)
	if err != nil {
		return nil, err
	}
	return &ch, nil
}

// version is the fact's version number: 1 for its first statement.
func (f Fact) version() int { return max(f.Version, 1) }

// splitAt splits f's statements at end, the end of the stored version they would join: those
// made up to end (all of them when end is nil) and those made after it, each with its own
// provenance and earliest time; nil for a part with no statement. A fact that names no turn (a
// correction) is one statement at its ValidFrom. A statement made at the very instant its fact
// ended (turns of one session often share a time) belongs to the version that ended: the fact
// that ended it was stated at that instant too and won the tie, and a new version there would be
// ended by the same fact again, without end.
func (f Fact) splitAt(end *time.Time) (during, after *Fact) {
	if end == nil {
		return &f, nil
	}
	if len(f.Provenance) == 0 {
		if !f.ValidFrom.After(*end) {
			return &f, nil
		}
		return nil, &f
	}
	for _, p := range f.Provenance {
		at, ok := f.StatedAt[p]
		if !ok {
			at = f.ValidFrom
		}
		part := &during
		if at.After(*end) {
			part = &after
		}
		if *part == nil {
			c := f
			c.Provenance, c.ValidFrom, c.StatedAt = nil, at, nil
			*part = &c
		}
		if t, ok := f.StatedAt[p]; ok {
			if (*part).StatedAt == nil {
				(*part).StatedAt = map[string]time.Time{}
			}
			(*part).StatedAt[p] = t
		}
		(*part).Provenance = append((*part).Provenance, p)
		if at.Before((*part).ValidFrom) {
			(*part).ValidFrom = at
		}
	}
	return during, after
}

// merge folds the statement st into f (the same fact): the earliest valid_from, the union of
// provenance and sessions, the highest confidence. It reports whether f changed.
func (f *Fact) merge(st Fact) bool {
	changed := false
	if st.ValidFrom.Before(f.ValidFrom) {
		f.ValidFrom, changed = st.ValidFrom, true
	}
	for _, p := range st.Provenance {
		if !slices.Contains(f.Provenance, p) {
			f.Provenance, changed = append(f.Provenance, p), true
		}
		if at, ok := st.StatedAt[p]; ok {
			if old, had := f.StatedAt[p]; !had || at.Before(old) {
				if f.StatedAt == nil {
					f.StatedAt = map[string]time.Time{}
				}
				f.StatedAt[p], changed = at, true
			}
		}
	}
	for _, p := range st.Sessions {
		if !slices.Contains(f.Sessions, p) {
			f.Sessions, changed = append(f.Sessions, p), true
		}
	}
	if st.Confidence > f.Confidence {
		f.Confidence, changed = st.Confidence, true
	}
	return changed
}

// settleKey makes the slot of f's key point at the newest fact and marks the others superseded.
func (s *Store) settleKey(ctx context.Context, tk temporal, f Fact, ch FactChange) (FactChange, error) {
	key := recordKey{f.Tenant, f.User, tk.slot, fact.KeyID(f.Tenant, f.User, f.Key)}
	var previous string
	newer := func(a, b slot) bool {
		return a.ValidFrom.After(b.ValidFrom) || (a.ValidFrom.Equal(b.ValidFrom) && a.FactID > b.FactID)
	}
	mine := slot{Key: f.Key, FactID: f.ID, ValidFrom: f.ValidFrom}
	cur, _, err := update(ctx, s, key,
		func() (slot, bool) { return mine, true },
		func(sl *slot) bool {
			previous = ""
			if sl.FactID == f.ID || !newer(mine, *sl) {
				return false
			}
			previous = sl.FactID
			*sl = mine
			return true
		})
	if err != nil {
		return ch, err
	}
	if cur.FactID != f.ID {
		// A newer fact holds the key: this one is history.
		marked, err := s.supersede(ctx, tk, f.Tenant, f.User, f.ID, cur.FactID, cur.ValidFrom)
		if err != nil {
			return ch, err
		}
		ch.Fact, ch.SupersededBy = marked, cur.FactID
		return s.restated(ctx, tk, marked, ch)
	}
	if previous != "" {
		old, err := s.supersede(ctx, tk, f.Tenant, f.User, previous, f.ID, f.ValidFrom)
		if err != nil {
			return ch, err
		}
		ch.Superseded = append(ch.Superseded, old)
		return s.restated(ctx, tk, old, ch)
	}
	return ch, nil
}

// restated adds to ch the change restateLate makes of ended, the fact ch just ended.
func (s *Store) restated(ctx context.Context, tk temporal, ended Fact, ch FactChange) (FactChange, error) {
	again, err := s.restateLate(ctx, tk, ended)
	if err != nil || again == nil {
		return ch, err
	}
	ch.Restated = append(ch.Restated, *again)
	return ch, nil
}

// supersede marks fact id as replaced by newID from validTo on.
func (s *Store) supersede(ctx context.Context, tk temporal, tenant, user, id, newID string, validTo time.Time) (Fact, error) {
	f, _, err := update(ctx, s, recordKey{tenant, user, tk.record, id},
		func() (Fact, bool) { return Fact{}, false },
		func(cur *Fact) bool {
			if cur.SupersededBy == newID && cur.ValidTo != nil && cur.ValidTo.Equal(validTo) {
				return false
			}
			t := validTo
			cur.ValidTo, cur.SupersededBy = &t, newID
			return true
		})
	return f, err
}

// DeleteFact marks one fact deleted (it stays in the history, no longer live); ErrNotFound when
// there is no such fact.
func (s *Store) DeleteFact(ctx context.Context, tenant, user, id string, at time.Time) (Fact, bool, error) {
	f, out, err := update(ctx, s, recordKey{tenant, user, kindFact, id},
		func() (Fact, bool) { return Fact{}, false },
		func(cur *Fact) bool {
			if cur.Deleted {
				return false
			}
			t := at
			cur.Deleted, cur.ValidTo = true, &t
			return true
		})
	return f, out == changed, err
}

// UserRecords are everything long-term memory holds of one user.
type UserRecords struct {
	Facts     []Fact
	Summaries []Summary
	Sessions  []SessionRef
	// The user's graph (graph.go): entities, the aliases folding one name into another, and
	// edges with their history.
	Entities []Entity
	Aliases  []Alias
	Edges    []Fact
}

// User reads every record of a user (facts with their history, summaries, sessions, the graph), in one
// batched read of the bucket's stream. Corrupt records are reported and left out.
func (s *Store) User(ctx context.Context, tenant, user string) (UserRecords, error) {
	var out UserRecords
	reader := archive.NewReader(s.js, "KV_"+s.bucket)
	prefix := "$KV." + s.bucket + "." + userPrefix(tenant, user)
	latest := map[string][]byte{}
	var order []string
	err := reader.Scan(ctx, prefix+">", 1, 0, func(m *jetstream.RawStreamMsg) error {
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
		return out, err
	}
	for _, subj := range order {
		data, ok := latest[subj]
		if !ok {
			continue
		}
		kind, id, ok := strings.Cut(subj[len(prefix):], ".")
		if !ok || id == "" {
			continue
		}
		k := recordKey{tenant, user, kind, id}
		var cerr *integrity.Error
		switch kind {
		case kindFact:
			var f Fact
			if cerr = s.decode(k, data, &f); cerr == nil {
				out.Facts = append(out.Facts, f)
			}
		case kindSummary:
			var sum Summary
			if cerr = s.decode(k, data, &sum); cerr == nil {
				out.Summaries = append(out.Summaries, sum)
			}
		case kindSession:
			var r SessionRef
			if cerr = s.decode(k, data, &r); cerr == nil {
				out.Sessions = append(out.Sessions, r)
			}
		case kindEntity:
			var e Entity
			if cerr = s.decode(k, data, &e); cerr == nil {
				out.Entities = append(out.Entities, e)
			}
		case kindAlias:
			var a Alias
			if cerr = s.decode(k, data, &a); cerr == nil {
				out.Aliases = append(out.Aliases, a)
			}
		case kindEdge:
			var e Fact
			if cerr = s.decode(k, data, &e); cerr == nil {
				out.Edges = append(out.Edges, e)
			}
		}
		s.rep.Report(cerr)
	}
	return out, nil
}

// Forget removes every record of a user, history included (a purge of the bucket's stream by
// the user's key prefix, not a delete marker), and returns how many messages it removed.
func (s *Store) Forget(ctx context.Context, tenant, user string) (uint64, error) {
	stream, err := s.js.Stream(ctx, "KV_"+s.bucket)
	if err != nil {
		return 0, fmt.Errorf("binding the long-term stream: %w", err)
	}
	subject := "$KV." + s.bucket + "." + userPrefix(tenant, user) + ">"
	info, err := stream.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		return 0, fmt.Errorf("counting %s: %w", subject, err)
	}
	var n uint64
	for _, c := range info.State.Subjects {
		n += c
	}
	if err := stream.Purge(ctx, jetstream.WithPurgeSubject(subject)); err != nil {
		return 0, fmt.Errorf("purging %s: %w", subject, err)
	}
	return n, nil
}

// Reset removes a user's facts, stable-key slots, session index and graph (entities, aliases,
// edges and their relation slots), history included, so that a replay of the user's sessions
// rebuilds them (package recovery, after an unclean stop). The user's summaries stay: a
// summary's id is derived from the turns it covers, so the replay's compression of those turns
// finds it and asks no model again. It returns how many messages it removed.
func (s *Store) Reset(ctx context.Context, tenant, user string) (uint64, error) {
	var n uint64
	for _, kind := range []string{kindFact, kindSlot, kindSession, kindEntity, kindAlias, kindEdge, kindRelSlot} {
		m, err := archive.PurgeKV(ctx, s.js, s.bucket, userPrefix(tenant, user)+kind+".>")
		if err != nil {
			return n, err
		}
		n += m
	}
	return n, nil
}

// ErrSameContent is returned by Correct for a correction that states the fact as it is.
var ErrSameContent = errors.New("longterm: the correction states the fact as it is")

// Correct replaces a fact by one with new content, stated at at: the new fact (same category and
// key, provenance the old one's) supersedes the old one, which stays in the history. Content
// equal to the fact's own after normalising is ErrSameContent: the fact would supersede itself.
func (s *Store) Correct(ctx context.Context, tenant, user, oldID, newID, content string, tokens int, at time.Time) (Fact, Fact, error) {
	old, err := s.Fact(ctx, tenant, user, oldID)
	if err != nil {
		return Fact{}, Fact{}, err
	}
	if fact.Normalize(old.Content) == fact.Normalize(content) {
		return Fact{}, Fact{}, fmt.Errorf("fact %q: %w", oldID, ErrSameContent)
	}
	nf := Fact{
		ID: newID, Tenant: tenant, User: user, Content: content, Category: old.Category, Key: old.Key,
		Tokens: tokens, ValidFrom: at, Provenance: old.Provenance, Sessions: old.Sessions, Confidence: 1,
		Extractor: "correction",
	}
	ch, err := s.AddFact(ctx, nf)
	if err != nil {
		return Fact{}, Fact{}, err
	}
	marked, err := s.supersede(ctx, factKinds, tenant, user, oldID, newID, at)
	if err != nil {
		return Fact{}, Fact{}, err
	}
	return ch.Fact, marked, nil
}
