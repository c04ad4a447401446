package embedder

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/archive"
	"github.com/agentmem/agentmem/internal/embed"
	"github.com/agentmem/agentmem/internal/integrity"
	"github.com/agentmem/agentmem/internal/longterm"
	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/internal/vectors"
	"github.com/agentmem/agentmem/pkg/events"
)

// BackfillConfig configures Backfill.
type BackfillConfig struct {
	// Topology names the streams and buckets.
	Topology events.Topology
	// Tenant, when set, backfills only this tenant (no completion marker is written then: the
	// model is complete only when every tenant is).
	Tenant string
	// BatchSize bounds the texts of one Embed call (default 64).
	BatchSize int
	// Progress, when set, is called with the entries done and the total as the backfill goes.
	Progress func(done, total int)
}

// BackfillResult says what a backfill did.
type BackfillResult struct {
	// Entries found (applied turns, facts, summaries), Embedded now, Had a vector already.
	Entries, Embedded, Had int
	// Users is how many users the entries belong to.
	Users int
	// Marked reports whether the model's completion marker was written.
	Marked bool
}

type pending struct {
	tenant, user, id, text string
	kind                   byte
}

// Backfill makes sure every entry stored now has a vector of emb's model: the applied turns of
// every session (read from the archive, rejected turns left out, as the stage does), and every
// fact and summary of the long-term store. Entries that have one already are skipped, so it can
// be run again after an interruption, and next to a running stage. When it covers every tenant it
// then marks the model complete, which switches retrievers that still answer with a previous
// model over to it.
func Backfill(ctx context.Context, cfg BackfillConfig, js jetstream.JetStream, emb embed.Embedder, log zerolog.Logger) (BackfillResult, error) {
	var res BackfillResult
	if cfg.Topology.Prefix == "" {
		cfg.Topology = events.DefaultTopology()
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = DefaultBatchSize
	}
	topo := cfg.Topology
	started := time.Now().UTC()
	vs, err := vectors.Open(ctx, js, topo)
	if err != nil {
		return res, err
	}
	store, err := session.NewStore(ctx, js, topo)
	if err != nil {
		return res, err
	}
	long, err := longterm.Open(ctx, js, topo)
	if err != nil {
		return res, err
	}
	rep := integrity.NewReporter(nil, log)
	vs, store, long = vs.Instrument(rep), store.Instrument(rep), long.Instrument(rep)
	reader := archive.NewReader(js, topo.TurnsStream())
	model := emb.Name()

	type userKey struct{ tenant, user string }
	var users []userKey
	sessions := map[userKey][]session.Header{}
	err = store.List(ctx, func(h session.Header) error {
		if h.User == "" || !h.Forgotten.IsZero() || (cfg.Tenant != "" && h.Tenant != cfg.Tenant) {
			return nil
		}
		k := userKey{h.Tenant, h.User}
		if _, ok := sessions[k]; !ok {
			users = append(users, k)
		}
		sessions[k] = append(sessions[k], h)
		return nil
	})
	if err != nil {
		return res, err
	}
	// Users with long-term records and no session header left (their sessions expired) are found
	// through the long-term bucket's keys.
	if err := longUsers(ctx, js, topo, cfg.Tenant, func(tenant, user string) {
		k := userKey{tenant, user}
		if _, ok := sessions[k]; !ok {
			sessions[k] = nil
			users = append(users, k)
		}
	}); err != nil {
		return res, err
	}
	var todo []pending
	for _, u := range users {
		have := map[string]bool{}
		if err := vs.Scan(ctx, u.tenant, u.user, model, func(v vectors.Vector) { have[v.ID] = true }); err != nil {
			return res, err
		}
		add := func(p pending) {
			res.Entries++
			if have[p.id] || strings.TrimSpace(p.text) == "" {
				res.Had++
				return
			}
			have[p.id] = true
			todo = append(todo, p)
		}
		for _, h := range sessions[u] {
			st, err := store.Load(ctx, session.Key{Tenant: h.Tenant, Session: h.Session}, 0)
			if err != nil {
				return res, err
			}
			subject := events.SessionFilter(h.Tenant, h.Session)
			if st.Header.Partition >= 0 {
				subject = events.PartitionedSubject(st.Header.Partition, h.Tenant, h.Session)
			}
			err = reader.Scan(ctx, subject, 1, st.Header.LastSeq, func(m *jetstream.RawStreamMsg) error {
				t, err := events.ReadStoredTurn(m)
				if err != nil || !st.AppliedAt(t.ID, t.Seq) {
					return nil
				}
				add(pending{tenant: u.tenant, user: u.user, id: t.ID, text: t.Turn.Content, kind: vectors.KindTurn})
				return nil
			})
			if err != nil {
				return res, err
			}
		}
		recs, err := long.User(ctx, u.tenant, u.user)
		if err != nil {
			return res, err
		}
		for _, f := range recs.Facts {
			add(pending{tenant: u.tenant, user: u.user, id: f.ID, text: f.Content, kind: vectors.KindFact})
		}
		for _, s := range recs.Summaries {
			add(pending{tenant: u.tenant, user: u.user, id: s.ID, text: s.Content, kind: vectors.KindSummary})
		}
	}
	res.Users = len(users)
	done := res.Had
	if cfg.Progress != nil {
		cfg.Progress(done, res.Entries)
	}
	for start := 0; start < len(todo); start += cfg.BatchSize {
		batch := todo[start:min(start+cfg.BatchSize, len(todo))]
		texts := make([]string, len(batch))
		for i, p := range batch {
			texts[i] = p.text
		}
		vecs, err := emb.Embed(ctx, texts)
		if err == nil && len(vecs) != len(texts) {
			err = fmt.Errorf("embedder %s returned %d vectors for %d texts", model, len(vecs), len(texts))
		}
		if err != nil {
			return res, fmt.Errorf("embedding with %s (%d of %d entries done; run it again to go on): %w", model, done, res.Entries, err)
		}
		// Turns as the stage stores them: one pack per run of the batch's turns of one user (todo
		// is in user order). Facts and summaries a value each, where the stage looks them up.
		var pack []vectors.Vector
		for i, p := range batch {
			q, scale := vectors.Quantize(vecs[i])
			v := vectors.Vector{Tenant: p.tenant, User: p.user, Model: model, ID: p.id, Kind: p.kind, Scale: scale, Q: q}
			if v.Kind != vectors.KindTurn {
				if err := vs.Put(ctx, v); err != nil {
					return res, err
				}
				continue
			}
			if len(pack) > 0 && (pack[0].Tenant != v.Tenant || pack[0].User != v.User) {
				if _, err := vs.PutPack(ctx, pack); err != nil {
					return res, err
				}
				pack = nil
			}
			pack = append(pack, v)
		}
		if len(pack) > 0 {
			if _, err := vs.PutPack(ctx, pack); err != nil {
				return res, err
			}
		}
		res.Embedded += len(batch)
		done += len(batch)
		if cfg.Progress != nil {
			cfg.Progress(done, res.Entries)
		}
	}
	if cfg.Tenant == "" {
		if err := vs.MarkComplete(ctx, vectors.Marker{Model: model, Complete: started, Entries: res.Entries, Embedded: res.Embedded}); err != nil {
			return res, fmt.Errorf("marking %s complete: %w", model, err)
		}
		res.Marked = true
	}
	return res, nil
}

// longUsers calls fn with every (tenant, user) that has a record in the long-term bucket.
func longUsers(ctx context.Context, js jetstream.JetStream, topo events.Topology, tenant string, fn func(tenant, user string)) error {
	kv, err := js.KeyValue(ctx, topo.LongTermBucket())
	if err != nil {
		return err
	}
	filter := ">"
	if tenant != "" {
		filter = tenant + ".>"
	}
	lister, err := kv.ListKeysFiltered(ctx, filter)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil
	}
	if err != nil {
		return err
	}
	type owner struct{ tenant, user string }
	seen := map[owner]bool{}
	for key := range lister.Keys() {
		k, err := longterm.ParseKey(key)
		if err != nil || seen[owner{k.Tenant, k.User}] {
			continue
		}
		seen[owner{k.Tenant, k.User}] = true
		fn(k.Tenant, k.User)
	}
	return nil
}
