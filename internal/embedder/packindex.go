package embedder

import (
	"context"
	"sync"

	"github.com/agentmem/agentmem/internal/vectors"
)

// packIndex knows which entries of recently seen users have a vector in a pack, so that the
// stage looks a turn up once per user, not once per turn: a user's ids are read from their packs
// on the first lookup, and the packs the stage writes afterwards are added. It holds up to max
// ids; the least recently used users beyond are read again when next looked up. Packs another
// embedder process writes after a user's ids were read are not seen: such an entry, delivered
// here again, is embedded a second time (the duplicate is harmless; readers keep one vector per
// entry).
type packIndex struct {
	vectors *vectors.Store
	max     int

	mu    sync.Mutex
	users map[packOwner]*packedIDs
	total int
	tick  uint64
}

type packOwner struct{ tenant, user, model string }

type packedIDs struct {
	mu     sync.Mutex
	loaded bool
	ids    map[string]struct{}
	// n and used are guarded by packIndex.mu.
	n    int
	used uint64
}

// packIndexSize bounds the entry ids a packIndex keeps.
const packIndexSize = 1 << 18

func newPackIndex(v *vectors.Store, max int) *packIndex {
	return &packIndex{vectors: v, max: max, users: map[packOwner]*packedIDs{}}
}

// has reports whether entry id of (tenant, user) has a vector of model in a pack.
func (x *packIndex) has(ctx context.Context, tenant, user, model, id string) (bool, error) {
	o := packOwner{tenant, user, model}
	x.mu.Lock()
	x.tick++
	p, ok := x.users[o]
	if !ok {
		p = &packedIDs{}
		x.users[o] = p
	}
	p.used = x.tick
	x.mu.Unlock()

	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.loaded {
		ids := map[string]struct{}{}
		if err := x.vectors.ScanAll(ctx, vectors.PackFilter(tenant, user, model), func(v vectors.Vector) { ids[v.ID] = struct{}{} }); err != nil {
			return false, err
		}
		p.ids, p.loaded = ids, true
		x.grew(o, p, len(ids))
	}
	_, ok = p.ids[id]
	return ok, nil
}

// add records entries of (tenant, user) just stored in a pack, if the user's ids are held (if
// not, the next lookup reads them with the new pack).
func (x *packIndex) add(tenant, user, model string, ids []string) {
	o := packOwner{tenant, user, model}
	x.mu.Lock()
	p, ok := x.users[o]
	x.mu.Unlock()
	if !ok {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.loaded {
		return // being read now: the read started after the pack was stored, or waits for this
	}
	n := 0
	for _, id := range ids {
		if _, ok := p.ids[id]; !ok {
			p.ids[id] = struct{}{}
			n++
		}
	}
	x.grew(o, p, n)
}

// grew accounts n more ids of o and drops the least recently used other users while the index
// holds more than max.
func (x *packIndex) grew(o packOwner, p *packedIDs, n int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.users[o] != p {
		return // dropped meanwhile
	}
	p.n += n
	x.total += n
	for x.total > x.max && len(x.users) > 1 {
		var oldest packOwner
		at := ^uint64(0)
		for k, v := range x.users {
			if k != o && v.used < at {
				oldest, at = k, v.used
			}
		}
		x.total -= x.users[oldest].n
		delete(x.users, oldest)
	}
}
