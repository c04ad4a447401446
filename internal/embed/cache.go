package embed

import (
	"container/list"
	"crypto/sha256"
	"sync"
)

// cacheKey identifies a text embedded by a model: sha256(model + "\x00" + text).
type cacheKey [sha256.Size]byte

func keyOf(model, text string) cacheKey {
	h := sha256.New()
	h.Write([]byte(model))
	h.Write([]byte{0})
	h.Write([]byte(text))
	var k cacheKey
	h.Sum(k[:0])
	return k
}

// cache is a bounded LRU of vectors, safe for concurrent use. A cache of size < 1 keeps
// nothing. The vectors it holds are never handed out; get returns copies.
type cache struct {
	mu    sync.Mutex
	size  int
	order *list.List // front: most recently used; values are *cacheEntry
	items map[cacheKey]*list.Element
}

type cacheEntry struct {
	key cacheKey
	vec []float32
}

func newCache(size int) *cache {
	return &cache{size: size, order: list.New(), items: make(map[cacheKey]*list.Element)}
}

// get returns a copy of the vector cached under k.
func (c *cache) get(k cacheKey) ([]float32, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[k]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(el)
	return append([]float32(nil), el.Value.(*cacheEntry).vec...), true
}

// put caches a copy of vec under k, evicting the least recently used entry when full.
func (c *cache) put(k cacheKey, vec []float32) {
	if c.size < 1 {
		return
	}
	vec = append([]float32(nil), vec...)
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[k]; ok {
		el.Value.(*cacheEntry).vec = vec
		c.order.MoveToFront(el)
		return
	}
	c.items[k] = c.order.PushFront(&cacheEntry{key: k, vec: vec})
	for c.order.Len() > c.size {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		delete(c.items, oldest.Value.(*cacheEntry).key)
	}
}

// len returns how many vectors are cached.
func (c *cache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
