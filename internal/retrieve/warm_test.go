package retrieve

import (
	"slices"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/session"
)

// The warmer's notes: a session is due once quiet has passed since its last commit, oldest
// first; the pipeline is busy within quiet of any commit; a tombstone drops its session; a
// session put back by renote is due at once, unless a commit noted it since.
func TestWarmerNotes(t *testing.T) {
	w := newWarmer(time.Second)
	t0 := time.Unix(1_000, 0)
	a, b, c := session.Key{Tenant: "acme", Session: "a"}, session.Key{Tenant: "acme", Session: "b"}, session.Key{Tenant: "acme", Session: "c"}
	w.note(b, false, t0)
	w.note(a, false, t0.Add(100*time.Millisecond))
	w.note(c, false, t0.Add(200*time.Millisecond))
	w.note(c, true, t0.Add(300*time.Millisecond)) // forgotten
	if !w.busy(t0.Add(1200*time.Millisecond)) || w.busy(t0.Add(1300*time.Millisecond)) {
		t.Fatal("busy should hold until a second after the last commit (the tombstone's) and no longer")
	}
	if got := w.due(t0.Add(900 * time.Millisecond)); len(got) != 0 {
		t.Fatalf("due before a second of quiet: %v", got)
	}
	if got := w.due(t0.Add(1100 * time.Millisecond)); !slices.Equal(got, []session.Key{b, a}) {
		t.Fatalf("due %v, want b then a (oldest commit first), and not the forgotten c", got)
	}
	if got := w.due(t0.Add(time.Hour)); len(got) != 0 {
		t.Fatalf("due again: %v", got)
	}
	w.note(a, false, time.Now())
	w.renote([]session.Key{a, b})
	got := w.due(time.Now())
	if !slices.Equal(got, []session.Key{b}) {
		t.Fatalf("after renote, due %v, want b only (a was committed since)", got)
	}
}
