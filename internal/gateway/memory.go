package gateway

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/internal/longterm"
	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/pkg/events"
	"github.com/agentmem/agentmem/pkg/memory"
)

// Entry states in a Session.
const (
	// StateKept: the entry is in the session's short-term memory.
	StateKept = "kept"
	// StatePending: evicted over the budget, waiting to be summarised.
	StatePending = "pending"
	// StateNamed: a summary whose range was named for compression and whose text has not
	// arrived yet.
	StateNamed = "named"
)

// Session is the 200 body of GET /v1/tenants/{tenant}/sessions/{session}: the session's
// short-term state as ingest stored it.
type Session struct {
	Tenant  string `json:"tenant"`
	Session string `json:"session"`
	// User owns the session (empty until a turn named one).
	User string `json:"user"`
	// Tokens are the kept entries' tokens, Budget the conversation budget, Ratio Tokens/Budget.
	Tokens int     `json:"tokens"`
	Budget int     `json:"budget"`
	Ratio  float64 `json:"ratio"`
	// Kept and Pending count the kept entries and those evicted into the pending list.
	Kept          int `json:"kept"`
	Pending       int `json:"pending"`
	PendingTokens int `json:"pending_tokens"`
	// Turns counts the applied turns, Rejected the dead-lettered messages.
	Turns     int       `json:"turns"`
	Rejected  int       `json:"rejected"`
	Pressures int       `json:"pressures"`
	Summaries int       `json:"summaries"`
	Ended     bool      `json:"ended"`
	EndedAt   time.Time `json:"ended_at,omitzero"`
	// FirstTurnAt and LastTurnAt are the oldest and newest turn times.
	FirstTurnAt time.Time `json:"first_turn_at,omitzero"`
	LastTurnAt  time.Time `json:"last_turn_at,omitzero"`
	Updated     time.Time `json:"updated,omitzero"`
	// Entries are the pending entries, then the kept ones, in order. Their text stays in the
	// turns stream: retrieve returns it.
	Entries []SessionEntry `json:"entries"`
}

// SessionEntry is one entry of a Session.
type SessionEntry struct {
	ID        string    `json:"id"`
	Type      string    `json:"type"`
	Role      string    `json:"role,omitempty"`
	Tokens    int       `json:"tokens"`
	Timestamp time.Time `json:"timestamp"`
	// State is kept, pending or named.
	State string `json:"state"`
	// Covers is how many turns a summary stands for.
	Covers int `json:"covers,omitempty"`
}

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
	v := Session{
		Tenant: h.Tenant, Session: h.Session, User: h.User, Tokens: h.Tokens, Budget: h.Budget, Ratio: h.Ratio(),
		Kept: h.Kept, Pending: h.Pending, PendingTokens: h.PendingTokens, Turns: h.Turns, Rejected: h.Rejected,
		Pressures: h.Pressures, Summaries: h.Summaries, Ended: h.Ended, EndedAt: h.EndedAt,
		FirstTurnAt: h.FirstTurnAt, LastTurnAt: h.LastTurnAt, Updated: h.Updated,
		Entries: []SessionEntry{},
	}
	add := func(e memory.Entry, state string) {
		se := SessionEntry{ID: e.ID, Type: string(e.Type), Role: e.Role, Tokens: e.Tokens, Timestamp: e.Timestamp, State: state}
		if e.Type == memory.Summary {
			se.Covers = len(e.Provenance)
			if e.Content == "" {
				se.State = StateNamed
			}
		}
		v.Entries = append(v.Entries, se)
	}
	for _, e := range st.Short.Pending() {
		add(e, StatePending)
	}
	for _, e := range st.Short.Entries() {
		add(e, StateKept)
	}
	writeJSON(w, http.StatusOK, v)
}

// Fact states.
const (
	FactLive       = "live"
	FactSuperseded = "superseded"
	FactDeleted    = "deleted"
)

// Fact is one fact of a user, as GET /v1/tenants/{tenant}/users/{user}/facts lists it.
type Fact struct {
	ID       string `json:"id"`
	Content  string `json:"content"`
	Category string `json:"category"`
	// Key groups facts that supersede each other (user.city).
	Key string `json:"key,omitempty"`
	// ValidFrom is the time of the earliest turn that stated the fact; ValidTo the superseding
	// fact's ValidFrom (or when it was deleted).
	ValidFrom    time.Time  `json:"valid_from"`
	ValidTo      *time.Time `json:"valid_to,omitempty"`
	SupersededBy string     `json:"superseded_by,omitempty"`
	// Provenance lists the turn ids that stated it.
	Provenance []string `json:"provenance"`
	Confidence float64  `json:"confidence"`
	// Extractor says what extracted it (rules or an LLM).
	Extractor string `json:"extractor,omitempty"`
	// State is live, superseded or deleted.
	State string `json:"state"`
}

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
	ctx, cancel := context.WithTimeout(r.Context(), g.cfg.Timeout)
	defer cancel()
	_, store, err := g.stores(ctx)
	if err != nil {
		writeProblem(w, r, g.readProblem(err))
		return
	}
	recs, err := store.User(ctx, tenant, user)
	if err != nil {
		writeProblem(w, r, g.readProblem(err))
		return
	}
	out := Facts{User: user, History: history, Facts: []Fact{}}
	for _, f := range recs.Facts {
		if !history && !f.Live() {
			continue
		}
		out.Facts = append(out.Facts, factView(f))
	}
	slices.SortFunc(out.Facts, func(a, b Fact) int {
		return cmp.Or(a.ValidFrom.Compare(b.ValidFrom), cmp.Compare(a.ID, b.ID))
	})
	writeJSON(w, http.StatusOK, out)
}

func factView(f longterm.Fact) Fact {
	v := Fact{
		ID: f.ID, Content: f.Content, Category: f.Category, Key: f.Key, ValidFrom: f.ValidFrom, ValidTo: f.ValidTo,
		SupersededBy: f.SupersededBy, Provenance: f.Provenance, Confidence: f.Confidence, Extractor: f.Extractor,
		State: FactLive,
	}
	switch {
	case f.Deleted:
		v.State = FactDeleted
	case f.SupersededBy != "" || f.ValidTo != nil:
		v.State = FactSuperseded
	}
	if v.Provenance == nil {
		v.Provenance = []string{}
	}
	return v
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
