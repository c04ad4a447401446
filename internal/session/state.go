// Package session keeps each conversation's short-term state durably in JetStream KV, written
// through Store only: by ingest (Store.Commit) and by forget (Store.Forget, a tombstone in place of
// the header and the chunks purged); everyone else reads it.
//
// A session is stored as two things:
//
//   - a small header (bucket <prefix>_SESSIONS, key "<tenant>.<session>"): owner, counters,
//     watermarks (the stream sequence of the last turn decided), the pressure state and the key of
//     the newest chunk. Its size does not grow with the session. Every write is revision-checked:
//     the header write is the commit point of a batch.
//   - an append-only chain of chunks (bucket <prefix>_CHUNKS, key "<tenant>.<session>.<nuid>"):
//     each chunk lists, in order, the decisions ingest made for one batch (a turn added, a turn
//     rejected, a range named for compression, a summary applied, the session ended) and points
//     to the previous chunk. Chunks hold entry metadata, not text: the text of a turn stays in the
//     turns stream at the sequence the chunk names.
//
// Chunks are written in a compact binary form (EncodeChunk): every reader decodes all of a
// session's chunks, and decoding their JSON was a third of a cold retriever's load. Chunks of
// earlier builds, in JSON, are read as before (DecodeChunk).
//
// Replaying the chain from the first chunk rebuilds the exact short-term memory without
// re-deciding anything, so readers (the retriever, memctl) do not depend on ingest's
// configuration. A chunk is written with a unique key before the header that points at it; a
// writer that loses the header race leaves an orphan chunk that nothing points at and that
// readers never see.
package session

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/agentmem/agentmem/pkg/memory"
)

// Key identifies a session.
type Key struct {
	Tenant  string
	Session string
}

// String is the KV key of the session's header, "<tenant>.<session>".
func (k Key) String() string { return k.Tenant + "." + k.Session }

// Header is the small, fixed-size record of a session's state.
type Header struct {
	V             int    `json:"v"`
	Tenant        string `json:"tenant"`
	Session       string `json:"session"`
	User          string `json:"user,omitempty"`
	Partition     int    `json:"partition"`
	LastSeq       uint64 `json:"last_seq"`
	Turns         int    `json:"turns"`
	Rejected      int    `json:"rejected"`
	Kept          int    `json:"kept"`
	Tokens        int    `json:"tokens"`
	Pending       int    `json:"pending"`
	PendingTokens int    `json:"pending_tokens"`
	Budget        int    `json:"budget"`
	Pressures     int    `json:"pressures"`
	Above         bool   `json:"above"`
	SummaryID     string `json:"summary_id,omitempty"`
	// AwaitingSince is when the latest named range (SummaryID) was named, while its summary has
	// not arrived; zero otherwise. Ingest re-emits its pressure when it waits too long.
	AwaitingSince time.Time `json:"awaiting_since,omitzero"`
	Summaries     int       `json:"summaries"`
	Ended         bool      `json:"ended"`
	EndedAt       time.Time `json:"ended_at,omitzero"`
	FirstTurnAt   time.Time `json:"first_turn_at,omitzero"`
	LastTurnAt    time.Time `json:"last_turn_at,omitzero"`
	LastStoredAt  time.Time `json:"last_stored_at,omitzero"`
	Forgotten     time.Time `json:"forgotten,omitzero"`
	Head          string    `json:"head,omitempty"`
	Chunks        int       `json:"chunks"`
	Updated       time.Time `json:"updated,omitzero"`
}

// Ratio is the kept tokens over the budget.
func (h Header) Ratio() float64 {
	if h.Budget <= 0 {
		return 0
	}
	return float64(h.Tokens) / float64(h.Budget)
}

// Op kinds recorded in chunks.
const (
	OpAdd     = "add"
	OpReject  = "reject"
	OpName    = "name"
	OpSummary = "summary"
	OpEnd     = "end"
)

// Op is one decision of ingest, replayed in order to rebuild a session.
type Op struct {
	Kind   string        `json:"k"`
	Seq    uint64        `json:"seq,omitempty"`
	ID     string        `json:"id,omitempty"`
	Entry  *memory.Entry `json:"e,omitempty"`
	Budget int           `json:"b,omitempty"`
	User   string        `json:"u,omitempty"`
	IDs    []string      `json:"ids,omitempty"`
	Reason string        `json:"r,omitempty"`
	Time   time.Time     `json:"t,omitzero"`
}

// Chunk is one link of a session's append-only chain. Tenant and Session name the session it
// belongs to (chunks written before they were added have neither; their key alone places them).
type Chunk struct {
	Tenant  string `json:"tenant,omitempty"`
	Session string `json:"session,omitempty"`
	Prev    string `json:"prev,omitempty"`
	N       int    `json:"n"`
	Ops     []Op   `json:"ops"`
}

// ErrUnknownEntry is returned when an operation names an entry the session does not hold.
var ErrUnknownEntry = errors.New("session: unknown entry")

// State is a session's short-term memory in process: the header, the entries (kept and pending,
// text not included unless a reader filled it in), the ids seen, and the operations not yet
// committed. A State is not safe for concurrent use.
type State struct {
	Key    Key
	Header Header
	Short  *memory.ShortTerm

	rev uint64
	// replaces is the revision of a corrupt stored header (see Store.Refresh) that the first
	// commit of this state replaces, revision-checked; 0 when there is none.
	replaces uint64
	seen     map[string]uint64 // id -> stream sequence of the message that was applied
	covered  map[string][]memory.Entry
	ops      []Op
	// decisions marks a state that keeps only what was decided (NewDecisions): the header and
	// the ids applied, not the entries.
	decisions bool
	// resets counts the times the state was started again (Resets).
	resets int
}

// NewDecisions returns the state of a session for a reader that needs only its header and
// which messages were applied (AppliedAt, Seen): Short stays empty and Covered knows nothing, so
// it holds a few dozen bytes per turn instead of every entry. It cannot be committed.
func NewDecisions(key Key) *State {
	s := NewState(key, 0)
	s.decisions = true
	return s
}

// fresh returns an empty state of the same kind as s (full or decisions only), one reset later.
func (s *State) fresh() *State {
	var n *State
	if s.decisions {
		n = NewDecisions(s.Key)
	} else {
		n = NewState(s.Key, s.Short.Budget())
	}
	n.resets = s.resets + 1
	return n
}

// Resets counts how often Store.Refresh found that the stored session does not extend what s
// held and started s again: the session was forgotten (a tombstone, perhaps followed by new
// turns) or its stored state is corrupt. A reader that keeps anything of the session beside s
// must drop it when Resets changes.
func (s *State) Resets() int { return s.resets }

// NewState returns the state of a session that has never been stored.
func NewState(key Key, budget int) *State {
	return &State{
		Key:     key,
		Header:  Header{V: 1, Tenant: key.Tenant, Session: key.Session, Budget: budget, Partition: -1},
		Short:   memory.NewShortTerm(budget),
		seen:    map[string]uint64{},
		covered: map[string][]memory.Entry{},
	}
}

// Revision is the KV revision of the stored header this state is based on (0: never stored).
func (s *State) Revision() uint64 { return s.rev }

// Seen reports whether a turn or session end with this id was applied to the session.
func (s *State) Seen(id string) bool {
	_, ok := s.seen[id]
	return ok
}

// AppliedAt reports whether the message at stream sequence seq is the one applied under id (a
// late copy, or a rejected message that reused the id, is not).
func (s *State) AppliedAt(id string, seq uint64) bool {
	at, ok := s.seen[id]
	return ok && (at == seq || at == 0)
}

// Uncommitted reports how many operations wait for Store.Commit.
func (s *State) Uncommitted() int { return len(s.ops) }

// CoversPlaceholder reports whether a later placeholder covers the placeholder id, which still
// waits for its text.
func (s *State) CoversPlaceholder(id string) bool {
	for _, parts := range s.covered {
		for _, e := range parts {
			if e.ID == id {
				return e.Content == ""
			}
		}
	}
	return false
}

// Covered returns the entries a not-yet-summarised placeholder stands for (nil when the
// placeholder is summarised or unknown).
func (s *State) Covered(placeholderID string) []memory.Entry { return s.covered[placeholderID] }

// Add applies a turn entry under the given conversation budget and returns the entries evicted
// into the pending list. user becomes the session's owner when it has none.
func (s *State) Add(e memory.Entry, budget int, user string) []memory.Entry {
	op := Op{Kind: OpAdd, Seq: e.Seq, ID: e.ID, Entry: stripped(e), Budget: budget}
	if s.Header.User == "" {
		op.User = user
	}
	return s.record(op)
}

// Reject records a message of the session that was not applied, with the reason.
func (s *State) Reject(seq uint64, id, reason string) {
	s.record(Op{Kind: OpReject, Seq: seq, ID: id, Reason: reason})
}

// Name replaces the named entries (kept or pending) by a placeholder summary entry that stands
// for them until the real summary arrives. It fails, changing nothing, when an id is unknown.
func (s *State) Name(ids []string, placeholder memory.Entry) ([]memory.Entry, error) {
	for _, id := range ids {
		if !s.Short.Has(id) {
			return nil, fmt.Errorf("%w: %q", ErrUnknownEntry, id)
		}
	}
	return s.record(Op{Kind: OpName, ID: placeholder.ID, IDs: ids, Entry: stripped(placeholder)}), nil
}

// Provenance lists the turn ids behind the given entries, in order: a turn stands for itself, a
// summary (or a placeholder) for the turns it covers.
func (s *State) Provenance(ids []string) []string {
	parts := make([]memory.Entry, 0, len(ids))
	for _, id := range ids {
		if e, ok := s.Short.Get(id); ok {
			parts = append(parts, e)
		}
	}
	return provenance(parts)
}

func provenance(parts []memory.Entry) []string {
	var out []string
	for _, e := range parts {
		if e.Type == memory.Summary {
			out = append(out, e.Provenance...)
			continue
		}
		out = append(out, e.ID)
	}
	return out
}

// ApplySummary fills in the text of a placeholder (or of a placeholder that a later one already
// covers). The placeholder keeps its accounted tokens, so the budget arithmetic does not depend on
// when the summary arrives.
// When it is the summary the session waits for (the latest named range), the session stops
// waiting.
func (s *State) ApplySummary(sum memory.Entry) {
	s.record(Op{Kind: OpSummary, ID: sum.ID, Entry: stripped(sum)})
	if sum.ID == s.Header.SummaryID {
		s.Header.AwaitingSince = time.Time{}
	}
}

// AwaitSummary records that the latest named range waits for its summary since storedAt.
func (s *State) AwaitSummary(storedAt time.Time) { s.Header.AwaitingSince = storedAt }

// PlaceIn records the partition the session is stored in, the first time it is known.
func (s *State) PlaceIn(partition int) {
	if s.Header.Partition < 0 {
		s.Header.Partition = partition
	}
}

// End records that the session ended (by the agent or after the idle time) with the message at
// stream sequence seq.
func (s *State) End(id string, seq uint64, at time.Time) {
	s.record(Op{Kind: OpEnd, ID: id, Seq: seq, Time: at})
}

// SetAbove records whether the session sits at or above its pressure threshold.
func (s *State) SetAbove(above bool) { s.Header.Above = above }

// Advance moves the session's watermark to the stream message seq stored at storedAt.
func (s *State) Advance(seq uint64, storedAt time.Time) {
	if seq > s.Header.LastSeq {
		s.Header.LastSeq = seq
	}
	if storedAt.After(s.Header.LastStoredAt) {
		s.Header.LastStoredAt = storedAt
	}
}

// decide applies op to a decisions-only state: the ids applied and the header's counts.
func (s *State) decide(op Op) {
	h := &s.Header
	switch op.Kind {
	case OpAdd:
		if op.Entry == nil {
			return
		}
		if op.User != "" && h.User == "" {
			h.User = op.User
		}
		s.seen[op.Entry.ID] = op.Seq
		h.Turns++
		h.Ended = false
	case OpReject:
		h.Rejected++
	case OpName:
		if op.Entry != nil {
			h.Pressures++
			h.SummaryID = op.ID
		}
	case OpSummary:
		if op.Entry != nil {
			h.Summaries++
		}
	case OpEnd:
		s.seen[op.ID] = op.Seq
		h.Ended = true
		h.EndedAt = op.Time
	}
}

func (s *State) record(op Op) []memory.Entry {
	evicted := s.apply(op)
	s.ops = append(s.ops, op)
	return evicted
}

// apply changes the state by one operation; it is used both live and when replaying chunks, so
// it never decides anything that the operation does not say.
func (s *State) apply(op Op) []memory.Entry {
	h := &s.Header
	if s.decisions {
		s.decide(op)
		return nil
	}
	switch op.Kind {
	case OpAdd:
		if op.Entry == nil {
			return nil
		}
		if op.User != "" && h.User == "" {
			h.User = op.User
		}
		var evicted []memory.Entry
		if op.Budget > 0 && op.Budget != s.Short.Budget() {
			evicted = append(evicted, s.Short.SetBudget(op.Budget)...)
			h.Budget = op.Budget
		}
		e := *op.Entry
		evicted = append(evicted, s.Short.Store(e)...)
		s.seen[e.ID] = op.Seq
		h.Turns++
		h.Ended = false
		if h.FirstTurnAt.IsZero() || e.Timestamp.Before(h.FirstTurnAt) {
			h.FirstTurnAt = e.Timestamp
		}
		if e.Timestamp.After(h.LastTurnAt) {
			h.LastTurnAt = e.Timestamp
		}
		s.syncCounters()
		return evicted
	case OpReject:
		h.Rejected++
	case OpName:
		if op.Entry == nil {
			return nil
		}
		parts := make([]memory.Entry, 0, len(op.IDs))
		for _, id := range op.IDs {
			if e, ok := s.Short.Get(id); ok {
				parts = append(parts, e)
			}
		}
		placeholder := *op.Entry
		placeholder.Provenance = provenance(parts)
		evicted, err := s.Short.Replace(op.IDs, placeholder)
		if err != nil {
			return nil
		}
		s.covered[op.ID] = parts
		h.Pressures++
		h.SummaryID = op.ID
		s.syncCounters()
		return evicted
	case OpSummary:
		if op.Entry == nil {
			return nil
		}
		sum := *op.Entry
		if cur, ok := s.Short.Get(sum.ID); ok {
			sum.Provenance, sum.Tokens = cur.Provenance, cur.Tokens
			_ = s.Short.Update(sum)
		}
		delete(s.covered, sum.ID)
		for _, parts := range s.covered {
			for i := range parts {
				if parts[i].ID == sum.ID {
					sum.Provenance, sum.Tokens = parts[i].Provenance, parts[i].Tokens
					parts[i] = sum
				}
			}
		}
		h.Summaries++
		s.syncCounters()
	case OpEnd:
		s.seen[op.ID] = op.Seq
		h.Ended = true
		h.EndedAt = op.Time
	}
	return nil
}

func (s *State) syncCounters() {
	h := &s.Header
	h.Kept = s.Short.Len()
	h.Tokens = s.Short.Tokens()
	h.Pending = s.Short.PendingLen()
	h.PendingTokens = s.Short.PendingTokens()
	h.Budget = s.Short.Budget()
}

// stripped copies an entry without its text and metadata: chunks hold decisions, the turns
// stream holds the text.
func stripped(e memory.Entry) *memory.Entry {
	c := e
	if c.Type != memory.Summary || c.Content == "" {
		c.Content = ""
	}
	c.Metadata = nil
	c.Provenance = nil
	if c.Type == memory.Summary {
		c.Metadata = e.Metadata
	}
	return &c
}

// SummaryID derives a summary's id from the turn ids it covers, so that the same turns always
// give the same summary, whichever worker makes it and however often.
func SummaryID(key Key, turnIDs []string) string {
	h := sha256.New()
	h.Write([]byte(key.Tenant))
	h.Write([]byte{0})
	h.Write([]byte(key.Session))
	for _, id := range turnIDs {
		h.Write([]byte{0})
		h.Write([]byte(id))
	}
	return "sum_" + hex.EncodeToString(h.Sum(nil))[:32]
}
