package vector

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// This file is the approximate index: a Hierarchical Navigable Small World graph (Malkov and
// Yashunin, arXiv:1603.09320), following hnswlib's choices (up to 2*M neighbours on the
// bottom layer and M above it, layers drawn as floor(-ln(U)/ln(M))) except that the
// neighbour-selection heuristic (algorithm 4 of the paper) keeps pruned connections to fill
// the lists.
//
// Nodes are the index's slots; the vectors stay in the index's contiguous array and the graph
// holds only links. Deleted nodes stay in the graph as tombstones: searches walk through them
// (they keep the graph connected) but never return them, and the index rebuilds the graph
// without them once they pile up.
//
// Inserting is split in two so that searches can run while a writer works: plan reads the
// graph and works out every link that changes (the expensive part, done under the writer's
// own lock only), and apply writes those links (cheap, done under the exclusive lock).

// maxLevel caps the layer a node can be drawn into; with M=2 the chance of reaching it is
// 2^-16.
const maxLevel = 16

// graph is the link structure of an HNSW index.
type graph struct {
	m, m0 int     // neighbours per node above the bottom layer, and on it
	efc   int     // EfConstruction
	ml    float64 // level multiplier, 1/ln(M)
	rng   *rand.Rand

	// links0 holds the bottom-layer links, m0+1 int32s per node: the count, then the
	// neighbours. One contiguous array keeps a node's links on a cache line or two.
	links0 []int32
	// upper holds, per node, its links on layers 1..level, m+1 int32s per layer laid out like
	// links0; nil for the ~(1-1/M) of nodes that live on the bottom layer only.
	upper [][]int32
	// upperInts counts the int32s held in upper, for Bytes.
	upperInts int

	entry int32 // the entry point, on the top layer; -1 while the graph is empty
	top   int   // the entry point's layer
}

func newGraph(cfg Config, rng *rand.Rand) *graph {
	return &graph{
		m:     cfg.M,
		m0:    2 * cfg.M,
		efc:   cfg.EfConstruction,
		ml:    1 / math.Log(float64(cfg.M)),
		rng:   rng,
		entry: -1,
	}
}

// len returns the number of nodes, tombstones included.
func (g *graph) len() int { return len(g.upper) }

// bytes returns the approximate memory held by the links.
func (g *graph) bytes() int {
	return 4*cap(g.links0) + 24*cap(g.upper) + 4*g.upperInts
}

// randomLevel draws the top layer of a new node.
func (g *graph) randomLevel() int {
	u := 1 - g.rng.Float64() // (0, 1]
	return min(int(-math.Log(u)*g.ml), maxLevel)
}

// addNode appends an unlinked node on layers 0..level and returns it. The caller holds the
// exclusive lock when the graph is published.
func (g *graph) addNode(level int) int32 {
	n := int32(len(g.upper))
	old := len(g.links0)
	g.links0 = slices.Grow(g.links0, g.m0+1)[:old+g.m0+1]
	clear(g.links0[old:])
	var up []int32
	if level > 0 {
		up = make([]int32, level*(g.m+1))
		g.upperInts += len(up)
	}
	g.upper = append(g.upper, up)
	return n
}

// level returns the top layer of node n.
func (g *graph) level(n int32) int { return len(g.upper[n]) / (g.m + 1) }

// block returns node n's link block on a layer: the count, then room for the neighbours.
func (g *graph) block(n int32, layer int) []int32 {
	if layer == 0 {
		b := int(n) * (g.m0 + 1)
		return g.links0[b : b+g.m0+1 : b+g.m0+1]
	}
	b := (layer - 1) * (g.m + 1)
	return g.upper[n][b : b+g.m+1 : b+g.m+1]
}

// neighbours returns node n's neighbours on a layer.
func (g *graph) neighbours(n int32, layer int) []int32 {
	blk := g.block(n, layer)
	return blk[1 : 1+blk[0]]
}

// maxLinks returns how many neighbours a node keeps on a layer.
func (g *graph) maxLinks(layer int) int {
	if layer == 0 {
		return g.m0
	}
	return g.m
}

// space is the index's vector storage as the graph sees it.
type space struct {
	vecs []float32
	dim  int
}

func (s space) vec(n int32) []float32 {
	o := int(n) * s.dim
	return s.vecs[o : o+s.dim : o+s.dim]
}

// scratch is the per-search working memory, pooled by the index so that a search allocates
// only its result.
type scratch struct {
	seen  []uint32 // seen[n] == epoch when node n was visited in the current layer search
	epoch uint32
	cand  []scored // max-heap of nodes still to expand
	res   []scored // min-heap of the best nodes found
	out   []scored // res, best first
}

// reset starts a layer search over a graph of n nodes.
func (s *scratch) reset(n int) {
	if len(s.seen) < n {
		s.seen = make([]uint32, n+n/4)
		s.epoch = 0
	}
	s.epoch++
	if s.epoch == 0 { // wrapped: old marks could collide with the new epoch
		clear(s.seen)
		s.epoch = 1
	}
}

// greedy walks a layer from ep towards q, moving to any more similar neighbour until none is.
func (g *graph) greedy(sp space, q []float32, ep int32, epSim float32, layer int) (int32, float32) {
	for changed := true; changed; {
		changed = false
		for _, nb := range g.neighbours(ep, layer) {
			if s := dot(q, sp.vec(nb)); s > epSim {
				ep, epSim, changed = nb, s, true
			}
		}
	}
	return ep, epSim
}

// searchLayer is the beam search of one layer (algorithm 2 of the paper) from ep, keeping the
// ef most similar nodes. Nodes marked in dead (nil when there are none) are walked through but
// not returned; with tombstones present the search goes on until it has ef live results or
// runs out of nodes, as hnswlib's does. It returns the results best first, in s.out.
func (g *graph) searchLayer(sp space, q []float32, ep int32, epSim float32, ef, layer int, dead []bool, s *scratch) []scored {
	s.reset(g.len())
	seen, epoch := s.seen, s.epoch
	cand, res := s.cand[:0], s.res[:0]

	seen[ep] = epoch
	cand = maxPush(cand, scored{epSim, ep})
	worst := float32(math.Inf(-1)) // similarity of the worst result, -Inf while there is none
	if dead == nil || !dead[ep] {
		res = minPush(res, scored{epSim, ep})
		worst = epSim
	}
	for len(cand) > 0 {
		c := cand[0]
		if c.sim < worst && (len(res) >= ef || dead == nil) {
			break // nothing left to expand can improve the results
		}
		cand = maxPop(cand)
		for _, nb := range g.neighbours(c.node, layer) {
			if seen[nb] == epoch {
				continue
			}
			seen[nb] = epoch
			sim := dot(q, sp.vec(nb))
			if len(res) >= ef && sim <= worst {
				continue
			}
			cand = maxPush(cand, scored{sim, nb})
			if dead == nil || !dead[nb] {
				res = minPush(res, scored{sim, nb})
				if len(res) > ef {
					res = minPop(res)
				}
			}
			if len(res) > 0 {
				worst = res[0].sim
			}
		}
	}
	s.cand = cand
	s.out = drainBestFirst(res, s.out)
	s.res = res
	return s.out
}

// search returns up to ef live nodes most similar to q, best first, in s.out.
func (g *graph) search(sp space, q []float32, ef int, dead []bool, s *scratch) []scored {
	if g.entry < 0 {
		return nil
	}
	ep := g.entry
	epSim := dot(q, sp.vec(ep))
	for layer := g.top; layer > 0; layer-- {
		ep, epSim = g.greedy(sp, q, ep, epSim, layer)
	}
	return g.searchLayer(sp, q, ep, epSim, ef, 0, dead, s)
}

// selectNeighbours is the paper's heuristic (algorithm 4): from candidates sorted best first
// by similarity to a base vector, keep a candidate if it is more similar to the base than to
// every candidate already kept, up to m, then fill any room left with the best of the rest.
// This spreads links across directions instead of spending them all on one dense cluster,
// which is what keeps clustered data navigable.
func selectNeighbours(sp space, cands []scored, m int, out []scored) []scored {
	out = out[:0]
	if len(cands) <= m {
		return append(out, cands...)
	}
	for _, c := range cands {
		if len(out) >= m {
			break
		}
		cv := sp.vec(c.node)
		good := true
		for _, kept := range out {
			if dot(cv, sp.vec(kept.node)) > c.sim {
				good = false
				break
			}
		}
		if good {
			out = append(out, c)
		}
	}
	// Fill the room the heuristic left with the best candidates it passed over (the paper's
	// keepPrunedConnections): fewer nodes lose their last incoming link, and recall gains a
	// little (0.946 to 0.952 at EfSearch 64 on the low-rank test data) for no memory.
	if len(out) < m {
		for _, c := range cands {
			if len(out) >= m {
				break
			}
			if !slices.ContainsFunc(out, func(o scored) bool { return o.node == c.node }) {
				out = append(out, c)
			}
		}
	}
	return out
}

// linkUpdate sets a node's neighbours on one layer.
type linkUpdate struct {
	node  int32
	layer int
	links []int32
	// base is the neighbour list the plan started from, for a node already in the graph: if
	// the list has changed by the time the update is applied (a concurrent build applied
	// another insert first), the new node is merged into the current list instead.
	base []int32
	sim  float32 // similarity of node and the inserted node, when base is set
}

// planner is the writer's working memory for inserts, reused across them.
type planner struct {
	s      scratch
	sel    []scored
	pruneC []scored
	pruneS []scored
	arena  []int32 // backing for the links of ups
	ups    []linkUpdate
}

// links copies the nodes of sel into the arena and returns the copy.
func (p *planner) links(sel []scored) []int32 {
	start := len(p.arena)
	for _, n := range sel {
		p.arena = append(p.arena, n.node)
	}
	return p.arena[start:len(p.arena):len(p.arena)]
}

// appendLinks copies cur and then extra into the arena and returns the copy.
func (p *planner) appendLinks(cur []int32, extra ...int32) []int32 {
	start := len(p.arena)
	p.arena = append(append(p.arena, cur...), extra...)
	return p.arena[start:len(p.arena):len(p.arena)]
}

// plan works out, without changing the graph, every link that inserting node x (added with
// addNode, level layers high, not yet linked) changes: its own neighbours on each layer and
// the neighbour lists of the nodes it links to, pruned back to size where they overflow.
// Tombstones take part like live nodes: they still carry the graph's navigation. The result
// is in p.ups, valid until the next plan.
func (g *graph) plan(sp space, x int32, level int, p *planner) {
	p.ups, p.arena = p.ups[:0], p.arena[:0]
	if g.entry < 0 {
		return
	}
	q := sp.vec(x)
	ep := g.entry
	epSim := dot(q, sp.vec(ep))
	for layer := g.top; layer > level; layer-- {
		ep, epSim = g.greedy(sp, q, ep, epSim, layer)
	}
	for layer := min(level, g.top); layer >= 0; layer-- {
		found := g.searchLayer(sp, q, ep, epSim, g.efc, layer, nil, &p.s)
		ep, epSim = found[0].node, found[0].sim
		p.sel = selectNeighbours(sp, found, g.m, p.sel)
		p.ups = append(p.ups, linkUpdate{node: x, layer: layer, links: p.links(p.sel)})

		for _, e := range p.sel {
			cur := g.neighbours(e.node, layer)
			p.ups = append(p.ups, linkUpdate{
				node:  e.node,
				layer: layer,
				links: g.linkBack(sp, e.node, e.sim, layer, x, p),
				base:  p.appendLinks(cur),
				sim:   e.sim,
			})
		}
	}
}

// linkBack returns, in p's arena, node e's neighbour list on a layer with x added: appended
// while there is room, else chosen afresh by the heuristic from the current list and x.
func (g *graph) linkBack(sp space, e int32, sim float32, layer int, x int32, p *planner) []int32 {
	cur := g.neighbours(e, layer)
	maxLinks := g.maxLinks(layer)
	if len(cur) < maxLinks {
		return p.appendLinks(cur, x)
	}
	ev := sp.vec(e)
	p.pruneC = append(p.pruneC[:0], scored{sim, x})
	for _, nb := range cur {
		p.pruneC = append(p.pruneC, scored{dot(ev, sp.vec(nb)), nb})
	}
	slices.SortFunc(p.pruneC, func(a, b scored) int { return cmpSim(b.sim, a.sim) })
	p.pruneS = selectNeighbours(sp, p.pruneC, maxLinks, p.pruneS)
	return p.links(p.pruneS)
}

// apply writes the links p planned for inserting node x, level layers high, and makes x the
// entry point if it reaches above the current top. A neighbour list that changed since the
// plan gets x merged into it afresh. The caller holds the exclusive lock when the graph is
// visible to anyone else.
func (g *graph) apply(sp space, x int32, level int, p *planner) {
	for _, u := range p.ups {
		links := u.links
		if u.base != nil && !slices.Equal(g.neighbours(u.node, u.layer), u.base) {
			links = g.linkBack(sp, u.node, u.sim, u.layer, x, p)
		}
		blk := g.block(u.node, u.layer)
		blk[0] = int32(len(links))
		copy(blk[1:], links)
	}
	if g.entry < 0 || level > g.top {
		g.entry, g.top = x, level
	}
}

// parallelBuildMin is the number of nodes per goroutine below which a build is not worth
// spreading across cores.
const parallelBuildMin = 2000

// build returns a graph over the n vectors of sp, inserted in slot order. With at least
// parallelBuildMin nodes for each of two or more cores, inserts run on GOMAXPROCS goroutines,
// each planning under a shared lock and applying under an exclusive one (apply merges into
// any list another insert changed meanwhile). The layers still come from rng in slot order,
// but which insert sees which is up to the scheduler, so only single-goroutine builds repeat
// exactly. p is the planner of the first goroutine.
func build(cfg Config, rng *rand.Rand, sp space, n int, p *planner) *graph {
	g := newGraph(cfg, rng)
	levels := make([]int, n)
	for i := range levels {
		levels[i] = g.randomLevel()
		g.addNode(levels[i])
	}
	insert := func(x int, p *planner) {
		g.plan(sp, int32(x), levels[x], p)
		g.apply(sp, int32(x), levels[x], p)
	}
	workers := min(runtime.GOMAXPROCS(0), n/parallelBuildMin)
	if workers < 2 {
		for x := range n {
			insert(x, p)
		}
		return g
	}

	insert(0, p) // the entry point, so that every plan has somewhere to start
	var (
		mu   sync.RWMutex
		next atomic.Int64
		wg   sync.WaitGroup
	)
	next.Store(1)
	for w := range workers {
		wp := p
		if w > 0 {
			wp = new(planner)
		}
		wg.Go(func() {
			for x := int(next.Add(1) - 1); x < n; x = int(next.Add(1) - 1) {
				mu.RLock()
				g.plan(sp, int32(x), levels[x], wp)
				mu.RUnlock()
				mu.Lock()
				g.apply(sp, int32(x), levels[x], wp)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return g
}

func cmpSim(a, b float32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
