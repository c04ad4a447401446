package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/internal/longterm"
	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/internal/view"
	"github.com/agentmem/agentmem/pkg/events"
)

// Entry states in a Session (package view).
const (
	StateKept    = view.EntryKept
	StatePending = view.EntryPending
	StateNamed   = view.EntryNamed
)

// Session is the 200 body of GET /v1/tenants/{tenant}/sessions/{session}: the session's
// short-term state as ingest stored it (view.Session).
type Session = view.Session

// SessionEntry is one entry of a Session.
type SessionEntry = view.Entry

// getSession answers a session's short-term state, 404 when there is none.
func (g *Gateway) getSession(w http.ResponseWriter, r *http.Request, tenant string) {
	sess := r.PathValue("session")
	if err := events.ValidateToken("session", sess); err != nil {
		writeProblem(w, r, invalid(err))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), g.cfg.Timeout)
	defer cancel()
	store, _, err := g.stores(ctx)
	if err != nil {
		writeProblem(w, r, g.readProblem(err))
		return
	}
	st, err := store.Load(ctx, session.Key{Tenant: tenant, Session: sess}, 0)
	if err != nil {
		writeProblem(w, r, g.readProblem(err))
		return
	}
	h := st.Header
	if st.Revision() == 0 || (!h.Forgotten.IsZero() && h.Head == "") {
		writeProblem(w, r, problem(http.StatusNotFound, "session", fmt.Sprintf("tenant %q has no session %q", tenant, sess)))
		return
	}
	writeJSON(w, http.StatusOK, view.NewSession(st))
}

// Fact states (package view).
const (
	FactLive       = view.FactLive
	FactSuperseded = view.FactSuperseded
	FactDeleted    = view.FactDeleted
)

// Fact is one fact of a user, as GET /v1/tenants/{tenant}/users/{user}/facts lists it
// (view.Fact).
type Fact = view.Fact

// Facts is the 200 body of GET /v1/tenants/{tenant}/users/{user}/facts, oldest first.
type Facts struct {
	User    string `json:"user"`
	History bool   `json:"history"`
	Facts   []Fact `json:"facts"`
}

// getFacts lists a user's live facts, or with ?history=true every version (superseded and
// deleted facts too). An unknown user has no facts.
func (g *Gateway) getFacts(w http.ResponseWriter, r *http.Request, tenant string) {
	user := r.PathValue("user")
	if err := events.ValidateToken("user", user); err != nil {
		writeProblem(w, r, invalid(err))
		return
	}
	history := false
	if v := r.URL.Query().Get("history"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			writeProblem(w, r, problem(http.StatusBadRequest, "history", fmt.Sprintf("history %q: want true or false", v)))
			return
		}
		history = b
	}
	recs, ok := g.userRecords(w, r, tenant, user)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, Facts{User: user, History: history, Facts: view.Facts(recs.Facts, history)})
}

// readProblem maps a failed bucket read: 504 when NATS did not answer in time, 503 otherwise
// (JetStream or the bucket not available).
func (g *Gateway) readProblem(err error) *Problem {
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout):
		return problem(http.StatusGatewayTimeout, "", fmt.Sprintf("JetStream did not answer within %s", g.cfg.Timeout))
	case errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, nats.ErrNoResponders):
		return problem(http.StatusServiceUnavailable, "", "memory is not available: "+err.Error())
	default:
		g.log.Warn().Err(err).Msg("reading memory")
		return problem(http.StatusServiceUnavailable, "", "reading memory: "+err.Error())
	}
}

// userRecords reads everything long-term memory holds of a user (longterm.Store.User) within the
// gateway's timeout; when it cannot, it writes the problem and reports false.
func (g *Gateway) userRecords(w http.ResponseWriter, r *http.Request, tenant, user string) (longterm.UserRecords, bool) {
	ctx, cancel := context.WithTimeout(r.Context(), g.cfg.Timeout)
	defer cancel()
	_, store, err := g.stores(ctx)
	if err != nil {
		writeProblem(w, r, g.readProblem(err))
		return longterm.UserRecords{}, false
	}
	recs, err := store.User(ctx, tenant, user)
	if err != nil {
		writeProblem(w, r, g.readProblem(err))
		return longterm.UserRecords{}, false
	}
	return recs, true
}
