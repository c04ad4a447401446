package embedder

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentmem/agentmem/internal/session"
)

// sessionCacheSize bounds the session states an embedder keeps.
const sessionCacheSize = 4096

// sessionCache keeps the committed state of recently seen sessions, to tell applied turns from
// rejected ones without reading a session again for each of its turns.
type sessionCache struct {
	store *session.Store
	max   int

	mu    sync.Mutex
	items map[session.Key]*cachedSession
	tick  uint64

	// forgets counts the forgotten sessions' tombstones the watch reported: a vector of a turn
	// decided before it last changed is decided again before it is stored (stillApplied).
	forgets atomic.Uint64
}

type cachedSession struct {
	mu    sync.Mutex
	state *session.State
	used  uint64
	// changed is closed (and replaced) when the session's header is written: a waiter looks
	// again at once. Guarded by sessionCache.mu.
	changed chan struct{}
}

func newSessionCache(store *session.Store, max int) *sessionCache {
	return &sessionCache{store: store, max: max, items: map[session.Key]*cachedSession{}}
}

func (c *sessionCache) get(k session.Key) *cachedSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tick++
	cs, ok := c.items[k]
	if !ok {
		if len(c.items) >= c.max {
			var oldest session.Key
			at := ^uint64(0)
			for key, v := range c.items {
				if v.used < at {
					oldest, at = key, v.used
				}
			}
			delete(c.items, oldest)
		}
		cs = &cachedSession{state: session.NewDecisions(k), changed: make(chan struct{})}
		c.items[k] = cs
	}
	cs.used = c.tick
	return cs
}

// committed wakes the waiters of session k: its header was written (session.Store.WatchCommits).
// A forgotten session's state is dropped: the next turn of it is decided from what is stored, a
// tombstone that applied nothing, not from the state read before the forget, which would have the
// stage embed (and store after the forget's purge) turns the forget removed.
func (c *sessionCache) committed(k session.Key, forgotten bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if forgotten {
		c.forgets.Add(1)
	}
	if cs, ok := c.items[k]; ok {
		close(cs.changed)
		cs.changed = make(chan struct{})
		if forgotten {
			delete(c.items, k)
		}
	}
}

// signal returns the channel closed at the next commit of cs's session.
func (c *sessionCache) signal(cs *cachedSession) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return cs.changed
}

// decided waits (up to wait, or until stopping is closed) until ingest has decided the turn at
// stream sequence seq of session k (woken by the session's next commit, or looking again after a
// pause), then reports whether it was applied under id and who owns the
// session. When ingest has not decided it in time, the error asks for the message to be tried
// again later.
func (c *sessionCache) decided(ctx context.Context, stopping <-chan struct{}, k session.Key, id string, seq uint64, wait time.Duration) (bool, string, error) {
	cs := c.get(k)
	cs.mu.Lock()
	defer cs.mu.Unlock()
	deadline := time.Now().Add(wait)
	pause := 20 * time.Millisecond
	for {
		if cs.state.Revision() > 0 && cs.state.Header.LastSeq >= seq {
			return cs.state.AppliedAt(id, seq), cs.state.Header.User, nil
		}
		next := c.signal(cs) // before reading: a commit after the read wakes this wait
		changed, err := c.store.Refresh(ctx, cs.state)
		if err != nil {
			return false, "", fmt.Errorf("reading session %s: %w", k, err)
		}
		if changed {
			continue
		}
		if !time.Now().Before(deadline) {
			return false, "", fmt.Errorf("ingest has not decided turn %q (stream sequence %d) of session %s yet", id, seq, k)
		}
		select {
		case <-ctx.Done():
			return false, "", ctx.Err()
		case <-stopping:
			return false, "", fmt.Errorf("shutting down before ingest decided turn %q of session %s", id, k)
		case <-next:
		case <-time.After(pause): // in case a commit notice is lost (a watcher being restarted)
		}
		pause = min(2*pause, 500*time.Millisecond)
	}
}

// stillApplied is the check made just before the vector of turn id (stream sequence seq of
// session k), decided applied when forgets was epoch, is stored. An embedding call can outlast a
// forget and its wait for the stage (a slow or retried model): when any session was forgotten
// since, the turn is decided again, from the tombstone if it was this one, and a forgotten turn's
// vector is not stored. A tombstone written but not yet reported is the forget's own to clean up:
// its second pass comes at least its grace period after the tombstone.
func (c *sessionCache) stillApplied(ctx context.Context, stopping <-chan struct{}, k session.Key, id string, seq, epoch uint64) (bool, error) {
	if c.forgets.Load() == epoch {
		return true, nil
	}
	applied, _, err := c.decided(ctx, stopping, k, id, seq, 0)
	return applied, err
}
