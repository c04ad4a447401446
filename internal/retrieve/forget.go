package retrieve

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmem/agentmem/pkg/events"
)

// Read-after-forget. The extractor's forget publishes a "forgotten" fact event once it has
// removed everything of a user, and answers the caller after that event is stored. A retriever
// must not answer a request that arrives after that answer from the user's cached view.
//
// The announcement and the requests reach the retriever on the same connection, and a NATS
// connection reads its messages in order: on one server, the announcement is read before any
// request the caller makes after its forget's answer. What breaks that order is the client's
// dispatch, which hands each subscription's messages to its own goroutine. So announcements are
// not handled on a goroutine of their own: the connection's reader puts them in a channel
// (nats.ChanSubscribe), and every request empties that channel, under forgetFeed.mu, before it
// reads a user's view (forgetFeed.apply, called first thing by Service.Retrieve). A sweep empties
// it too, so that a forgotten user's memory is freed without waiting for a request.
//
// What the feed cannot see makes it drop every view rather than keep one it should not: an
// announcement dropped because the channel was full (the client's slow-consumer limit), and a
// reconnection, during which announcements may have been published and missed.
//
// Across servers of a cluster the order of two paths (the announcement to the retriever's
// server, the caller's request through its own) is not guaranteed. There the session tombstones,
// written before the forget answers, also take the user's archived turns out of a view
// (userView.refreshArchive), and a late announcement drops the rest within the routes' latency.

// forgottenOp is the operation of a "forgotten" fact event, as its JSON data spells it.
var forgottenOp = []byte(`"` + events.FactForgotten + `"`)

// forgetSweep is how often the feed is emptied without a request.
const forgetSweep = 50 * time.Millisecond

// forgetBuffer is how many fact events the channel holds between two emptyings.
const forgetBuffer = 16384

// forgetFeed brings the forget announcements to the user cache.
type forgetFeed struct {
	mu  sync.Mutex
	ch  chan *nats.Msg
	sub *nats.Subscription
	nc  *nats.Conn
	// dropped and reconnects are what the feed last saw of the subscription's dropped messages
	// and the connection's reconnections.
	dropped    int
	reconnects uint64
	forget     func(userKey)
	forgetAll  func()
}

// subscribeForgets starts the feed on nc, holding up to buffer announcements and emptied every
// sweep besides every request: forget is called with each forgotten user, forgetAll when an
// announcement may have been missed.
func subscribeForgets(ctx context.Context, nc *nats.Conn, buffer int, sweep time.Duration, forget func(userKey), forgetAll func()) (*forgetFeed, error) {
	f := &forgetFeed{ch: make(chan *nats.Msg, buffer), nc: nc, forget: forget, forgetAll: forgetAll,
		reconnects: nc.Stats().Reconnects}
	sub, err := nc.ChanSubscribe("memory.facts.*.*", f.ch)
	if err != nil {
		return nil, fmt.Errorf("subscribing to forget events: %w", err)
	}
	f.sub = sub
	// The server has the subscription before Start returns: an announcement published after
	// that (by another connection) reaches the feed. Without the round trip it could arrive
	// first and be lost, and a view loaded before it kept the forgotten user's memory.
	fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := nc.FlushWithContext(fctx); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("subscribing to forget events: %w", err)
	}
	go func() {
		t := time.NewTicker(sweep)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				_ = sub.Unsubscribe()
				return
			case <-t.C:
				f.apply()
			}
		}
	}()
	return f, nil
}

// apply handles every announcement the connection has read so far.
func (f *forgetFeed) apply() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n, err := f.sub.Dropped(); err == nil && n != f.dropped {
		f.dropped = n
		f.forgetAll()
	}
	if r := f.nc.Stats().Reconnects; r != f.reconnects {
		f.reconnects = r
		f.forgetAll()
	}
	for {
		select {
		case m := <-f.ch:
			if k, ok := forgottenUser(m); ok {
				f.forget(k)
			}
		default:
			return
		}
	}
}

// forgottenUser returns the user a "forgotten" fact event announces. Every fact event comes
// through the feed, and a request empties it: one whose data cannot name the forgotten operation
// is passed over without being decoded.
func forgottenUser(m *nats.Msg) (userKey, bool) {
	if !events.MaybeType(m.Header, events.TypeFact) || !bytes.Contains(m.Data, forgottenOp) {
		return userKey{}, false
	}
	ev, err := events.Decode(m)
	if err != nil {
		return userKey{}, false
	}
	fe, err := events.DecodeData[events.FactEvent](ev)
	if err != nil || fe.Op != events.FactForgotten {
		return userKey{}, false
	}
	tenant, user, err := events.ParseKindSubject(events.KindFacts, m.Subject)
	if err != nil {
		return userKey{}, false
	}
	return userKey{tenant, user}, true
}
