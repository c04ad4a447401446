package retrieve

import (
	"context"
	"runtime/metrics"
	"time"
	"unsafe"

	"github.com/agentmem/agentmem/internal/footprint"
	"github.com/agentmem/agentmem/pkg/memory"
)

// What a view holds is counted as it changes, in atomics that the memory cap (userCache) and the
// footprint report (package footprint, on /metrics and in the inspector) read without the
// view's lock: a view being loaded holds its lock for the whole load.

// entryBytes is what an archived turn costs a view besides its text and id: its memory.Entry in
// the archive map, with the map's share of the key and control bytes at its load factor.
const entryBytes = int64(unsafe.Sizeof(memory.Entry{})+unsafe.Sizeof("")) * 8 / 7

// archivedBytes is what the view counts for an archived turn (see userView.bytes).
func archivedBytes(e memory.Entry) int64 { return int64(len(e.Content)+len(e.ID)) + entryBytes }

// addEntries records n entries (turns, facts, summaries) of b bytes added (removed when
// negative).
func (u *userView) addEntries(n, b int64) {
	u.entries.Add(n)
	u.entryBytes.Add(b)
	u.bytes.Add(b)
}

// addVectors records vectors of b bytes added.
func (u *userView) addVectors(b int64) {
	u.vecBytes.Add(b)
	u.bytes.Add(b)
}

// noteIndexes records the indexes' size after a change (rank.Index.Bytes), the user's graph's
// (graph.View.Bytes) counted with them.
func (u *userView) noteIndexes() {
	n := int64(u.archIdx.Bytes() + u.longIdx.Bytes() + u.graph.Bytes())
	u.bytes.Add(n - u.indexBytes.Swap(n))
}

// viewUsage is the memory of the cached user views, summed.
type viewUsage struct {
	views, entries, vectors                 int64
	total, entryBytes, indexBytes, vecBytes int64
}

func (c *userCache) usage() viewUsage {
	c.mu.Lock()
	defer c.mu.Unlock()
	var u viewUsage
	for el := c.order.Front(); el != nil; el = el.Next() {
		v := el.Value.(*userView)
		u.views++
		u.entries += v.entries.Load()
		u.total += v.bytes.Load()
		u.entryBytes += v.entryBytes.Load()
		u.indexBytes += v.indexBytes.Load()
		u.vecBytes += v.vecBytes.Load()
		u.vectors += int64(v.vecs.len())
	}
	return u
}

// usage is the memory of the cached session views (the short source), summed.
func (c *viewCache) usage() (views, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for el := c.order.Front(); el != nil; el = el.Next() {
		views++
		bytes += el.Value.(*cached).view.bytes.Load()
	}
	return views, bytes
}

// size is what a session view holds after a refresh: its entries and texts, and its index.
func (v *view) size() int64 {
	n := int64(v.index.Bytes()) + int64(len(v.entries))*int64(unsafe.Sizeof(memory.Entry{}))
	for id, t := range v.text {
		n += int64(len(id)+len(t.content)) + int64(unsafe.Sizeof(t)+unsafe.Sizeof(id))*8/7
	}
	return n
}

// reportFootprint adds the retriever's caches to the process's memory report.
func (s *Service) reportFootprint(reg *footprint.Registry) {
	reg.Add("retrieve_user_views", "users' views (long-term memory and archive) the retriever keeps: what the cap (--memory-limit, MaxUserBytes) counts: the three below, and each session's last turn (the next one's dialogue context)", "views",
		func() footprint.Usage { u := s.users.usage(); return footprint.Usage{Bytes: u.total, Items: u.views} })
	reg.Add("retrieve_user_entries", "their turns, facts and summaries: texts, ids and records", "entries",
		func() footprint.Usage {
			u := s.users.usage()
			return footprint.Usage{Bytes: u.entryBytes, Items: u.entries}
		})
	reg.Add("retrieve_user_index", "their keyword indexes (rank.Index.Bytes)", "",
		func() footprint.Usage { u := s.users.usage(); return footprint.Usage{Bytes: u.indexBytes} })
	reg.Add("retrieve_user_vectors", "their stored vectors (int8), with an embedder", "vectors",
		func() footprint.Usage {
			u := s.users.usage()
			return footprint.Usage{Bytes: u.vecBytes, Items: u.vectors}
		})
	reg.Add("retrieve_session_views", "sessions' short-term memory the retriever keeps (the short source): entries, texts and index", "sessions",
		func() footprint.Usage { n, b := s.views.usage(); return footprint.Usage{Bytes: b, Items: n} })
}

// longBytes is what a view counts for its long-term entries (facts and summaries): texts, ids,
// records and metadata maps.
func longBytes(long map[string]memory.Entry) int64 {
	var n int64
	for id, e := range long {
		n += int64(len(id)+len(e.Content)) + entryBytes + int64(len(e.Metadata))*48
		if src, ok := e.Metadata["source_text"].(string); ok {
			n += int64(len(src))
		}
		for _, p := range e.Provenance {
			n += int64(len(p)) + 16
		}
	}
	return n
}

// DefaultViewIdle is how long a view of a user or session stays cached without a request
// (Config.ViewIdle).
const DefaultViewIdle = 10 * time.Minute

// viewBase is the heap a memoryd holds besides the users' views after a load (the NATS server's
// buffers, ingest's sessions, the word tables), and viewShare the part of the rest of a memory
// limit the views' own count may take: a view's count (texts, records, index) is about four
// fifths of the heap it holds, and the garbage collector needs room above the live heap.
const (
	viewBase  = 128 << 20
	viewShare = 0.5
)

// HeapShare is the part of a process memory limit (Config.MemoryLimit) the live Go heap may
// reach with the users' views in it: the collector needs room above the live heap, and near the
// limit it runs at every allocation burst, which the requests pay for.
const HeapShare = 0.6

// heapState is the Go heap as of the last garbage collection.
type heapState struct {
	cycles uint64 // collections so far
	live   int64  // bytes the last one found reachable
}

// readHeap reads the runtime's heap metrics.
func readHeap() heapState {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return heapState{cycles: s[0].Value.Uint64(), live: int64(s[1].Value.Uint64())}
}

// underLimit makes the cache keep the live heap within HeapShare of limit (none when limit ≤ 0).
func (c *userCache) underLimit(limit int64, heap func() heapState) *userCache {
	if limit > 0 {
		c.memLimit, c.heap = limit, heap
	}
	return c
}

// capNow is the views' cap now, their count being views: MaxUserBytes, and under a memory limit
// no more than what HeapShare of it leaves above the heap the rest of the process holds. That
// rest (the live heap less the views' count, which is less than their heap: an over-estimate) is
// taken once per garbage collection: between two, the live heap still counts views evicted
// since, which would make the rest look larger at every eviction. At least a quarter of
// MaxUserBytes: the users asked most recently stay, whatever the rest holds. c.mu held.
func (c *userCache) capNow(views int64) int64 {
	limit := int64(c.maxBytes)
	if c.heap == nil {
		return limit
	}
	if h := c.heap(); h.cycles != c.gcSeen {
		c.gcSeen, c.rest = h.cycles, max(0, h.live-views)
	}
	return max(limit/4, min(limit, int64(float64(c.memLimit)*HeapShare)-c.rest))
}

// ViewBytes is the cap of the users' views (Config.MaxUserBytes) under a process memory limit:
// half of what the limit leaves above memoryd's base of 128 MiB, at least 16 MiB
// (docs/operations.md, "Memory").
func ViewBytes(limit int64) int {
	return int(max(16<<20, float64(limit-viewBase)*viewShare))
}

// dropIdle drops the views not used since before; it returns how many it dropped.
func (c *userCache) dropIdle(before time.Time) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for el := c.order.Back(); el != nil; {
		prev := el.Prev()
		v := el.Value.(*userView)
		if v.used.Load() >= before.UnixNano() {
			break // the list is in order of use: the rest were used later
		}
		c.order.Remove(el)
		delete(c.items, v.key)
		n++
		el = prev
	}
	return n
}

// dropIdle drops the session views not used since before; it returns how many it dropped.
func (c *viewCache) dropIdle(before time.Time) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for el := c.order.Back(); el != nil; {
		prev := el.Prev()
		cv := el.Value.(*cached)
		if cv.used >= before.UnixNano() {
			break
		}
		c.order.Remove(el)
		delete(c.items, cv.key)
		n++
		el = prev
	}
	return n
}

// dropIdleViews drops, until ctx ends, the views of users and sessions that no request used for
// cfg.ViewIdle: their memory goes back (with the process's release at rest, package
// footprint); the next request reads them again.
func (s *Service) dropIdleViews(ctx context.Context) {
	idle := s.cfg.ViewIdle
	if idle <= 0 {
		return
	}
	t := time.NewTicker(min(max(idle/4, 10*time.Millisecond), time.Minute))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			before := now.Add(-idle)
			if u, v := s.users.dropIdle(before), s.views.dropIdle(before); u+v > 0 {
				s.log.Debug().Int("users", u).Int("sessions", v).Dur("idle", idle).Msg("idle views dropped")
			}
		}
	}
}
