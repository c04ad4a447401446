package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"

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

// ownership is what the gateway knows of a session's owner.
type ownership struct {
	// known: owner is the session's owner ("" : the session has none yet, and no turn of it is
	// waiting to be applied). Not known: turns are stored that ingest has not decided, or the
	// state could not be read; anything goes through.
	known bool
	owner string
}

// admit checks evs, in order, against their sessions' owners, and returns the problem of each
// event ingest would reject for its user, by its index in evs. An event of evs that names a user
// makes that user the owner of a session without one for the events after it.
func (g *Gateway) admit(ctx context.Context, tenant string, evs []pending) map[int]*Problem {
	var bad map[int]*Problem
	owners := map[string]ownership{}
	for i, ev := range evs {
		o, ok := owners[ev.session]
		if !ok {
			o = g.ownership(ctx, tenant, ev.session)
		}
		var p *Problem
		switch {
		case !o.known:
		case o.owner != "" && ev.user != "" && ev.user != o.owner:
			p = problem(http.StatusBadRequest, "user", fmt.Sprintf("session %q belongs to user %q; the event names user %q", ev.session, o.owner, ev.user))
		case o.owner == "" && ev.user == "" && ev.turn:
			p = problem(http.StatusBadRequest, "user", fmt.Sprintf("user is required on the first turn of session %q", ev.session))
		case o.owner == "" && ev.user != "" && ev.turn:
			o.owner = ev.user
		}
		if p != nil {
			if bad == nil {
				bad = map[int]*Problem{}
			}
			bad[i] = p
		}
		owners[ev.session] = o
	}
	return bad
}

// ownership reads the owner of a session from its stored header and, when it has none, whether
// messages of the session are stored that ingest has not decided yet.
func (g *Gateway) ownership(ctx context.Context, tenant, sess string) ownership {
	store, _, err := g.stores(ctx)
	if err != nil {
		g.log.Debug().Err(err).Msg("owner check skipped: the session bucket cannot be read")
		return ownership{}
	}
	h, _, err := store.Header(ctx, session.Key{Tenant: tenant, Session: sess})
	switch {
	case errors.Is(err, session.ErrNotFound):
	case err != nil:
		g.log.Debug().Err(err).Str("session", sess).Msg("owner check skipped: the session's header cannot be read")
		return ownership{}
	case h.User != "":
		return ownership{known: true, owner: h.User}
	}
	stream, err := g.turnsStream(ctx)
	if err != nil {
		g.log.Debug().Err(err).Msg("owner check skipped: the turns stream cannot be read")
		return ownership{}
	}
	last, err := stream.GetLastMsgForSubject(ctx, events.SessionFilter(tenant, sess))
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return ownership{known: true}
	case err != nil:
		g.log.Debug().Err(err).Str("session", sess).Msg("owner check skipped: the session's last turn cannot be read")
		return ownership{}
	case last.Sequence <= h.LastSeq:
		return ownership{known: true} // every stored message of the session is decided, none named its user
	}
	return ownership{}
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
