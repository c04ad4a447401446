package rank

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestTermTableAgreesWithAMap: random inserts and removals (many collisions in small tables,
// probe runs wrapping around the end) leave the table answering like a Go map.
func TestTermTableAgreesWithAMap(t *testing.T) {
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 7))
		tt := newTermTable()
		var ts termStore
		var free []int32
		want := map[string]int32{}
		vocab := 5 + r.IntN(300)
		for step := range 4000 {
			term := fmt.Sprintf("t%d", r.IntN(vocab))
			if tid, ok := want[term]; ok && r.IntN(2) == 0 {
				tt.remove(&ts, term)
				ts.free(tid)
				free = append(free, tid)
				delete(want, term)
			} else if !ok {
				tid := int32(len(ts.refs))
				if k := len(free); k > 0 {
					tid, free = free[k-1], free[:k-1]
				}
				ts.set(tid, term)
				tt.insert(&ts, tid)
				want[term] = tid
			}
			if tt.len() != len(want) {
				t.Fatalf("seed %d step %d: len %d, want %d", seed, step, tt.len(), len(want))
			}
			if step%97 == 0 || step == 3999 {
				for i := range vocab + 10 {
					term := fmt.Sprintf("t%d", i)
					got, ok := tt.find(&ts, term)
					if w, wok := want[term]; ok != wok || (ok && got != w) {
						t.Fatalf("seed %d step %d: find(%q) = %d, %v; want %d, %v", seed, step, term, got, ok, w, wok)
					}
				}
			}
		}
	}
}
