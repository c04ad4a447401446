package ingest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func randomMembers(r *rand.Rand, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("host%d-%d-%06x", r.IntN(100), r.IntN(1<<16), r.IntN(1<<24))
	}
	return out
}

// Over many random member names, N members each own 16/N rounded down or up, and a member joining
// moves at most about twice its own share.
func TestAssignmentIsEvenAndStable(t *testing.T) {
	const partitions, trials = 16, 3000
	r := rand.New(rand.NewPCG(1, 2))
	worstMove := map[int]int{}
	for trial := range trials {
		n := 1 + trial%5
		members := randomMembers(r, n)
		a := assignment(members, partitions)
		counts := map[string]int{}
		for _, m := range a {
			counts[m]++
		}
		for _, m := range members {
			if c := counts[m]; c != partitions/n && c != (partitions+n-1)/n {
				t.Fatalf("members %v: %s owns %d of %d partitions, want %d or %d", members, m, c, partitions, partitions/n, (partitions+n-1)/n)
			}
		}
		// The same list in another order gives the same assignment.
		shuffled := slices.Clone(members)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		if !slices.Equal(assignment(shuffled, partitions), a) {
			t.Fatalf("members %v: the assignment depends on their order", members)
		}
		// A member joins: count the partitions that change owner.
		joined := append(slices.Clone(members), randomMembers(r, 1)[0])
		b := assignment(joined, partitions)
		moved := 0
		for p := range partitions {
			if a[p] != b[p] {
				moved++
			}
		}
		worstMove[n] = max(worstMove[n], moved)
		// Balance costs some moves beyond the newcomer's own share: measured over these trials at
		// most twice its share plus one (an unbalanced rendezvous hash moves exactly its share).
		if share := (partitions + n) / (n + 1); moved > 2*share+1 {
			t.Fatalf("members %v + %s: %d partitions moved, the new member's share is %d", members, joined[n], moved, share)
		}
	}
	t.Logf("most partitions moved when a member joins N members: %v", worstMove)
}

// The old hash (FNV-1a of name and number) gave two members 0 and 16 partitions a quarter of the
// time; the assignment now never does (the property above), and the weights themselves spread:
// over random pairs, each member ranks first for about half the partitions.
func TestWeightsSpread(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	lopsided := 0
	const trials = 2000
	for range trials {
		m := randomMembers(r, 2)
		first := 0
		for p := range 16 {
			if hrw(m[0], p) > hrw(m[1], p) {
				first++
			}
		}
		if first == 0 || first == 16 {
			lopsided++
		}
	}
	// With independent weights a 16–0 split has probability 2/65536 per pair.
	if lopsided > 2 {
		t.Fatalf("%d of %d random pairs rank one member first for every partition", lopsided, trials)
	}
}
