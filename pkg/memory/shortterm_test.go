package memory

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
)

func turn(id string, tokens int) Entry {
	return Entry{ID: id, Type: Conversation, Role: "user", Content: "content of " + id, Tokens: tokens}
}

func ids(es []Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.ID
	}
	return out
}

func sumTokens(es []Entry) int {
	n := 0
	for _, e := range es {
		n += e.Tokens
	}
	return n
}

// state is everything observable about a ShortTerm, for before/after checks.
type state struct {
	Budget, Tokens, PendingTokens, Len, PendingLen int
	Kept, Pending                                  []Entry
}

func snapshot(s *ShortTerm) state {
	return state{s.Budget(), s.Tokens(), s.PendingTokens(), s.Len(), s.PendingLen(), s.Entries(), s.Pending()}
}

func wantIDs(t *testing.T, what string, got []Entry, want ...string) {
	t.Helper()
	if g := ids(got); !slices.Equal(g, want) && !(len(g) == 0 && len(want) == 0) {
		t.Fatalf("%s = %v, want %v", what, g, want)
	}
}

func TestShortTermStoreEvictsFIFO(t *testing.T) {
	s := NewShortTerm(10)
	wantIDs(t, "evicted", s.Store(turn("a", 4)))
	wantIDs(t, "evicted", s.Store(turn("b", 4)))
	wantIDs(t, "evicted", s.Store(turn("c", 4)), "a")
	wantIDs(t, "kept", s.Entries(), "b", "c")
	wantIDs(t, "pending", s.Pending(), "a")
	if s.Tokens() != 8 || s.PendingTokens() != 4 || s.Len() != 2 || s.PendingLen() != 1 {
		t.Fatalf("tokens %d pending %d len %d pendingLen %d", s.Tokens(), s.PendingTokens(), s.Len(), s.PendingLen())
	}
	if r := s.Ratio(); r != 0.8 {
		t.Fatalf("Ratio() = %v, want 0.8", r)
	}
	// Filling exactly to the budget does not evict.
	wantIDs(t, "evicted", s.Store(turn("d", 2)))
	if s.Tokens() != 10 {
		t.Fatalf("Tokens() = %d, want 10", s.Tokens())
	}
	// One entry evicts several.
	wantIDs(t, "evicted", s.Store(turn("e", 9)), "b", "c", "d")
	wantIDs(t, "pending", s.Pending(), "a", "b", "c", "d")
	wantIDs(t, "kept", s.Entries(), "e")
}

func TestShortTermOversizedEntryStays(t *testing.T) {
	s := NewShortTerm(10)
	s.Store(turn("a", 3))
	wantIDs(t, "evicted", s.Store(turn("big", 25)), "a")
	wantIDs(t, "kept", s.Entries(), "big")
	if s.Tokens() != 25 || s.Ratio() != 2.5 {
		t.Fatalf("Tokens() = %d, Ratio() = %v", s.Tokens(), s.Ratio())
	}
	wantIDs(t, "evicted", s.Store(turn("b", 1)), "big")
	wantIDs(t, "kept", s.Entries(), "b")
}

func TestShortTermStoreIgnoresHeldID(t *testing.T) {
	s := NewShortTerm(5)
	s.Store(turn("a", 3))
	s.Store(turn("b", 3)) // evicts a
	before := snapshot(s)
	for _, id := range []string{"a", "b"} {
		dup := turn(id, 100)
		dup.Content = "changed"
		if ev := s.Store(dup); ev != nil {
			t.Fatalf("Store(duplicate %s) evicted %v", id, ids(ev))
		}
	}
	if after := snapshot(s); !reflect.DeepEqual(before, after) {
		t.Fatalf("duplicate Store changed state:\nbefore %+v\nafter  %+v", before, after)
	}
}

func TestShortTermNegativeTokensCountAsZero(t *testing.T) {
	s := NewShortTerm(5)
	s.Store(turn("a", -7))
	if s.Tokens() != 0 {
		t.Fatalf("Tokens() = %d, want 0", s.Tokens())
	}
	if e, _ := s.Get("a"); e.Tokens != 0 {
		t.Fatalf("stored Tokens = %d, want 0", e.Tokens)
	}
}

func TestShortTermHasGet(t *testing.T) {
	s := NewShortTerm(4)
	s.Store(turn("a", 3))
	s.Store(turn("b", 3)) // a pending, b kept
	for _, id := range []string{"a", "b"} {
		if !s.Has(id) {
			t.Errorf("Has(%q) = false", id)
		}
		e, ok := s.Get(id)
		if !ok || e.ID != id || e.Content != "content of "+id {
			t.Errorf("Get(%q) = %+v, %v", id, e, ok)
		}
	}
	if s.Has("zz") {
		t.Error("Has(missing) = true")
	}
	if e, ok := s.Get("zz"); ok || !reflect.DeepEqual(e, Entry{}) {
		t.Errorf("Get(missing) = %+v, %v", e, ok)
	}
}

func TestShortTermSetBudget(t *testing.T) {
	s := NewShortTerm(100)
	for i := range 5 {
		s.Store(turn(fmt.Sprint(i), 10))
	}
	wantIDs(t, "evicted", s.SetBudget(25), "0", "1", "2")
	if s.Budget() != 25 || s.Tokens() != 20 {
		t.Fatalf("Budget() = %d, Tokens() = %d", s.Budget(), s.Tokens())
	}
	wantIDs(t, "evicted", s.SetBudget(1000))
	wantIDs(t, "pending", s.Pending(), "0", "1", "2") // raising the budget brings nothing back
	wantIDs(t, "evicted", s.SetBudget(0), "3")
	if s.Budget() != 1 {
		t.Fatalf("Budget() after SetBudget(0) = %d, want 1", s.Budget())
	}
	wantIDs(t, "kept", s.Entries(), "4")
	if NewShortTerm(-5).Budget() != 1 {
		t.Fatal("NewShortTerm(-5).Budget() != 1")
	}
}

func TestShortTermReplace(t *testing.T) {
	setup := func() *ShortTerm {
		s := NewShortTerm(10)
		for _, id := range []string{"a", "b", "c", "d", "e"} {
			s.Store(turn(id, 3))
		} // pending a b; kept c d e (9)
		return s
	}
	sum := func(id string, tokens int) Entry {
		return Entry{ID: id, Type: Summary, Content: "summary", Tokens: tokens, Provenance: []string{"a", "b"}}
	}

	t.Run("pending entries", func(t *testing.T) {
		s := setup()
		ev, err := s.Replace([]string{"a", "b"}, sum("s1", 1))
		if err != nil {
			t.Fatal(err)
		}
		wantIDs(t, "evicted", ev)
		wantIDs(t, "kept", s.Entries(), "s1", "c", "d", "e")
		wantIDs(t, "pending", s.Pending())
		if s.Tokens() != 10 || s.PendingTokens() != 0 || s.Has("a") || s.Has("b") {
			t.Fatalf("Tokens %d PendingTokens %d", s.Tokens(), s.PendingTokens())
		}
	})

	t.Run("pending and kept entries", func(t *testing.T) {
		s := setup()
		ev, err := s.Replace([]string{"a", "b", "c", "c"}, sum("s1", 2))
		if err != nil {
			t.Fatal(err)
		}
		wantIDs(t, "evicted", ev)
		wantIDs(t, "kept", s.Entries(), "s1", "d", "e")
		if s.Tokens() != 8 {
			t.Fatalf("Tokens() = %d, want 8", s.Tokens())
		}
	})

	t.Run("summary at the front is evicted first", func(t *testing.T) {
		s := setup()
		ev, err := s.Replace([]string{"a"}, sum("s1", 4))
		if err != nil {
			t.Fatal(err)
		}
		wantIDs(t, "evicted", ev, "s1") // 4+9 > 10: the summary is the oldest kept entry
		wantIDs(t, "pending", s.Pending(), "b", "s1")
		wantIDs(t, "kept", s.Entries(), "c", "d", "e")
	})

	t.Run("no ids inserts the summary", func(t *testing.T) {
		s := setup()
		if _, err := s.Replace(nil, sum("s1", 1)); err != nil {
			t.Fatal(err)
		}
		wantIDs(t, "kept", s.Entries(), "s1", "c", "d", "e")
	})

	t.Run("summary may reuse a replaced id", func(t *testing.T) {
		s := setup()
		if _, err := s.Replace([]string{"a", "b"}, sum("a", 1)); err != nil {
			t.Fatal(err)
		}
		wantIDs(t, "kept", s.Entries(), "a", "c", "d", "e")
		if e, _ := s.Get("a"); e.Type != Summary {
			t.Fatalf("Get(a) = %+v, want the summary", e)
		}
	})

	for _, tc := range []struct {
		name     string
		ids      []string
		summary  Entry
		notFound bool
		mention  string
	}{
		{"missing id", []string{"a", "nope", "b"}, sum("s1", 1), true, `"nope"`},
		{"already replaced id", []string{"a", "a2"}, sum("s1", 1), true, `"a2"`},
		{"summary id held by a kept entry", []string{"a"}, sum("e", 1), false, `"e"`},
		{"summary id held by a pending entry", []string{"a"}, sum("b", 1), false, `"b"`},
	} {
		t.Run("error leaves state unchanged/"+tc.name, func(t *testing.T) {
			s := setup()
			before := snapshot(s)
			ev, err := s.Replace(tc.ids, tc.summary)
			if err == nil {
				t.Fatalf("Replace = %v, nil; want an error", ids(ev))
			}
			if errors.Is(err, ErrNotFound) != tc.notFound {
				t.Errorf("errors.Is(%v, ErrNotFound) = %v, want %v", err, !tc.notFound, tc.notFound)
			}
			if !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("error %q does not name %s", err, tc.mention)
			}
			if ev != nil {
				t.Errorf("evicted %v on error", ids(ev))
			}
			if after := snapshot(s); !reflect.DeepEqual(before, after) {
				t.Fatalf("state changed:\nbefore %+v\nafter  %+v", before, after)
			}
		})
	}
}

func TestShortTermUpdate(t *testing.T) {
	s := NewShortTerm(10)
	s.Store(turn("a", 4))
	s.Store(turn("b", 4))
	s.Store(turn("c", 4)) // a pending
	up := turn("a", 1)
	up.Content = "shorter"
	if err := s.Update(up); err != nil {
		t.Fatal(err)
	}
	if s.PendingTokens() != 1 {
		t.Fatalf("PendingTokens() = %d, want 1", s.PendingTokens())
	}
	if e, _ := s.Get("a"); e.Content != "shorter" {
		t.Fatalf("Get(a).Content = %q", e.Content)
	}
	if err := s.Update(turn("b", 9)); err != nil {
		t.Fatal(err)
	}
	if s.Tokens() != 13 {
		t.Fatalf("Tokens() = %d, want 13", s.Tokens())
	}
	wantIDs(t, "kept (Update does not evict)", s.Entries(), "b", "c")
	wantIDs(t, "evicted by SetBudget(Budget())", s.SetBudget(s.Budget()), "b")
	wantIDs(t, "pending", s.Pending(), "a", "b") // position kept in place

	before := snapshot(s)
	err := s.Update(turn("nope", 1))
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("Update(missing) = %v, want ErrNotFound naming the id", err)
	}
	if after := snapshot(s); !reflect.DeepEqual(before, after) {
		t.Fatal("failed Update changed state")
	}
}

func TestShortTermReturnsCopies(t *testing.T) {
	s := NewShortTerm(3)
	s.Store(turn("a", 2))
	s.Store(turn("b", 2))
	kept, pending := s.Entries(), s.Pending()
	kept[0].Content, pending[0].Content = "x", "y"
	if e, _ := s.Get("b"); e.Content != "content of b" {
		t.Fatal("Entries() shares its slice with the ShortTerm")
	}
	if e, _ := s.Get("a"); e.Content != "content of a" {
		t.Fatal("Pending() shares its slice with the ShortTerm")
	}
}

func TestShortTermConcurrentReaders(t *testing.T) {
	s := NewShortTerm(50)
	var wg sync.WaitGroup
	done := make(chan struct{})
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				if k := s.Entries(); len(k) > 1 && sumTokens(k) > 50 {
					errs <- fmt.Errorf("reader saw %d kept tokens over a budget of 50", sumTokens(k))
					return
				}
				s.Has("5")
				s.Ratio()
			}
		}()
	}
	for i := range 500 {
		s.Store(turn(fmt.Sprint(i), i%20))
		if i%50 == 49 {
			if _, err := s.Replace(ids(s.Pending()), Entry{ID: fmt.Sprint("s", i), Type: Summary, Tokens: 3}); err != nil {
				t.Error(err)
			}
		}
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// model is a naive ShortTerm written straight from the specification, used as
// the oracle of the property test.
type model struct {
	budget        int
	kept, pending []Entry
}

func (m *model) held(id string) bool {
	return slices.ContainsFunc(m.kept, func(e Entry) bool { return e.ID == id }) ||
		slices.ContainsFunc(m.pending, func(e Entry) bool { return e.ID == id })
}

func (m *model) evict() []Entry {
	var out []Entry
	for sumTokens(m.kept) > m.budget && len(m.kept) > 1 {
		out = append(out, m.kept[0])
		m.pending = append(m.pending, m.kept[0])
		m.kept = m.kept[1:]
	}
	return out
}

func (m *model) store(e Entry) []Entry {
	if m.held(e.ID) {
		return nil
	}
	m.kept = append(m.kept, e)
	return m.evict()
}

func (m *model) replace(ids []string, summary Entry) ([]Entry, bool) {
	for _, id := range ids {
		if !m.held(id) {
			return nil, false
		}
	}
	if m.held(summary.ID) && !slices.Contains(ids, summary.ID) {
		return nil, false
	}
	drop := func(e Entry) bool { return slices.Contains(ids, e.ID) }
	m.kept = append([]Entry{summary}, slices.DeleteFunc(slices.Clone(m.kept), drop)...)
	m.pending = slices.DeleteFunc(slices.Clone(m.pending), drop)
	return m.evict(), true
}

// TestShortTermProperties runs many random sequences of Store, Replace and
// SetBudget, with entries from 0 tokens to several times the budget, and after
// every step checks the invariants and compares with the naive model.
func TestShortTermProperties(t *testing.T) {
	seeds, steps := 80, 200
	if testing.Short() {
		seeds = 30
	}
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
		budget := 1 + rng.IntN(200)
		s, m := NewShortTerm(budget), &model{budget: budget}

		stored := map[string]Entry{} // every entry ever stored, summaries included
		removed := map[string]bool{} // ids taken out by Replace
		arrival := map[string]int{}  // arrival rank of every turn
		var lastStored string
		next := 0

		fail := func(step int, op, format string, args ...any) {
			t.Helper()
			t.Fatalf("seed %d step %d (%s): %s", seed, step, op, fmt.Sprintf(format, args...))
		}

		for step := range steps {
			var op string
			var gotEv, wantEv []Entry
			switch r := rng.IntN(100); {
			case r < 65: // store a new turn
				tokens := rng.IntN(m.budget/3 + 2)
				switch rng.IntN(10) {
				case 0:
					tokens = 0
				case 1:
					tokens = m.budget + rng.IntN(3*m.budget+1) // bigger than the budget
				}
				e := turn(fmt.Sprintf("t%d", next), tokens)
				next++
				op = fmt.Sprintf("Store(%s, %d)", e.ID, tokens)
				gotEv, wantEv = s.Store(e), m.store(e)
				stored[e.ID], arrival[e.ID], lastStored = e, len(arrival), e.ID
			case r < 70: // store a held id again: ignored
				held := append(ids(m.kept), ids(m.pending)...)
				if len(held) == 0 {
					continue
				}
				e := turn(held[rng.IntN(len(held))], rng.IntN(50))
				op = "Store(duplicate " + e.ID + ")"
				gotEv, wantEv = s.Store(e), m.store(e)
			case r < 90: // replace some pending (and maybe kept) entries
				var names []string
				for _, e := range m.pending {
					if rng.IntN(4) > 0 {
						names = append(names, e.ID)
					}
				}
				for _, e := range m.kept {
					if rng.IntN(5) == 0 {
						names = append(names, e.ID)
					}
				}
				bad := rng.IntN(8) == 0
				if bad {
					names = append(names, fmt.Sprintf("missing%d", step))
				}
				sum := Entry{ID: fmt.Sprintf("s%d", next), Type: Summary, Tokens: rng.IntN(m.budget/2 + 2)}
				if rng.IntN(20) == 0 && len(m.kept) > 0 { // a summary id that is already held
					sum.ID = m.kept[rng.IntN(len(m.kept))].ID
				}
				next++
				op = fmt.Sprintf("Replace(%v, %s/%d)", names, sum.ID, sum.Tokens)
				before := snapshot(s)
				var err error
				gotEv, err = s.Replace(names, sum)
				var ok bool
				wantEv, ok = m.replace(names, sum)
				if ok != (err == nil) {
					fail(step, op, "error %v, model says ok=%v", err, ok)
				}
				if err != nil {
					if bad && !errors.Is(err, ErrNotFound) {
						fail(step, op, "error %v does not wrap ErrNotFound", err)
					}
					if after := snapshot(s); !reflect.DeepEqual(before, after) {
						fail(step, op, "failed Replace changed state")
					}
					break
				}
				for _, id := range names {
					if id != sum.ID {
						removed[id] = true
					}
				}
				delete(removed, sum.ID)
				stored[sum.ID] = sum
			default: // change the budget, sometimes to nothing
				b := rng.IntN(250) - 10
				op = fmt.Sprintf("SetBudget(%d)", b)
				gotEv = s.SetBudget(b)
				m.budget = max(b, 1)
				wantEv = m.evict()
			}

			kept, pending := s.Entries(), s.Pending()

			// Same behaviour as the model, evictions included.
			if !slices.Equal(ids(gotEv), ids(wantEv)) {
				fail(step, op, "evicted %v, model %v", ids(gotEv), ids(wantEv))
			}
			if !reflect.DeepEqual(kept, m.kept) && !(len(kept) == 0 && len(m.kept) == 0) {
				fail(step, op, "kept %v, model %v", ids(kept), ids(m.kept))
			}
			if !reflect.DeepEqual(pending, m.pending) && !(len(pending) == 0 && len(m.pending) == 0) {
				fail(step, op, "pending %v, model %v", ids(pending), ids(m.pending))
			}

			// The budget holds unless one entry is alone.
			if s.Budget() != m.budget {
				fail(step, op, "Budget() = %d, want %d", s.Budget(), m.budget)
			}
			if s.Tokens() > s.Budget() && len(kept) != 1 {
				fail(step, op, "%d kept entries hold %d tokens over a budget of %d", len(kept), s.Tokens(), s.Budget())
			}

			// Sums and lengths agree with the lists.
			if s.Tokens() != sumTokens(kept) || s.PendingTokens() != sumTokens(pending) {
				fail(step, op, "Tokens() %d PendingTokens() %d, recomputed %d %d",
					s.Tokens(), s.PendingTokens(), sumTokens(kept), sumTokens(pending))
			}
			if s.Len() != len(kept) || s.PendingLen() != len(pending) {
				fail(step, op, "Len() %d PendingLen() %d, lists %d %d", s.Len(), s.PendingLen(), len(kept), len(pending))
			}
			if want := float64(s.Tokens()) / float64(s.Budget()); s.Ratio() != want {
				fail(step, op, "Ratio() = %v, want %v", s.Ratio(), want)
			}

			// Nothing is lost or duplicated: kept + pending + replaced = stored.
			seen := map[string]bool{}
			for _, e := range append(slices.Clone(kept), pending...) {
				if seen[e.ID] {
					fail(step, op, "id %s held twice", e.ID)
				}
				if removed[e.ID] {
					fail(step, op, "replaced id %s still held", e.ID)
				}
				seen[e.ID] = true
				if !reflect.DeepEqual(e, stored[e.ID]) {
					fail(step, op, "entry %s changed: %+v, stored %+v", e.ID, e, stored[e.ID])
				}
				if step%10 == 0 {
					if got, ok := s.Get(e.ID); !ok || !reflect.DeepEqual(got, e) || !s.Has(e.ID) {
						fail(step, op, "Get/Has(%s) disagree with the lists", e.ID)
					}
				}
			}
			for id := range stored {
				if seen[id] == removed[id] {
					fail(step, op, "id %s: held=%v replaced=%v; want exactly one", id, seen[id], removed[id])
				}
			}
			for id := range removed {
				if s.Has(id) {
					fail(step, op, "Has(%s) after it was replaced", id)
				}
			}

			// Arrival order: pending turns, then kept turns, oldest first; summaries
			// only at the front of the kept list.
			last := -1
			for _, e := range append(slices.Clone(pending), kept...) {
				if e.Type == Summary {
					continue
				}
				if arrival[e.ID] <= last {
					fail(step, op, "turn %s out of arrival order in pending %v kept %v", e.ID, ids(pending), ids(kept))
				}
				last = arrival[e.ID]
			}
			inTurns := false
			for _, e := range kept {
				if e.Type == Summary && inTurns {
					fail(step, op, "summary %s after a turn in kept %v", e.ID, ids(kept))
				}
				inTurns = inTurns || e.Type != Summary
			}

			// The newest stored entry always stays (unless replaced since).
			if strings.HasPrefix(op, "Store(t") && (len(kept) == 0 || kept[len(kept)-1].ID != lastStored) {
				fail(step, op, "newest entry %s not kept last: %v", lastStored, ids(kept))
			}
		}
	}
}

func ExampleShortTerm() {
	s := NewShortTerm(10) // a tiny budget, in tokens
	s.Store(Entry{ID: "t1", Type: Conversation, Role: "user", Content: "hi", Tokens: 6})
	evicted := s.Store(Entry{ID: "t2", Type: Conversation, Role: "assistant", Content: "hello", Tokens: 6})
	fmt.Println("evicted:", evicted[0].ID, "kept:", s.Len(), "pending:", s.PendingLen())

	// The compressor summarised t1: the summary takes its place.
	if _, err := s.Replace([]string{"t1"}, Entry{ID: "s1", Type: Summary, Content: "greeting", Tokens: 2}); err != nil {
		fmt.Println(err)
	}
	for _, e := range s.Entries() {
		fmt.Println(e.ID, e.Type, e.Tokens)
	}
	fmt.Printf("tokens %d of %d (%.0f%%)\n", s.Tokens(), s.Budget(), 100*s.Ratio())
	// Output:
	// evicted: t1 kept: 1 pending: 1
	// s1 SUMMARY 2
	// t2 CONVERSATION 6
	// tokens 8 of 10 (80%)
}
