package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/internal/archive"
	"github.com/agentmem/agentmem/internal/deadletter"
	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/pkg/events"
)

// Event statuses of an EventStatus.
const (
	// EventApplied: ingest applied the turn (or session end) to its session.
	EventApplied = "applied"
	// EventPending: the turns stream stored it and ingest has not decided it yet.
	EventPending = "pending"
	// EventRejected: ingest (or the NATS intake) refused it for good; DeadLetter says why.
	EventRejected = "rejected"
)

// Limits of the status routes.
const (
	// MaxEventIDBytes bounds the event id of GET …/events/{id}.
	MaxEventIDBytes = 1024
	// DefaultDeadLetters and MaxDeadLetters: how many dead letters a listing returns by default
	// and at most (?limit=).
	DefaultDeadLetters = 100
	MaxDeadLetters     = 1000
	// DeadLetterBodyBytes is how much of a dead letter's original body a reply shows.
	DeadLetterBodyBytes = 1024
	// maxPendingScan bounds how many undecided messages of a session the status reads to find an
	// event id among them.
	maxPendingScan = 10000
)

// EventStatus is the 200 body of GET /v1/tenants/{tenant}/sessions/{session}/events/{id}: what
// became of one event published to the session.
type EventStatus struct {
	ID      string `json:"id"`
	Session string `json:"session"`
	// Status is applied, pending or rejected.
	Status string `json:"status"`
	// Reason says why a rejected event was refused, or where a pending one waits.
	Reason string `json:"reason,omitempty"`
	// DeadLetter is a rejected event's dead letter.
	DeadLetter *DeadLetter `json:"dead_letter,omitempty"`
}

// DeadLetter is one dead letter as the HTTP API shows it: a message refused for good, with the
// reason and the start of its body.
type DeadLetter struct {
	// Seq is the record's sequence in the dead-letter stream (memctl dlq retry --seq).
	Seq uint64 `json:"seq"`
	// ID is the CloudEvent id of the refused message ("" when it had none).
	ID      string `json:"id"`
	Session string `json:"session"`
	// Subject is the subject the message was published to.
	Subject string `json:"subject"`
	Reason  string `json:"reason"`
	// Class is the reason's class (invalid, owner_mismatch, too_large, …), when recorded.
	Class string    `json:"class,omitempty"`
	Time  time.Time `json:"time"`
	// Delivered is how many times the message was delivered before it was refused.
	Delivered uint64 `json:"delivered"`
	// StreamSeq is the message's sequence in the turns stream (0: it was never stored there).
	StreamSeq uint64 `json:"stream_seq,omitempty"`
	// Body is the start of the original body as text (at most DeadLetterBodyBytes); BodySize is
	// its full size and Truncated says whether Body is shorter.
	Body      string `json:"body"`
	BodySize  int    `json:"body_size"`
	Truncated bool   `json:"truncated"`
}

// DeadLetters is the 200 body of GET /v1/tenants/{tenant}/dead-letters, newest first.
type DeadLetters struct {
	DeadLetters []DeadLetter `json:"dead_letters"`
}

// newDeadLetter shows a stored dead letter, its body cut to DeadLetterBodyBytes of valid text.
func newDeadLetter(l deadletter.Letter) DeadLetter {
	body, truncated := l.Body, l.Truncated
	if len(body) > DeadLetterBodyBytes {
		cut := DeadLetterBodyBytes
		for cut > DeadLetterBodyBytes-utf8.UTFMax && !utf8.RuneStart(body[cut]) {
			cut-- // not in the middle of a character
		}
		body, truncated = body[:cut], true
	}
	return DeadLetter{
		Seq: l.Seq, ID: l.EventID, Session: l.Session, Subject: l.Subject, Reason: l.Reason,
		Class: l.Class, Time: l.Time, Delivered: l.Delivered, StreamSeq: l.StreamSeq,
		Body: strings.ToValidUTF8(string(body), "\uFFFD"), BodySize: l.BodySize, Truncated: truncated,
	}
}

// getEventStatus answers what became of one event id of a session: applied when the session's
// state records it, pending when the turns stream holds it after the last message ingest
// decided, rejected when a dead letter of the session keeps it, else 404. Only the tenant's own
// session, subjects and records are read.
func (g *Gateway) getEventStatus(w http.ResponseWriter, r *http.Request, tenant string) {
	sess, id := r.PathValue("session"), r.PathValue("id")
	if err := events.ValidateToken("session", sess); err != nil {
		writeProblem(w, r, invalid(err))
		return
	}
	switch {
	case id == "":
		writeProblem(w, r, problem(http.StatusBadRequest, "id", "id must not be empty"))
		return
	case len(id) > MaxEventIDBytes || !utf8.ValidString(id):
		writeProblem(w, r, problem(http.StatusBadRequest, "id", fmt.Sprintf("id must be valid text of at most %d bytes", MaxEventIDBytes)))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), g.cfg.Timeout)
	defer cancel()
	store, _, err := g.stores(ctx)
	if err != nil {
		writeProblem(w, r, g.readProblem(err))
		return
	}
	st := session.NewDecisions(session.Key{Tenant: tenant, Session: sess})
	if _, err := store.Refresh(ctx, st); err != nil {
		writeProblem(w, r, g.readProblem(err))
		return
	}
	status := EventStatus{ID: id, Session: sess}
	if st.Seen(id) {
		status.Status = EventApplied
		writeJSON(w, http.StatusOK, status)
		return
	}
	// Everything up to LastSeq was decided; a message after it waits for ingest.
	seq, err := g.findUndecided(ctx, tenant, sess, id, st.Header.LastSeq+1)
	if err != nil {
		writeProblem(w, r, g.readProblem(err))
		return
	}
	if seq != 0 {
		status.Status = EventPending
		status.Reason = fmt.Sprintf("stored in the turns stream at sequence %d; ingest has not applied it yet", seq)
		writeJSON(w, http.StatusOK, status)
		return
	}
	l, err := g.dlq.Find(ctx, tenant, sess, id)
	if err != nil {
		writeProblem(w, r, g.readProblem(err))
		return
	}
	if l != nil {
		dl := newDeadLetter(*l)
		status.Status, status.Reason, status.DeadLetter = EventRejected, l.Reason, &dl
		writeJSON(w, http.StatusOK, status)
		return
	}
	writeProblem(w, r, problem(http.StatusNotFound, "id", fmt.Sprintf(
		"tenant %q has no event %q in session %q: not applied, not waiting in the turns stream, no dead letter", tenant, id, sess)))
}

// findUndecided returns the turns-stream sequence of the message with event id among the
// session's messages from sequence from on (at most maxPendingScan of them), or 0.
func (g *Gateway) findUndecided(ctx context.Context, tenant, sess, id string, from uint64) (uint64, error) {
	var found uint64
	n := 0
	errStop := errors.New("stop")
	reader := archive.NewReader(g.js, g.topo.TurnsStream())
	err := reader.Scan(ctx, events.SessionFilter(tenant, sess), from, 0, func(m *jetstream.RawStreamMsg) error {
		if got, ok := events.EventID(&nats.Msg{Header: m.Header, Data: m.Data}); ok && got == id {
			found = m.Sequence
			return errStop
		}
		if n++; n >= maxPendingScan {
			return errStop
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return 0, nil
		}
		return 0, err
	}
	return found, nil
}

// getDeadLetters lists the tenant's dead letters, newest first: ?session= only that session's,
// ?limit= at most that many (DefaultDeadLetters, up to MaxDeadLetters).
func (g *Gateway) getDeadLetters(w http.ResponseWriter, r *http.Request, tenant string) {
	q := r.URL.Query()
	sess := q.Get("session")
	if sess != "" {
		if err := events.ValidateToken("session", sess); err != nil {
			writeProblem(w, r, invalid(err))
			return
		}
	}
	limit := DefaultDeadLetters
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxDeadLetters {
			writeProblem(w, r, problem(http.StatusBadRequest, "limit", fmt.Sprintf("limit %q: want a whole number from 1 to %d", v, MaxDeadLetters)))
			return
		}
		limit = n
	}
	ctx, cancel := context.WithTimeout(r.Context(), g.cfg.Timeout)
	defer cancel()
	letters, err := g.dlq.List(ctx, tenant, sess, limit)
	if err != nil {
		writeProblem(w, r, g.readProblem(err))
		return
	}
	out := DeadLetters{DeadLetters: make([]DeadLetter, 0, len(letters))}
	for _, l := range letters {
		out.DeadLetters = append(out.DeadLetters, newDeadLetter(l))
	}
	writeJSON(w, http.StatusOK, out)
}
