package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/pkg/events"
)

// The gateway refuses, before storing it, an event that ingest would dead-letter for a reason
// the gateway can see: content over the size limit (prepare), a session's first turn without a
// user, a user other than the session's owner (admit). Ingest keeps every check and stays the
// authority; the gateway's are a courtesy to the writer, who learns of the mistake in the
// response instead of from a dead letter. A check the gateway cannot make (a bucket it cannot
// read, turns of the session stored but not yet applied) lets the event through.

// contentLimit is the largest turn content tenant may send: its max_turn_bytes limit when set,
// else MaxContentBytes, as ingest decides.
func (g *Gateway) contentLimit(tenant string) int {
	if l := g.cfg.Limits.For(tenant); l.MaxTurnBytes > 0 {
		return l.MaxTurnBytes
	}
	return g.cfg.MaxContentBytes
}

// contentTooLarge is the problem of a turn whose content is n bytes, over limit: the wording of
// ingest's dead letter.
func contentTooLarge(n, limit int) *Problem {
	return problem(http.StatusRequestEntityTooLarge, "content", fmt.Sprintf("content is %d bytes; the limit is %d", n, limit))
}

// ownership is what the gateway knows of a session's owner, for one request.
type ownership struct {
	// failed: a read failed, so nothing is known and anything goes through.
	failed bool
	// owner is the session's owner, "" when it has none yet (or an event earlier in the request
	// named the user of a session without one); cached says it came from Gateway.owners.
	owner  string
	cached bool
	// lastSeq is the stream sequence up to which ingest decided the session (its header's).
	lastSeq uint64
	// unowned: decided (looked up once, for a turn without a user) whether the session has no
	// message that ingest has not decided yet; firstTurn is the answer.
	unowned, firstTurn bool
}

// admit checks evs, in order, against their sessions' owners, and returns the problem of each
// event ingest would reject for its user, by its index in evs. An event of evs that names a user
// makes that user the owner of a session without one for the events after it.
//
// A session's owner never changes while it exists, so the owners the gateway has read are kept
// (Gateway.owners): a turn of its owner costs no read. A turn naming another user reads the
// header again before it is refused (a forget may have ended the session meanwhile), and only a
// turn without a user on a session without an owner looks the session up in the turns stream.
func (g *Gateway) admit(ctx context.Context, tenant string, evs []pending) map[int]*Problem {
	// A read lost with a crashed server would hold the request up to its timeout, leaving the
	// publish none: the checks get admitTimeout, and what they could not read goes through.
	ctx, cancel := context.WithTimeout(ctx, admitTimeout)
	defer cancel()
	var bad map[int]*Problem
	owners := map[string]*ownership{}
	for i, ev := range evs {
		o := owners[ev.session]
		if o == nil {
			o = g.ownerOf(ctx, tenant, ev.session, true)
			owners[ev.session] = o
		}
		if o.owner != "" && ev.user != "" && ev.user != o.owner && o.cached {
			*o = *g.ownerOf(ctx, tenant, ev.session, false)
		}
		var p *Problem
		switch {
		case o.failed:
		case o.owner != "" && ev.user != "" && ev.user != o.owner:
			p = problem(http.StatusBadRequest, "user", fmt.Sprintf("session %q belongs to user %q; the event names user %q", ev.session, o.owner, ev.user))
		case o.owner == "" && ev.user == "" && ev.turn:
			if g.firstTurn(ctx, tenant, ev.session, o) {
				p = problem(http.StatusBadRequest, "user", fmt.Sprintf("user is required on the first turn of session %q", ev.session))
			}
		case o.owner == "" && ev.user != "" && ev.turn:
			o.owner, o.cached = ev.user, false
		}
		if p != nil {
			if bad == nil {
				bad = map[int]*Problem{}
			}
			bad[i] = p
		}
	}
	return bad
}

// admitTimeout bounds the reads of admit.
const admitTimeout = 5 * time.Second

// ownerOf reads the owner of a session: from the owners the gateway keeps when cached allows,
// else from its stored header (and keeps it).
func (g *Gateway) ownerOf(ctx context.Context, tenant, sess string, cached bool) *ownership {
	key := session.Key{Tenant: tenant, Session: sess}
	if cached {
		if owner, ok := g.owners.get(key); ok {
			return &ownership{owner: owner, cached: true}
		}
	}
	store, _, err := g.stores(ctx)
	if err != nil {
		g.log.Debug().Err(err).Msg("owner check skipped: the session bucket cannot be read")
		return &ownership{failed: true}
	}
	h, _, err := store.Header(ctx, key)
	switch {
	case errors.Is(err, session.ErrNotFound):
		return &ownership{}
	case err != nil:
		g.log.Debug().Err(err).Str("session", sess).Msg("owner check skipped: the session's header cannot be read")
		return &ownership{failed: true}
	case h.User != "":
		g.owners.put(key, h.User)
	}
	return &ownership{owner: h.User, lastSeq: h.LastSeq}
}

// firstTurn reports whether a turn without a user would be the first turn of a session whose
// header names no owner: no message of the session is stored that ingest has not decided. It
// looks the stream up once per request and session (o keeps the answer); a failure says no.
func (g *Gateway) firstTurn(ctx context.Context, tenant, sess string, o *ownership) bool {
	if o.unowned {
		return o.firstTurn
	}
	o.unowned = true
	if o.cached {
		return false // an owner was known: not a first turn
	}
	stream, err := g.turnsStream(ctx)
	if err != nil {
		g.log.Debug().Err(err).Msg("owner check skipped: the turns stream cannot be read")
		return false
	}
	last, err := stream.GetLastMsgForSubject(ctx, events.SessionFilter(tenant, sess))
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		o.firstTurn = true
	case err != nil:
		g.log.Debug().Err(err).Str("session", sess).Msg("owner check skipped: the session's last turn cannot be read")
	default:
		o.firstTurn = last.Sequence <= o.lastSeq // every stored message is decided, none named its user
	}
	return o.firstTurn
}

// ownerCache keeps the owners of sessions the gateway has read, up to maxOwners; when full it
// starts again empty (the next request of each session reads its header once more).
type ownerCache struct {
	mu sync.Mutex
	m  map[session.Key]string
}

// maxOwners bounds the owners a gateway keeps (about 100 bytes each).
const maxOwners = 1 << 16

func (c *ownerCache) get(k session.Key) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[k]
	return v, ok
}

func (c *ownerCache) put(k session.Key, owner string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxOwners {
		c.m = make(map[session.Key]string)
	}
	c.m[k] = owner
}

// turnsStream binds the turns stream on first use and returns it.
func (g *Gateway) turnsStream(ctx context.Context) (jetstream.Stream, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.turns == nil {
		s, err := g.js.Stream(ctx, g.topo.TurnsStream())
		if err != nil {
			return nil, err
		}
		g.turns = s
	}
	return g.turns, nil
}
