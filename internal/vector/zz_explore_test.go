package vector

import (
	"testing"
	"time"
)

func TestExplore(t *testing.T) {
	const dim, n, nq = 384, 20000, 200
	sets := map[string][][]float32{
		"random":    randomVecs(newRand(10), n+nq, dim),
		"clustered": clusteredVecs(newRand(11), n+nq, dim, 50, 0.5),
		"lowrank32": lowRankVecs(newRand(12), n+nq, dim, 32, 0.5),
		"lowrank64": lowRankVecs(newRand(12), n+nq, dim, 64, 0.5),
	}
	for _, name := range []string{"clustered", "lowrank32", "lowrank64", "random"} {
		all := sets[name]
		ix := mustNew(t, Config{Dim: dim, ExactBelow: 1})
		start := time.Now()
		fill(t, ix, all[:n])
		t.Logf("%s build %v", name, time.Since(start))
		for _, ef := range []int{64, 128, 256, 512} {
			ix.cfg.EfSearch = ef
			s := time.Now()
			r := meanRecall(ix, all[n:], 10)
			t.Logf("%s ef=%d recall %.4f (search+exact %v/q)", name, ef, r, time.Since(s)/nq)
		}
	}
}
