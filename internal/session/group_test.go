package session

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/pkg/events"
	"github.com/agentmem/agentmem/pkg/memory"
)

// TestGroupCommit: commits that wait while another is written are written together as atomic
// batches, each with its own outcome: new sessions are created, updated ones advance, and the one
// another writer changed first gets ErrConflict while the others of its group are stored; every
// session reads back as committed. In buckets persisted lazily, which allow no atomic batch and
// sync nothing, the same groups are written commit by commit with the same outcomes.
func TestGroupCommit(t *testing.T) {
	for _, lazy := range []bool{false, true} {
		t.Run(fmt.Sprint("lazy=", lazy), func(t *testing.T) { testGroupCommit(t, lazy) })
	}
}

func testGroupCommit(t *testing.T, lazy bool) {
	env := brokertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	topo := events.DefaultTopology()
	topo.Lazy = lazy
	groups := int64(1)
	if lazy {
		groups = 0
	}
	if err := topo.Ensure(ctx, env.JS); err != nil {
		t.Fatal(err)
	}
	st, err := NewStore(ctx, env.JS, topo)
	if err != nil {
		t.Fatal(err)
	}
	const n = 12
	add := func(s *State, id string, seq uint64) {
		s.Add(memory.Entry{ID: id, Type: memory.Conversation, Role: "user", Tokens: 5, Seq: seq, Content: "text of " + id,
			Timestamp: time.Date(2026, 11, 30, 10, 0, int(seq), 0, time.UTC)}, 1000, "alice")
		s.Advance(seq, time.Now())
	}
	// group commits states while the committer is held busy, then leads the group itself, so that
	// every commit is written in one group.
	group := func(states []*State) []error {
		t.Helper()
		c := st.group
		c.mu.Lock()
		c.busy = true
		c.mu.Unlock()
		errs := make([]error, len(states))
		var wg sync.WaitGroup
		for i, s := range states[1:] {
			wg.Go(func() { _, errs[i+1] = st.Commit(ctx, s) })
		}
		for deadline := time.Now().Add(10 * time.Second); ; {
			c.mu.Lock()
			queued := len(c.pending)
			if queued == len(states)-1 {
				c.busy = false
			}
			c.mu.Unlock()
			if queued == len(states)-1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d commits queued", queued, len(states)-1)
			}
			<-time.After(time.Millisecond)
		}
		_, errs[0] = st.Commit(ctx, states[0])
		wg.Wait()
		return errs
	}
	states := make([]*State, n)
	for i := range states {
		if states[i], err = st.Load(ctx, Key{Tenant: "acme", Session: fmt.Sprint("s", i)}, 1000); err != nil {
			t.Fatal(err)
		}
		add(states[i], fmt.Sprint("t0-", i), 1)
	}
	before := st.group.atomic.Load()
	for i, err := range group(states) {
		if err != nil {
			t.Fatalf("creating session %d: %v", i, err)
		}
	}
	if got := st.group.atomic.Load() - before; got != groups {
		t.Fatalf("%d atomic groups for %d new sessions committed together, want %d", got, n, groups)
	}

	// Another writer advances session 5 first: its commit in the group is a conflict.
	other, err := st.Load(ctx, Key{Tenant: "acme", Session: "s5"}, 1000)
	if err != nil {
		t.Fatal(err)
	}
	add(other, "other", 2)
	if _, err := st.Commit(ctx, other); err != nil {
		t.Fatal(err)
	}
	for i := range states {
		add(states[i], fmt.Sprint("t1-", i), 2)
	}
	errs := group(states)
	for i, err := range errs {
		if i == 5 {
			if !errors.Is(err, ErrConflict) {
				t.Fatalf("session 5, changed by another writer: %v, want ErrConflict", err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("updating session %d: %v", i, err)
		}
	}
	for i := range states {
		got, err := st.Load(ctx, Key{Tenant: "acme", Session: fmt.Sprint("s", i)}, 1000)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{fmt.Sprint("t0-", i), fmt.Sprint("t1-", i)}
		if i == 5 {
			want = []string{"t0-5", "other"}
		}
		var ids []string
		for _, e := range got.Short.Entries() {
			ids = append(ids, e.ID)
		}
		if fmt.Sprint(ids) != fmt.Sprint(want) {
			t.Fatalf("session %d holds %v, want %v", i, ids, want)
		}
		if i != 5 && got.Revision() != states[i].Revision() {
			t.Fatalf("session %d: revision %d read, %d reported by the commit", i, got.Revision(), states[i].Revision())
		}
	}
	// A third round after the conflict: the others keep going from the revisions the group reported.
	for i := range states {
		if i != 5 {
			add(states[i], fmt.Sprint("t2-", i), 3)
		}
	}
	var rest []*State
	for i, s := range states {
		if i != 5 {
			rest = append(rest, s)
		}
	}
	before = st.group.atomic.Load()
	for i, err := range group(rest) {
		if err != nil {
			t.Fatalf("third round, commit %d: %v", i, err)
		}
	}
	if got := st.group.atomic.Load() - before; got != groups {
		t.Fatalf("third round: %d atomic groups, want %d", got, groups)
	}
}
