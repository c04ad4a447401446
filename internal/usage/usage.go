// Package usage records what LLM calls cost, durably, per session and tenant: a KV bucket with
// one counter per session (key "<tenant>.<session>"), incremented with revision-checked updates,
// and a report summed per tenant.
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
	"github.com/agentmem/agentmem/pkg/events"
	"github.com/agentmem/agentmem/pkg/memory"
)

// Store is the usage bucket.
type Store struct {
	kv     jetstream.KeyValue
	js     jetstream.JetStream
	bucket string
}

// Open binds to the usage bucket of topo, which must exist (events.Topology.Ensure).
func Open(ctx context.Context, js jetstream.JetStream, topo events.Topology) (*Store, error) {
	kv, err := js.KeyValue(ctx, topo.UsageBucket())
	if err != nil {
		return nil, fmt.Errorf("binding bucket %q: %w", topo.UsageBucket(), err)
	}
	return &Store{kv: kv, js: js, bucket: topo.UsageBucket()}, nil
}

// Add adds u to the session's counter.
func (s *Store) Add(ctx context.Context, tenant, session string, u memory.Usage) error {
	key := tenant + "." + session
	for range 50 {
		var cur memory.Usage
		e, err := s.kv.Get(ctx, key)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			data, _ := json.Marshal(u)
			if _, err := s.kv.Create(ctx, key, data); errors.Is(err, jetstream.ErrKeyExists) {
				continue
			} else if err != nil {
				return fmt.Errorf("recording usage of %s: %w", key, err)
			}
			return nil
		case err != nil:
			return fmt.Errorf("reading usage of %s: %w", key, err)
		}
		if err := json.Unmarshal(e.Value(), &cur); err != nil {
			return fmt.Errorf("decoding usage of %s: %w", key, err)
		}
		data, _ := json.Marshal(cur.Add(u))
		if _, err := s.kv.Update(ctx, key, data, e.Revision()); errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) {
			continue
		} else if err != nil {
			return fmt.Errorf("recording usage of %s: %w", key, err)
		}
		return nil
	}
	return fmt.Errorf("recording usage of %s: too many concurrent writers", key)
}

// Report sums the usage of one tenant ("" for every tenant), per session and tenant.
func (s *Store) Report(ctx context.Context, tenant string) (memory.UsageReport, error) {
	ledger := memory.NewUsageLedger()
	subject := "$KV." + s.bucket + ".>"
	if tenant != "" {
		subject = "$KV." + s.bucket + "." + tenant + ".>"
	}
	latest := map[string][]byte{}
	err := archive.NewReader(s.js, "KV_"+s.bucket).Scan(ctx, subject, 1, 0, func(m *jetstream.RawStreamMsg) error {
		if op := m.Header.Get("KV-Operation"); op == "DEL" || op == "PURGE" {
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
		var u memory.Usage
		if json.Unmarshal(latest[k], &u) != nil {
			continue
		}
		t, sess, ok := strings.Cut(strings.TrimPrefix(k, "$KV."+s.bucket+"."), ".")
		if !ok {
			continue
		}
		ledger.Record(t, sess, u)
	}
	return ledger.Report(), nil
}

// Forget removes the usage counters of the given sessions of a tenant.
func (s *Store) Forget(ctx context.Context, tenant string, sessions []string) error {
	for _, sess := range sessions {
		if err := s.kv.Purge(ctx, tenant+"."+sess); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
			return fmt.Errorf("forgetting usage of %s.%s: %w", tenant, sess, err)
		}
	}
	return nil
}
