package vector

// scored is a node (a slot) with its similarity to the current query.
type scored struct {
	sim  float32
	node int32
}

// The two heaps below are binary heaps over plain slices, written out rather than going
// through container/heap so that the comparisons inline in the search loops.

// minPush adds x to the min-heap h (the least similar on top).
func minPush(h []scored, x scored) []scored {
	h = append(h, x)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if h[p].sim <= h[i].sim {
			break
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
	return h
}

// minPop removes the top (least similar) of the min-heap h.
func minPop(h []scored) []scored {
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	minDown(h, 0)
	return h
}

// minDown restores the min-heap order of h below i.
func minDown(h []scored, i int) {
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		c := l
		if r := l + 1; r < n && h[r].sim < h[l].sim {
			c = r
		}
		if h[i].sim <= h[c].sim {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

// maxPush adds x to the max-heap h (the most similar on top).
func maxPush(h []scored, x scored) []scored {
	h = append(h, x)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if h[p].sim >= h[i].sim {
			break
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
	return h
}

// maxPop removes the top (most similar) of the max-heap h.
func maxPop(h []scored) []scored {
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	for i := 0; ; {
		l := 2*i + 1
		if l >= n {
			break
		}
		c := l
		if r := l + 1; r < n && h[r].sim > h[l].sim {
			c = r
		}
		if h[i].sim >= h[c].sim {
			break
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
	return h
}

// drainBestFirst empties the min-heap h into out, most similar first, and returns out.
func drainBestFirst(h []scored, out []scored) []scored {
	n := len(h)
	if cap(out) < n {
		out = make([]scored, n)
	}
	out = out[:n]
	for i := n - 1; i >= 0; i-- {
		out[i] = h[0]
		h = minPop(h)
	}
	return out
}
