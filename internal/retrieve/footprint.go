package retrieve

import (
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

// noteIndexes records the indexes' size after a change (rank.Index.Bytes).
func (u *userView) noteIndexes() {
	n := int64(u.archIdx.Bytes() + u.longIdx.Bytes())
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
	reg.Add("retrieve_user_views", "users' views (long-term memory and archive) the retriever keeps: what the cap (--memory-limit, MaxUserBytes) counts, the sum of the three below", "views",
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
