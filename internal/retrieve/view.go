package retrieve

import (
	"container/list"
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/internal/archive"
	"github.com/agentmem/agentmem/internal/rank"
	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/pkg/events"
	"github.com/agentmem/agentmem/pkg/memory"
)

// view is a session's short-term memory as the retriever serves it: the committed state, the
// text of its turns read back from the turns stream, and a keyword index over them.
type view struct {
	mu      sync.Mutex
	state   *session.State
	text    map[string]turnText // turn id -> text and metadata
	entries []memory.Entry      // visible entries, oldest first, text filled in
	index   *rank.Index
	vecs    vectorSet
	bytes   atomic.Int64 // what it holds after its last refresh (footprint.go)
}

type turnText struct {
	id       string
	content  string
	metadata map[string]any
	role     string
	at       time.Time
}

func newView(key session.Key, rc rank.Config) *view {
	return &view{state: session.NewState(key, 0), text: map[string]turnText{}, index: rank.NewIndex(rc)}
}

// refresh brings the view up to the session's committed state; it reports whether the session
// exists.
func (v *view) refresh(ctx context.Context, store *session.Store, reader *archive.Reader) (bool, error) {
	changed, err := store.Refresh(ctx, v.state)
	if err != nil {
		return false, err
	}
	if v.state.Revision() == 0 {
		return false, nil
	}
	if !changed {
		return true, nil
	}
	visible := v.visible()
	if err := v.fill(ctx, reader, visible); err != nil {
		return true, err
	}
	keep := make(map[string]struct{}, len(visible))
	for i := range visible {
		e := &visible[i]
		keep[e.ID] = struct{}{}
		if t, ok := v.text[e.ID]; ok && e.Type != memory.Summary {
			e.Content, e.Metadata = t.content, withRole(t.metadata, e.Role)
		}
	}
	// The index is told the texts it was given (the entries leaving, and the old text of those
	// whose text changed), so it finds their terms without looking through all of them.
	var gone []rank.Doc
	for _, old := range v.entries {
		if _, ok := keep[old.ID]; !ok {
			gone = append(gone, rank.Doc{ID: old.ID, Text: old.Content})
			v.vecs.remove(old.ID)
			delete(v.text, old.ID)
		}
	}
	known := make(map[string]string, len(v.entries))
	for _, e := range v.entries {
		known[e.ID] = e.Content
	}
	var added []rank.Doc
	var last lastTurn // each turn's dialogue context: the entry before it
	for _, e := range visible {
		d := last.dialogueDoc(rank.Doc{ID: e.ID, Text: e.Content, Role: e.Role, Time: e.Timestamp, Kind: string(e.Type)}, e.Metadata)
		if c, ok := known[e.ID]; !ok || c != e.Content {
			if ok {
				gone = append(gone, rank.Doc{ID: e.ID, Text: c})
			}
			added = append(added, d)
		}
	}
	v.index.RemoveDocs(gone...)
	v.index.Add(added...)
	v.entries = visible
	v.bytes.Store(v.size())
	return true, nil
}

// visible lists the session's entries a reader sees: kept and pending entries, with a
// placeholder whose summary has not arrived yet replaced by the entries it stands for.
func (v *view) visible() []memory.Entry {
	var out []memory.Entry
	var expand func(e memory.Entry)
	expand = func(e memory.Entry) {
		if e.Type == memory.Summary && e.Content == "" {
			for _, part := range v.state.Covered(e.ID) {
				expand(part)
			}
			return
		}
		out = append(out, e)
	}
	for _, e := range v.state.Short.Pending() {
		expand(e)
	}
	for _, e := range v.state.Short.Entries() {
		expand(e)
	}
	slices.SortStableFunc(out, func(a, b memory.Entry) int {
		// Summaries cover older turns: keep them first, then turns in stream order.
		switch {
		case a.Type == memory.Summary && b.Type != memory.Summary:
			return -1
		case a.Type != memory.Summary && b.Type == memory.Summary:
			return 1
		case a.Seq < b.Seq:
			return -1
		case a.Seq > b.Seq:
			return 1
		}
		return 0
	})
	return out
}

// fill reads the text of every visible turn the view does not have yet from the turns stream.
func (v *view) fill(ctx context.Context, reader *archive.Reader, visible []memory.Entry) error {
	need := map[uint64]string{}
	var from, to uint64
	for _, e := range visible {
		if e.Type == memory.Summary || e.Seq == 0 {
			continue
		}
		if _, ok := v.text[e.ID]; ok {
			continue
		}
		need[e.Seq] = e.ID
		if from == 0 || e.Seq < from {
			from = e.Seq
		}
		to = max(to, e.Seq)
	}
	if len(need) == 0 {
		return nil
	}
	h := v.state.Header
	subject := events.SessionFilter(h.Tenant, h.Session)
	if h.Partition >= 0 {
		subject = events.PartitionedSubject(h.Partition, h.Tenant, h.Session)
	}
	return reader.Scan(ctx, subject, from, to, func(m *jetstream.RawStreamMsg) error {
		id, ok := need[m.Sequence]
		if !ok {
			return nil
		}
		t, err := decodeTurn(m)
		if err != nil {
			return fmt.Errorf("turn %q at %d: %w", id, m.Sequence, err)
		}
		v.text[id] = t
		return nil
	})
}

func decodeTurn(m *jetstream.RawStreamMsg) (turnText, error) {
	t, err := events.ReadAppliedTurn(m) // every caller keeps applied turns only
	if err != nil {
		return turnText{}, err
	}
	md := t.Turn.Metadata
	if t.Turn.Tool != "" {
		md = clone(md)
		md["tool"] = t.Turn.Tool
	}
	return turnText{id: t.ID, content: t.Turn.Content, metadata: md, role: t.Turn.Role, at: t.Time}, nil
}

func clone(m map[string]any) map[string]any {
	out := make(map[string]any, len(m)+2)
	for k, v := range m {
		out[k] = v
	}
	return out
}

func withRole(md map[string]any, role string) map[string]any {
	if role == "" {
		return md
	}
	if _, ok := md["role"]; ok {
		return md
	}
	out := clone(md)
	out["role"] = role
	return out
}

// viewCache keeps the most recently used session views.
type viewCache struct {
	mu    sync.Mutex
	max   int
	rank  rank.Config // of each session's index
	items map[session.Key]*list.Element
	order *list.List
}

type cached struct {
	key  session.Key
	view *view
	used int64 // when a request last got it (unix ns), for Config.ViewIdle; under the cache's lock
}

func newViewCache(max int, rc rank.Config) *viewCache {
	return &viewCache{max: max, rank: rc, items: map[session.Key]*list.Element{}, order: list.New()}
}

func (c *viewCache) get(k session.Key) *view {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[k]; ok {
		c.order.MoveToFront(el)
		cv := el.Value.(*cached)
		cv.used = time.Now().UnixNano()
		return cv.view
	}
	v := newView(k, c.rank)
	c.items[k] = c.order.PushFront(&cached{key: k, view: v, used: time.Now().UnixNano()})
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.items, last.Value.(*cached).key)
	}
	return v
}
