package ingest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/pkg/events"
)

// idleTracker ends sessions that received nothing for the idle time: it publishes
// agentmem.session.ended.v1 into the session's turns subject, with an id derived from the last
// message it saw, so the end is ordered after the session's last turn, a replay sees it like any
// other event, and two ingest processes that both notice the idle session store it once.
type idleTracker struct {
	w      *Worker
	mu     sync.Mutex
	open   map[session.Key]idleSession
	now    func() time.Time
	loaded bool
}

type idleSession struct {
	partition int
	user      string
	ended     bool
	lastSeq   uint64
	lastAt    time.Time
	requested uint64 // lastSeq for which an end was already published

	summaryID     string    // the latest named range, while its summary is awaited
	awaitingSince time.Time // zero when no summary is awaited
	reemitted     int       // re-emissions of that range's pressure so far
}

func newIdleTracker(w *Worker) *idleTracker {
	return &idleTracker{w: w, open: map[session.Key]idleSession{}, now: time.Now}
}

// counts returns the sessions of the partitions this process owns now: open (not ended) and
// awaiting a summary. Sessions of partitions handed to another member are not counted (their
// owner counts them), so the gauges of every member add up.
func (t *idleTracker) counts() (open, awaiting int) {
	owned := map[int]bool{}
	for _, p := range t.w.Owned() {
		owned[p] = true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range t.open {
		if s.partition >= 0 && !owned[s.partition] {
			continue
		}
		if !s.ended {
			open++
		}
		if !s.awaitingSince.IsZero() {
			awaiting++
		}
	}
	return open, awaiting
}

// awaiting lists the sessions of the partitions this process owns that wait for a summary.
func (t *idleTracker) awaiting() []session.Key {
	owned := map[int]bool{}
	for _, p := range t.w.Owned() {
		owned[p] = true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []session.Key
	for k, s := range t.open {
		if !s.awaitingSince.IsZero() && (s.partition < 0 || owned[s.partition]) {
			out = append(out, k)
		}
	}
	return out
}

// touch records a committed header.
func (t *idleTracker) touch(h session.Header) {
	k := session.Key{Tenant: h.Tenant, Session: h.Session}
	t.mu.Lock()
	defer t.mu.Unlock()
	awaiting := !h.AwaitingSince.IsZero()
	if h.User == "" || (h.Ended && !awaiting) {
		delete(t.open, k)
		return
	}
	cur := t.open[k]
	next := idleSession{partition: h.Partition, user: h.User, ended: h.Ended, lastSeq: h.LastSeq, lastAt: h.LastStoredAt, requested: cur.requested,
		summaryID: h.SummaryID, awaitingSince: h.AwaitingSince}
	if awaiting && cur.summaryID == h.SummaryID {
		next.reemitted = cur.reemitted
	}
	t.open[k] = next
}

// idleStartDelay is how long after a start the idle check first lists the sessions, at most.
const idleStartDelay = 2 * time.Second

func (t *idleTracker) run(ctx context.Context) error {
	period := t.w.cfg.IdleTimeout
	if r := t.w.cfg.RepressureAfter; r > 0 && (period <= 0 || r < period) {
		period = r
	}
	every := min(max(period/10, 100*time.Millisecond), time.Minute)
	// The first pass waits a moment (idleStartDelay, at most a tick): it lists and decodes every
	// session's header, CPU that would compete with the first requests of a process that has
	// just started, and a session it finds idle can end a moment later.
	first := time.NewTimer(min(every, idleStartDelay))
	select {
	case <-ctx.Done():
		first.Stop()
		return nil
	case <-first.C:
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if !t.loaded {
			if err := t.load(ctx); err != nil {
				t.w.log.Warn().Err(err).Msg("listing sessions for the idle check; will retry")
			} else {
				t.loaded = true
			}
		}
		t.sweep(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// load adds every open session of the owned partitions from the store.
func (t *idleTracker) load(ctx context.Context) error {
	return t.w.store.List(ctx, func(h session.Header) error {
		k := session.Key{Tenant: h.Tenant, Session: h.Session}
		t.mu.Lock()
		_, known := t.open[k]
		t.mu.Unlock()
		if !known {
			t.touch(h)
		}
		return nil
	})
}

func (t *idleTracker) sweep(ctx context.Context) {
	now := t.now()
	type due struct {
		key session.Key
		s   idleSession
	}
	var list []due
	type late struct {
		key     session.Key
		attempt int
		id      string
	}
	var lates []late
	idle, re := t.w.cfg.IdleTimeout, t.w.cfg.RepressureAfter
	t.mu.Lock()
	for k, s := range t.open {
		if s.partition >= 0 && !t.w.Owns(s.partition) {
			continue // another member's session
		}
		if idle > 0 && !s.ended && s.requested != s.lastSeq && !s.lastAt.IsZero() && now.Sub(s.lastAt) >= idle {
			list = append(list, due{k, s})
		}
		if re > 0 && !s.awaitingSince.IsZero() {
			if n := int(now.Sub(s.awaitingSince) / re); n > s.reemitted {
				lates = append(lates, late{k, n, s.summaryID})
			}
		}
	}
	t.mu.Unlock()
	for _, l := range lates {
		if err := t.w.repressure(ctx, l.key, l.attempt); err != nil {
			t.w.log.Warn().Err(err).Str("session", l.key.Session).Msg("re-emitting pressure; will retry")
			continue
		}
		t.mu.Lock()
		if cur, ok := t.open[l.key]; ok && cur.summaryID == l.id {
			cur.reemitted = l.attempt
			t.open[l.key] = cur
		}
		t.mu.Unlock()
	}
	for _, d := range list {
		if err := t.end(ctx, d.key, d.s); err != nil {
			t.w.log.Warn().Err(err).Str("tenant", d.key.Tenant).Str("session", d.key.Session).Msg("ending idle session; will retry")
			continue
		}
		t.mu.Lock()
		if cur, ok := t.open[d.key]; ok && cur.lastSeq == d.s.lastSeq {
			cur.requested = d.s.lastSeq
			t.open[d.key] = cur
		}
		t.mu.Unlock()
	}
}

// IdleEndID is the deterministic id of the end event ingest publishes for an idle session whose
// last stored message has stream sequence lastSeq.
func IdleEndID(lastSeq uint64) string { return fmt.Sprintf("%s%d", idleEndPrefix, lastSeq) }

const idleEndPrefix = "idle-end-"

func (t *idleTracker) end(ctx context.Context, k session.Key, s idleSession) error {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	id := IdleEndID(s.lastSeq)
	msg, err := events.NewMsg(ctx, k.Tenant, k.Session, id, events.TypeSessionEnded, t.w.cfg.Source,
		s.lastAt.Add(t.w.cfg.IdleTimeout), events.SessionEnded{User: s.user})
	if err != nil {
		return err
	}
	if _, err := t.w.js.PublishMsg(ctx, msg); err != nil {
		return fmt.Errorf("publishing idle end of %s: %w", k, err)
	}
	t.w.log.Info().Str("tenant", k.Tenant).Str("session", k.Session).Msg("session ended after idle time")
	return nil
}
