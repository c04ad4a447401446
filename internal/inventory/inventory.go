// Package inventory counts what agentmem holds, per tenant: sessions (open, ended, forgotten) and
// their users, the turns the archive stores and ingest applied or rejected, facts (active,
// superseded, deleted) and summaries in the long-term store, dead letters, and LLM usage; and,
// for the deployment as a whole, the lag of every durable consumer.
//
// It is built for a large store. Where a count is all that is needed (turns, summaries, dead
// letters) it asks the stream with one direct get: the first matching message carries the number
// of matching messages after it, so nothing else is read and no consumer is created. Where the
// state of each record matters (session headers, facts) it reads them in batches and keeps
// counters, not the records: 8 bytes and a few counters per session and per fact, so that a
// record rewritten during the read (it shows up again further on in the bucket's stream) counts
// once, in the newest state read. The numbers are a snapshot of a running system.
package inventory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"

	"github.com/agentmem/agentmem/internal/archive"
	"github.com/agentmem/agentmem/internal/longterm"
	"github.com/agentmem/agentmem/internal/metrics"
	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/internal/usage"
	"github.com/agentmem/agentmem/pkg/events"
	"github.com/agentmem/agentmem/pkg/memory"
)

// Sessions counts a tenant's sessions by state.
type Sessions struct {
	Total int `json:"total"`
	// Open sessions have not ended (or a turn reopened them).
	Open int `json:"open"`
	// Ended sessions were ended by the agent or after the idle time.
	Ended int `json:"ended"`
	// Forgotten sessions were removed by a forget; only their watermark is left.
	Forgotten int `json:"forgotten"`
}

// Turns counts a tenant's turns.
type Turns struct {
	// Stored is how many messages the turns stream (the archive) holds for the tenant: turns and
	// session ends.
	Stored uint64 `json:"stored"`
	// Applied is how many turns ingest applied to short-term memory (forgotten sessions excluded).
	Applied int `json:"applied"`
	// Rejected is how many messages ingest rejected as bad input (they are dead letters).
	Rejected int `json:"rejected"`
}

// Facts counts a tenant's facts in the long-term store.
type Facts struct {
	// Active facts are valid now.
	Active int `json:"active"`
	// Superseded facts were replaced by a newer one and stay in the history.
	Superseded int `json:"superseded"`
	// Deleted facts were deleted by an operator and stay in the history.
	Deleted int `json:"deleted"`
}

// Tenant is what agentmem holds of one tenant.
type Tenant struct {
	Tenant   string   `json:"tenant"`
	Sessions Sessions `json:"sessions"`
	// Users is how many distinct users own the tenant's sessions.
	Users int   `json:"users"`
	Turns Turns `json:"turns"`
	Facts Facts `json:"facts"`
	// Summaries is how many summaries the long-term store keeps.
	Summaries uint64 `json:"summaries"`
	// DeadLetters is how many dead letters the tenant's subjects have.
	DeadLetters uint64 `json:"dead_letters"`
	// Usage is the LLM usage recorded for the tenant's sessions.
	Usage memory.Usage `json:"usage"`
}

// add adds o's counts to t (for the total).
func (t *Tenant) add(o Tenant) {
	t.Sessions.Total += o.Sessions.Total
	t.Sessions.Open += o.Sessions.Open
	t.Sessions.Ended += o.Sessions.Ended
	t.Sessions.Forgotten += o.Sessions.Forgotten
	t.Users += o.Users
	t.Turns.Stored += o.Turns.Stored
	t.Turns.Applied += o.Turns.Applied
	t.Turns.Rejected += o.Turns.Rejected
	t.Facts.Active += o.Facts.Active
	t.Facts.Superseded += o.Facts.Superseded
	t.Facts.Deleted += o.Facts.Deleted
	t.Summaries += o.Summaries
	t.DeadLetters += o.DeadLetters
	t.Usage = t.Usage.Add(o.Usage)
}

// Report is an inventory.
type Report struct {
	// Tenants are sorted by name.
	Tenants []Tenant `json:"tenants"`
	// Total sums the tenants of the report.
	Total Tenant `json:"total"`
	// Unattributed is how many dead letters name no tenant (their subject could not be parsed);
	// counted only when the report covers every tenant.
	Unattributed uint64 `json:"unattributed_dead_letters"`
	// Consumers is the lag of every durable consumer of the turns, pressure and summaries streams.
	Consumers []metrics.Lag `json:"consumers"`
	// Took is how long the inventory took.
	Took time.Duration `json:"took_ns"`
}

// Inventory reads the streams and buckets of one topology.
type Inventory struct {
	js   jetstream.JetStream
	topo events.Topology
}

// New returns an inventory of the topology's streams and buckets, read through js.
func New(js jetstream.JetStream, topo events.Topology) *Inventory {
	return &Inventory{js: js, topo: topo}
}

// Report counts what agentmem holds of tenant, or of every tenant when tenant is empty (the
// tenants that have sessions or usage). It fails when a stream or bucket cannot be read, or when
// tenant is not a valid token.
func (inv *Inventory) Report(ctx context.Context, tenant string) (Report, error) {
	start := time.Now()
	if tenant != "" {
		if err := events.ValidateToken("tenant", tenant); err != nil {
			return Report{}, err
		}
	}
	byTenant := map[string]*Tenant{}
	get := func(name string) *Tenant {
		t, ok := byTenant[name]
		if !ok {
			t = &Tenant{Tenant: name}
			byTenant[name] = t
		}
		return t
	}
	if tenant != "" {
		get(tenant)
	}
	if err := inv.sessions(ctx, tenant, get); err != nil {
		return Report{}, err
	}
	if err := inv.usage(ctx, tenant, get); err != nil {
		return Report{}, err
	}
	if err := inv.facts(ctx, tenant, get); err != nil {
		return Report{}, err
	}
	var rep Report
	for _, t := range byTenant {
		var err error
		if t.Turns.Stored, err = inv.count(ctx, inv.topo.TurnsStream(), events.SessionFilter(t.Tenant, "*")); err != nil {
			return Report{}, err
		}
		if t.Summaries, err = inv.count(ctx, "KV_"+inv.topo.LongTermBucket(), "$KV."+inv.topo.LongTermBucket()+"."+t.Tenant+".*.s.*"); err != nil {
			return Report{}, err
		}
		if t.DeadLetters, err = inv.count(ctx, inv.topo.DeadLetterStream(), "memory.dlq."+t.Tenant+".*"); err != nil {
			return Report{}, err
		}
		rep.Tenants = append(rep.Tenants, *t)
		rep.Total.add(*t)
	}
	slices.SortFunc(rep.Tenants, func(a, b Tenant) int { return strings.Compare(a.Tenant, b.Tenant) })
	if rep.Tenants == nil {
		rep.Tenants = []Tenant{}
	}
	rep.Total.Tenant = "total"
	if tenant == "" {
		n, err := inv.count(ctx, inv.topo.DeadLetterStream(), "memory.dlq._")
		if err != nil {
			return Report{}, err
		}
		rep.Unattributed = n
		rep.Total.DeadLetters += n
	}
	lags, err := metrics.ConsumerLag(ctx, inv.js, inv.topo, nil)
	if err != nil {
		return Report{}, err
	}
	rep.Consumers = lags
	if rep.Consumers == nil {
		rep.Consumers = []metrics.Lag{}
	}
	rep.Took = time.Since(start)
	return rep, nil
}

// count returns how many messages of stream match filter, from one direct get: the first
// matching message carries the number of matching messages after it.
func (inv *Inventory) count(ctx context.Context, stream, filter string) (uint64, error) {
	msgs, err := jetstreamext.GetBatch(ctx, inv.js, stream, 1, jetstreamext.GetBatchSeq(1), jetstreamext.GetBatchSubject(filter))
	if err != nil {
		return 0, fmt.Errorf("counting %s in %s: %w", filter, stream, err)
	}
	for m, err := range msgs {
		if errors.Is(err, jetstreamext.ErrNoMessages) {
			return 0, nil
		}
		if err != nil {
			return 0, fmt.Errorf("counting %s in %s: %w", filter, stream, err)
		}
		n, err := strconv.ParseUint(m.Header.Get("Nats-Num-Pending"), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("counting %s in %s: no pending count in the reply", filter, stream)
		}
		return n + 1, nil
	}
	return 0, nil
}

// scan calls fn with the subject and value of every live key of bucket that matches filter
// (a subject under $KV.<bucket>.). Delete and purge markers are passed over.
func (inv *Inventory) scan(ctx context.Context, bucket, filter string, fn func(key string, value []byte) error) error {
	prefix := "$KV." + bucket + "."
	return archive.NewReader(inv.js, "KV_"+bucket).Scan(ctx, prefix+filter, 1, 0, func(m *jetstream.RawStreamMsg) error {
		if archive.KVRemoved(m) {
			return nil
		}
		return fn(strings.TrimPrefix(m.Subject, prefix), m.Data)
	})
}

// tenantFilter is "<tenant>" or "*" for every tenant.
func tenantFilter(tenant string) string {
	if tenant == "" {
		return "*"
	}
	return tenant
}

// keyHash identifies a key in the dedup maps of sessions and facts with 8 bytes instead of the
// key itself.
func keyHash(key string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(key))
	return h.Sum64()
}

// Session states.
const (
	stateOpen uint8 = iota
	stateEnded
	stateForgotten
)

// headerCount is what one session header added to its tenant's counts.
type headerCount struct {
	state           uint8
	turns, rejected int32
}

func (t *Tenant) addHeader(c headerCount, sign int) {
	switch c.state {
	case stateForgotten:
		t.Sessions.Forgotten += sign
	case stateEnded:
		t.Sessions.Ended += sign
	default:
		t.Sessions.Open += sign
	}
	t.Turns.Applied += sign * int(c.turns)
	t.Turns.Rejected += sign * int(c.rejected)
}

// sessions counts session headers (key "<tenant>.<session>") by state, with their users and
// applied and rejected turns. A header that ingest rewrites during the read shows up again
// further on in the bucket's stream: its newest version replaces the one counted.
func (inv *Inventory) sessions(ctx context.Context, tenant string, get func(string) *Tenant) error {
	users := map[string]map[string]struct{}{}
	seen := map[uint64]headerCount{}
	err := inv.scan(ctx, inv.topo.SessionBucket(), tenantFilter(tenant)+".*", func(key string, value []byte) error {
		var h session.Header
		if err := json.Unmarshal(value, &h); err != nil {
			return fmt.Errorf("decoding session header %q: %w", key, err)
		}
		sk, err := session.ParseKey(key)
		if err != nil {
			return nil // not a session's key: counted nowhere
		}
		name := sk.Tenant
		t := get(name)
		c := headerCount{turns: int32(h.Turns), rejected: int32(h.Rejected)}
		switch {
		case !h.Forgotten.IsZero():
			c = headerCount{state: stateForgotten}
		case h.Ended:
			c.state = stateEnded
		}
		k := keyHash(key)
		if old, ok := seen[k]; ok {
			t.addHeader(old, -1)
		} else {
			t.Sessions.Total++
		}
		seen[k] = c
		t.addHeader(c, 1)
		if h.User != "" && c.state != stateForgotten {
			if users[name] == nil {
				users[name] = map[string]struct{}{}
			}
			users[name][h.User] = struct{}{}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("reading session headers: %w", err)
	}
	for name, us := range users {
		get(name).Users = len(us)
	}
	return nil
}

// Fact states.
const (
	factActive uint8 = iota
	factSuperseded
	factDeleted
)

func (t *Tenant) addFact(state uint8, sign int) {
	switch state {
	case factDeleted:
		t.Facts.Deleted += sign
	case factSuperseded:
		t.Facts.Superseded += sign
	default:
		t.Facts.Active += sign
	}
}

// facts counts the facts of the long-term store (key "<tenant>.<user>.f.<id>") by state; a fact
// changed during the read counts in its newest state.
func (inv *Inventory) facts(ctx context.Context, tenant string, get func(string) *Tenant) error {
	seen := map[uint64]uint8{}
	err := inv.scan(ctx, inv.topo.LongTermBucket(), tenantFilter(tenant)+".*.f.*", func(key string, value []byte) error {
		var f longterm.Fact
		if err := json.Unmarshal(value, &f); err != nil {
			return fmt.Errorf("decoding fact %q: %w", key, err)
		}
		sk, err := longterm.ParseKey(key)
		if err != nil {
			return nil // not a fact's key: counted nowhere
		}
		name := sk.Tenant
		t := get(name)
		state := factActive
		switch {
		case f.Deleted:
			state = factDeleted
		case !f.Live():
			state = factSuperseded
		}
		k := keyHash(key)
		if old, ok := seen[k]; ok {
			t.addFact(old, -1)
		}
		seen[k] = state
		t.addFact(state, 1)
		return nil
	})
	if err != nil {
		return fmt.Errorf("reading facts: %w", err)
	}
	return nil
}

// usage sums the LLM usage of the tenant's sessions.
func (inv *Inventory) usage(ctx context.Context, tenant string, get func(string) *Tenant) error {
	store, err := usage.Open(ctx, inv.js, inv.topo)
	if err != nil {
		return err
	}
	rep, err := store.Report(ctx, tenant)
	if err != nil {
		return fmt.Errorf("reading usage: %w", err)
	}
	for _, tu := range rep.Tenants {
		get(tu.Tenant).Usage = tu.Usage
	}
	return nil
}
