package retrieve

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentmem/agentmem/internal/session"
)

// Warming: the stored views of users whose sessions went quiet.
//
// A stored view (snapshot.go) is written by a cold load, so a user nobody asked about since their
// sessions changed has none, or one out of date: after a restart (or once the view is evicted),
// their first query reads every changed session from the turns stream. The warmer writes those
// views lazily, off the query path. The retriever's watcher of the session bucket notes every
// session written; once no session at all has been written for Config.WarmAfter (the pipeline is
// idle), the warmer reads the header of each session noted for its user and loads each such
// user's view as a cold load would (the sessions unchanged since the user's stored view taken
// from it), stores it and lets it go: nothing it loads stays in memory, and the views of cached
// users are left as they are. A commit during a pass ends it; the users left wait for the next
// idle time.
//
// Only while the pipeline is idle, because warming while turns are written costs their writers
// more than its share of the CPU: it reads the turns stream, and a reader of the synced turns
// stream slows its publishers (BenchmarkSyncedPublish). Warming each user once its own sessions
// were quiet for 5 s, during a bulk load of 10,000 users (BenchmarkScaleBlackBox), posted 17 %
// fewer turns a second (4,454 against 5,357), and 11 % fewer when it paused nine times as long
// as each user took.
//
// It loads one user at a time, on a goroutine of its own: at most one core. Sessions noted are
// bounded (maxWarmPending): beyond, a commit is not noted, and that user's view is stored by its
// next cold load instead. Several retrievers each warm every user (the later ones find the view
// current and read headers only): run all but one with --warm-views=0 to spare that.

// DefaultWarmAfter is how long the pipeline goes without a commit before the warmer stores the
// views of the users whose sessions changed (Config.WarmAfter).
const DefaultWarmAfter = 5 * time.Second

// maxWarmPending bounds the sessions the warmer holds notes of.
const maxWarmPending = 100_000

// warmer holds the sessions committed and not yet warmed: when each was last committed.
type warmer struct {
	quiet time.Duration
	// last is when the last commit was noted (unix ns): the pipeline is busy within quiet of it.
	last    atomic.Int64
	mu      sync.Mutex
	pending map[session.Key]time.Time
}

func newWarmer(quiet time.Duration) *warmer {
	return &warmer{quiet: quiet, pending: map[session.Key]time.Time{}}
}

// note records a commit of session k (forgotten: a forget's tombstone, which is not warmed).
func (w *warmer) note(k session.Key, forgotten bool, now time.Time) {
	if w == nil {
		return
	}
	w.last.Store(now.UnixNano())
	w.mu.Lock()
	defer w.mu.Unlock()
	if forgotten {
		delete(w.pending, k)
		return
	}
	if _, ok := w.pending[k]; ok || len(w.pending) < maxWarmPending {
		w.pending[k] = now
	}
}

// renote notes sessions again as due at the next idle time, unless a commit noted them since.
func (w *warmer) renote(keys []session.Key) {
	w.mu.Lock()
	defer w.mu.Unlock()
	due := time.Now().Add(-w.quiet)
	for _, k := range keys {
		if _, ok := w.pending[k]; !ok {
			w.pending[k] = due
		}
	}
}

// busy reports whether a commit was noted within quiet before now.
func (w *warmer) busy(now time.Time) bool {
	return now.Sub(time.Unix(0, w.last.Load())) < w.quiet
}

// due takes the sessions without a commit since quiet before now, oldest first.
func (w *warmer) due(now time.Time) []session.Key {
	w.mu.Lock()
	defer w.mu.Unlock()
	type noted struct {
		k  session.Key
		at time.Time
	}
	var out []noted
	for k, at := range w.pending {
		if now.Sub(at) >= w.quiet {
			out = append(out, noted{k, at})
			delete(w.pending, k)
		}
	}
	slices.SortFunc(out, func(a, b noted) int { return a.at.Compare(b.at) })
	keys := make([]session.Key, len(out))
	for i, n := range out {
		keys[i] = n.k
	}
	return keys
}

// warmViews stores the views of the users whose sessions went quiet, until ctx ends.
func (s *Service) warmViews(ctx context.Context) {
	tick := time.NewTicker(max(s.warm.quiet/4, 50*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if s.warm.busy(time.Now()) {
			continue
		}
		due := s.warm.due(time.Now())
		var users []userKey
		sessions := map[userKey][]session.Key{}
		for _, k := range due {
			if ctx.Err() != nil {
				return
			}
			hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			h, _, err := s.store.Header(hctx, k)
			cancel()
			if err != nil || h.User == "" || !h.Forgotten.IsZero() {
				continue // gone, unreadable now (its next cold load stores it) or no user's
			}
			u := userKey{k.Tenant, h.User}
			if _, ok := sessions[u]; !ok {
				users = append(users, u)
			}
			sessions[u] = append(sessions[u], k)
		}
		for i, u := range users {
			if ctx.Err() != nil {
				return
			}
			if s.warm.busy(time.Now()) {
				// Turns are being written again: the users left wait for the next idle time.
				for _, left := range users[i:] {
					s.warm.renote(sessions[left])
				}
				break
			}
			s.warmUser(ctx, u)
		}
	}
}

// warmUser loads k's view as a cold load would and stores it, keeping nothing.
func (s *Service) warmUser(ctx context.Context, k userKey) {
	if s.stored.skips(k) || s.stored.isLarge(k) {
		return // being forgotten, or too large to store: loading it would be for nothing
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	u := newUserView(k, s.cfg.Rank)
	u.warming = true
	err := u.refreshLong(ctx, s.long)
	if err == nil {
		err = u.refreshArchive(ctx, s.store, s.reader, s.stored, func() *storedView { return s.stored.read(ctx, k) })
	}
	if err != nil && ctx.Err() == nil {
		s.log.Debug().Err(err).Str("tenant", k.tenant).Str("user", k.user).Msg("warming a user's stored view")
	}
	s.stored.count("warmed", 1)
}
