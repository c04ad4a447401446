package memory

import (
	"errors"
	"fmt"
	"sync"
)

// ErrNotFound is returned (wrapped) when a named entry is in neither the kept
// nor the pending list of a ShortTerm.
var ErrNotFound = errors.New("memory: entry not found")

// ShortTerm is the short-term memory of one conversation: entries in arrival
// order within a token budget. When the kept entries pass the budget, the
// oldest are evicted FIFO into a pending-compression list, where they stay
// until Replace swaps them for a summary; the newest entry is always kept,
// even when it alone passes the budget. Nothing is dropped.
//
// Entry IDs are unique within a ShortTerm. All methods are safe for concurrent
// use, but a sequence of calls is not atomic: keep one writer per ShortTerm.
type ShortTerm struct {
	mu            sync.RWMutex
	budget        int
	kept          []string // ids, arrival order (oldest first)
	pending       []string // ids, eviction order (first evicted first)
	index         map[string]*slot
	tokens        int // sum of kept entries' Tokens
	pendingTokens int // sum of pending entries' Tokens
}

// slot holds one entry and which list it is in.
type slot struct {
	e       Entry
	pending bool
}

// NewShortTerm returns an empty ShortTerm with the given conversation budget in
// tokens (see Budget.Conversation). A budget below 1 is treated as 1.
func NewShortTerm(budget int) *ShortTerm {
	return &ShortTerm{budget: max(budget, 1), index: make(map[string]*slot)}
}

// SetBudget changes the budget (a value below 1 is treated as 1) and, when the
// kept entries now pass it, evicts as Store does. It returns the evicted
// entries in eviction order.
func (s *ShortTerm) SetBudget(budget int) []Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.budget = max(budget, 1)
	return s.evict()
}

// Budget returns the budget in tokens.
func (s *ShortTerm) Budget() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.budget
}

// Store appends e as the newest kept entry, then, while Tokens() passes the
// budget and more than one entry is kept, moves the oldest kept entry to the
// end of the pending list. It returns the evicted entries in eviction order.
// An entry whose ID is already held (kept or pending) is ignored, so a
// redelivered turn adds nothing; negative Tokens count as 0.
func (s *ShortTerm) Store(e Entry) []Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.index[e.ID]; ok {
		return nil
	}
	e.Tokens = max(e.Tokens, 0)
	s.index[e.ID] = &slot{e: e}
	s.kept = append(s.kept, e.ID)
	s.tokens += e.Tokens
	return s.evict()
}

// evict moves the oldest kept entries to the pending list until the kept
// entries fit the budget or only one is left. The caller holds s.mu.
func (s *ShortTerm) evict() []Entry {
	var out []Entry
	for s.tokens > s.budget && len(s.kept) > 1 {
		id := s.kept[0]
		s.kept[0] = "" // let the string go when the array is reused
		s.kept = s.kept[1:]
		sl := s.index[id]
		sl.pending = true
		s.tokens -= sl.e.Tokens
		s.pendingTokens += sl.e.Tokens
		s.pending = append(s.pending, id)
		out = append(out, sl.e)
	}
	return out
}

// Entries returns a copy of the kept entries in arrival order. The entries
// share their Provenance and Metadata with the stored ones: do not modify
// them.
func (s *ShortTerm) Entries() []Entry {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.collect(s.kept)
}

// Pending returns a copy of the evicted entries not yet replaced by a summary,
// in eviction order. The entries share their Provenance and Metadata with the
// stored ones: do not modify them.
func (s *ShortTerm) Pending() []Entry {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.collect(s.pending)
}

// collect returns the entries with the given ids. The caller holds s.mu.
func (s *ShortTerm) collect(ids []string) []Entry {
	out := make([]Entry, len(ids))
	for i, id := range ids {
		out[i] = s.index[id].e
	}
	return out
}

// Len returns the number of kept entries.
func (s *ShortTerm) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.kept)
}

// PendingLen returns the number of pending entries.
func (s *ShortTerm) PendingLen() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.pending)
}

// Tokens returns the sum of the kept entries' Tokens.
func (s *ShortTerm) Tokens() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.tokens
}

// PendingTokens returns the sum of the pending entries' Tokens.
func (s *ShortTerm) PendingTokens() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.pendingTokens
}

// Ratio returns Tokens() divided by the budget. It is above 1 only when a
// single kept entry passes the budget.
func (s *ShortTerm) Ratio() float64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return float64(s.tokens) / float64(s.budget)
}

// Has reports whether the entry with the given id is kept or pending.
func (s *ShortTerm) Has(id string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	_, ok := s.index[id]
	return ok
}

// Get returns the kept or pending entry with the given id, and whether there
// is one.
func (s *ShortTerm) Get(id string) (Entry, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	sl, ok := s.index[id]
	if !ok {
		return Entry{}, false
	}
	return sl.e, true
}

// Replace removes exactly the entries named by ids, kept or pending, inserts
// summary as the oldest kept entry (it stands for entries older than
// everything left), then evicts as Store does and returns the evicted entries.
// Repeated ids count once. It fails, changing nothing, with an error wrapping
// ErrNotFound when an id is neither kept nor pending, and with an error when
// summary.ID is already held by an entry that is not being replaced.
func (s *ShortTerm) Replace(ids []string, summary Entry) ([]Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	remove := make(map[string]struct{}, len(ids))
	for _, id := range ids {
		if _, ok := s.index[id]; !ok {
			return nil, fmt.Errorf("replacing %q: %w", id, ErrNotFound)
		}
		remove[id] = struct{}{}
	}
	if _, held := s.index[summary.ID]; held {
		if _, removed := remove[summary.ID]; !removed {
			return nil, fmt.Errorf("memory: summary id %q is already held by an entry that is not replaced", summary.ID)
		}
	}

	for id := range remove {
		sl := s.index[id]
		if sl.pending {
			s.pendingTokens -= sl.e.Tokens
		} else {
			s.tokens -= sl.e.Tokens
		}
		delete(s.index, id)
	}
	s.pending = without(s.pending, remove)
	summary.Tokens = max(summary.Tokens, 0)
	kept := make([]string, 0, len(s.kept)+1)
	kept = append(kept, summary.ID)
	for _, id := range s.kept {
		if _, ok := remove[id]; !ok {
			kept = append(kept, id)
		}
	}
	s.kept = kept
	s.index[summary.ID] = &slot{e: summary}
	s.tokens += summary.Tokens
	return s.evict(), nil
}

// without returns ids less the removed ones, reusing the array of ids.
func without(ids []string, removed map[string]struct{}) []string {
	out := ids[:0]
	for _, id := range ids {
		if _, ok := removed[id]; !ok {
			out = append(out, id)
		}
	}
	clear(ids[len(out):])
	return out
}

// Update replaces the kept or pending entry that has e's ID with e, in place,
// and adjusts the token sums (negative Tokens count as 0). It does not evict:
// call SetBudget(Budget()) afterwards when e grew. It fails with an error
// wrapping ErrNotFound when no entry has that ID.
func (s *ShortTerm) Update(e Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sl, ok := s.index[e.ID]
	if !ok {
		return fmt.Errorf("updating %q: %w", e.ID, ErrNotFound)
	}
	e.Tokens = max(e.Tokens, 0)
	if sl.pending {
		s.pendingTokens += e.Tokens - sl.e.Tokens
	} else {
		s.tokens += e.Tokens - sl.e.Tokens
	}
	sl.e = e
	return nil
}
