package view

import (
	"time"

	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/pkg/memory"
)

// Entry states in a Session.
const (
	// EntryKept: the entry is in the session's short-term memory.
	EntryKept = "kept"
	// EntryPending: evicted over the budget, waiting to be summarised.
	EntryPending = "pending"
	// EntryNamed: a summary whose range was named for compression and whose text has not
	// arrived yet.
	EntryNamed = "named"
)

// Named reports whether e is a summary named for compression whose text has not arrived yet
// (ingest holds it as a placeholder that stands for the entries it covers).
func Named(e memory.Entry) bool { return e.Type == memory.Summary && e.Content == "" }

// Session is a session's short-term state as ingest stored it; its JSON is the HTTP API's
// (GET /v1/tenants/{tenant}/sessions/{session}).
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
	// Entries are the pending entries, then the kept ones, in order (never nil). Their text
	// stays in the turns stream: retrieve returns it.
	Entries []Entry `json:"entries"`
	// evicted is how many of Entries come from the pending list.
	evicted int
}

// Entry is one entry of a Session.
type Entry struct {
	ID        string    `json:"id"`
	Type      string    `json:"type"`
	Role      string    `json:"role,omitempty"`
	Tokens    int       `json:"tokens"`
	Timestamp time.Time `json:"timestamp"`
	// State is EntryKept, EntryPending or EntryNamed (a named summary, in either list).
	State string `json:"state"`
	// Covers is how many turns a summary stands for.
	Covers int `json:"covers,omitempty"`
	// Stored is the entry as short-term memory holds it (its stream sequence, a summary's text
	// and provenance), for surfaces that show more of it.
	Stored memory.Entry `json:"-"`
}

// NewEntry returns the view of e, held in the pending list (pending) or among the kept entries.
func NewEntry(e memory.Entry, pending bool) Entry {
	v := Entry{ID: e.ID, Type: string(e.Type), Role: e.Role, Tokens: e.Tokens, Timestamp: e.Timestamp, State: EntryKept, Stored: e}
	if pending {
		v.State = EntryPending
	}
	if e.Type == memory.Summary {
		v.Covers = len(e.Provenance)
		if Named(e) {
			v.State = EntryNamed
		}
	}
	return v
}

// NewSession returns the view of a session's state: its header's counters and every entry of
// its short-term memory, the pending list first.
func NewSession(st *session.State) Session {
	h := st.Header
	v := Session{
		Tenant: h.Tenant, Session: h.Session, User: h.User, Tokens: h.Tokens, Budget: h.Budget, Ratio: h.Ratio(),
		Kept: h.Kept, Pending: h.Pending, PendingTokens: h.PendingTokens, Turns: h.Turns, Rejected: h.Rejected,
		Pressures: h.Pressures, Summaries: h.Summaries, Ended: h.Ended, EndedAt: h.EndedAt,
		FirstTurnAt: h.FirstTurnAt, LastTurnAt: h.LastTurnAt, Updated: h.Updated,
		Entries: []Entry{},
	}
	for _, e := range st.Short.Pending() {
		v.Entries = append(v.Entries, NewEntry(e, true))
	}
	v.evicted = len(v.Entries)
	for _, e := range st.Short.Entries() {
		v.Entries = append(v.Entries, NewEntry(e, false))
	}
	return v
}

// PendingList returns the entries of the pending list (evicted over the budget), oldest first.
func (s Session) PendingList() []Entry { return s.Entries[:s.evicted:s.evicted] }

// KeptList returns the entries short-term memory keeps, oldest first.
func (s Session) KeptList() []Entry { return s.Entries[s.evicted:] }
