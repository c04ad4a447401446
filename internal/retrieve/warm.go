package retrieve

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/agentmem/agentmem/internal/session"
)

// Warming: the stored views of users whose sessions went quiet.
//
// A stored view (snapshot.go) is written by a cold load, so a user nobody asked about since their
// sessions changed has none, or one out of date: after a restart (or once the view is evicted),
// their first query reads every changed session from the turns stream. The warmer writes those
// views lazily, off the query path. The retriever's watcher of the session bucket notes every
// session written; once a session has had no commit for Config.WarmAfter, the warmer reads its
// header for its user and loads that user's view as a cold load would (the sessions unchanged
// since the user's stored view taken from it), stores it and lets it go: nothing it loads stays
// in memory, and the views of cached users are left as they are.
//
// It loads one user at a time, on a goroutine of its own: at most one core, while sessions are
// quiet. Sessions noted are bounded (maxWarmPending): beyond, a commit is not noted, and that
// user's view is stored by its next cold load instead. Several retrievers each warm every user
// (the second finds the first's view current and reads headers only); run the others with
// --warm-views=0 to spare that.

// DefaultWarmAfter is how long a session goes without a commit before the warmer stores its
// user's view (Config.WarmAfter).
const DefaultWarmAfter = 5 * time.Second

// maxWarmPending bounds the sessions the warmer holds notes of.
const maxWarmPending = 100_000

// warmer holds the sessions committed and not yet warmed: when each was last committed.
type warmer struct {
	quiet   time.Duration
	mu      sync.Mutex
	pending map[session.Key]time.Time
	// kick, for tests, makes the next pass come at once.
	kick chan struct{}
}

func newWarmer(quiet time.Duration) *warmer {
	return &warmer{quiet: quiet, pending: map[session.Key]time.Time{}, kick: make(chan struct{}, 1)}
}

// note records a commit of session k (forgotten: a forget's tombstone, which is not warmed).
func (w *warmer) note(k session.Key, forgotten bool, now time.Time) {
	if w == nil {
		return
	}
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
		case <-s.warm.kick:
		}
		due := s.warm.due(time.Now())
		var users []userKey
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
			if u := (userKey{k.Tenant, h.User}); !slices.Contains(users, u) {
				users = append(users, u)
			}
		}
		for _, u := range users {
			if ctx.Err() != nil {
				return
			}
			s.warmUser(ctx, u)
		}
	}
}

// warmUser loads k's view as a cold load would and stores it, keeping nothing.
func (s *Service) warmUser(ctx context.Context, k userKey) {
	if s.stored.skips(k) {
		return
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
