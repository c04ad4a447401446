// Package usage records what LLM calls cost, durably, per session and tenant: a KV bucket with
// one counter per session (key "<tenant>.<session>"), incremented with revision-checked updates,
// and a report summed per tenant.
//
// A counter names its tenant and session (counters written before they did have neither; their
// key alone places them). A counter that does not decode or names another session than its key
// is corrupt: it is reported (Instrument) and left out of reports; the next Add starts it again.
package usage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/internal/archive"
	"github.com/agentmem/agentmem/internal/integrity"
	"github.com/agentmem/agentmem/pkg/events"
	"github.com/agentmem/agentmem/pkg/memory"
)

// Store is the usage bucket.
type Store struct {
	kv     jetstream.KeyValue
	js     jetstream.JetStream
	bucket string
	rep    *integrity.Reporter
}

// counter is the stored value of one session's usage.
type counter struct {
	Tenant  string `json:"tenant,omitempty"`
	Session string `json:"session,omitempty"`
	memory.Usage
}

// decode decodes and checks the counter stored under tenant.session.
func (s *Store) decode(tenant, session string, data []byte) (memory.Usage, *integrity.Error) {
	key := tenant + "." + session
	var c counter
	if err := json.Unmarshal(data, &c); err != nil {
		return memory.Usage{}, integrity.Undecoded(s.bucket, key, err)
	}
	if c.Tenant != "" || c.Session != "" {
		if cerr := integrity.Mismatch(s.bucket, key, integrity.Tenant, c.Tenant, tenant); cerr != nil {
			return memory.Usage{}, cerr
		}
		if cerr := integrity.Mismatch(s.bucket, key, integrity.Session, c.Session, session); cerr != nil {
			return memory.Usage{}, cerr
		}
	}
	return c.Usage, nil
}

// Instrument returns a copy of s that reports the corrupt counters it reads to r.
func (s *Store) Instrument(r *integrity.Reporter) *Store {
	c := *s
	c.rep = r
	return &c
}

// Open binds to the usage bucket of topo, which must exist (events.Topology.Ensure).
func Open(ctx context.Context, js jetstream.JetStream, topo events.Topology) (*Store, error) {
	kv, err := events.BindBucket(ctx, js, topo.UsageBucket())
	if err != nil {
		return nil, err
	}
	return &Store{kv: kv, js: js, bucket: topo.UsageBucket()}, nil
}

// Add adds u to the session's counter. A corrupt counter is reported and started again from u.
func (s *Store) Add(ctx context.Context, tenant, session string, u memory.Usage) error {
	key := tenant + "." + session
	for range 50 {
		e, err := s.kv.Get(ctx, key)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			data, _ := json.Marshal(counter{Tenant: tenant, Session: session, Usage: u})
			if _, err := s.kv.Create(ctx, key, data); errors.Is(err, jetstream.ErrKeyExists) {
				continue
			} else if err != nil {
				return fmt.Errorf("recording usage of %s: %w", key, err)
			}
			return nil
		case err != nil:
			return fmt.Errorf("reading usage of %s: %w", key, err)
		}
		cur, cerr := s.decode(tenant, session, e.Value())
		if cerr != nil {
			s.rep.Report(cerr)
		}
		data, _ := json.Marshal(counter{Tenant: tenant, Session: session, Usage: cur.Add(u)})
		if _, err := s.kv.Update(ctx, key, data, e.Revision()); errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) {
			continue
		} else if err != nil {
			return fmt.Errorf("recording usage of %s: %w", key, err)
		}
		return nil
	}
	return fmt.Errorf("recording usage of %s: too many concurrent writers", key)
}

// Report sums the usage of one tenant ("" for every tenant), per session and tenant. Corrupt
// counters are reported and left out.
func (s *Store) Report(ctx context.Context, tenant string) (memory.UsageReport, error) {
	ledger := memory.NewUsageLedger()
	subject := "$KV." + s.bucket + ".>"
	if tenant != "" {
		subject = "$KV." + s.bucket + "." + tenant + ".>"
	}
	latest := map[string][]byte{}
	err := archive.NewReader(s.js, "KV_"+s.bucket).Scan(ctx, subject, 1, 0, func(m *jetstream.RawStreamMsg) error {
		if archive.KVRemoved(m) {
			delete(latest, m.Subject)
			return nil
		}
		latest[m.Subject] = m.Data
		return nil
	})
	if err != nil {
		return memory.UsageReport{}, err
	}
	keys := make([]string, 0, len(latest))
	for k := range latest {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		t, sess, ok := strings.Cut(strings.TrimPrefix(k, "$KV."+s.bucket+"."), ".")
		if !ok {
			continue
		}
		u, cerr := s.decode(t, sess, latest[k])
		if cerr != nil {
			s.rep.Report(cerr)
			continue
		}
		ledger.Record(t, sess, u)
	}
	return ledger.Report(), nil
}

// Forget removes the usage counters of the given sessions of a tenant, history included (a purge
// of the bucket's stream, not a purge marker).
func (s *Store) Forget(ctx context.Context, tenant string, sessions []string) error {
	for _, sess := range sessions {
		if _, err := archive.PurgeKV(ctx, s.js, s.bucket, tenant+"."+sess); err != nil {
			return err
		}
	}
	return nil
}
