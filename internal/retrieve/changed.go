package retrieve

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/agentmem/agentmem/internal/fact"
	"github.com/agentmem/agentmem/internal/longterm"
	"github.com/agentmem/agentmem/pkg/events"
	"github.com/agentmem/agentmem/pkg/memory"
)

// A turn that stated a fact which has since changed ("I live in Paris.", then "I moved from Paris
// to Lisbon." or a correction of the fact) is still what the user said, and still answers "where
// did I live before?". But beside the fact that holds now it would make the context contradict
// itself. So a reply marks it: the entry's metadata names the fact that holds now
// (superseded_by, superseded_at, and the ended fact, superseded_fact), and the context shows the
// turn under its own heading after the facts, dated, with what holds now ("… → since 2026-12-01:
// The user lives in Lisbon"). A summary that covers such a turn is marked the same way
// (partly_superseded_by) and its context line says what changed since.
//
// A turn is marked at `at` when it stated a fact that ended by `at` (superseded, not deleted)
// and does not state the fact that holds now as well (a turn "I code in Rust now, not Go" may be
// in the provenance of both). A correction (PUT …/facts) keeps the corrected fact's turns as its
// provenance, but they stated the old value: they are marked. A fact stated again after it ended
// (Paris, Lisbon, Paris again) marks nothing: what the turn said holds again. Which entries a
// query ranks, and how, does not change: a turn about Paris still answers "where did I live
// before?".

// change is what a turn said that has since changed.
type change struct {
	old  string    // the ended fact's id
	now  fact1     // the fact that holds at the request's `at`
	when time.Time // when the old fact ended
}

// fact1 is the part of a fact a change shows.
type fact1 struct{ id, content string }

// maxChain bounds the supersessions followed from an ended fact to the one that holds.
const maxChain = 64

// changesAt returns, for every turn that stated a fact which changed by at, the change. The
// caller holds u.mu.
func (u *userView) changesAt(at time.Time) map[string]change {
	var out map[string]change
	// Sorted, so that a turn in the provenance of two ended facts gets the same change each time.
	ids := slices.Sorted(maps.Keys(u.facts))
	for _, id := range ids {
		f := u.facts[id]
		if f.Deleted || f.SupersededBy == "" || f.ValidTo == nil || f.ValidTo.After(at) || f.ValidFrom.After(at) {
			continue
		}
		now, ok := u.holding(f, at)
		if !ok || fact.Normalize(now.Content) == fact.Normalize(f.Content) {
			continue
		}
		for _, turn := range f.Provenance {
			if now.Extractor != correctionExtractor && slices.Contains(now.Provenance, turn) {
				continue // the turn states what holds now too
			}
			if prev, seen := out[turn]; seen && !f.ValidTo.After(prev.when) {
				continue // the latest change a turn saw wins
			}
			if out == nil {
				out = map[string]change{}
			}
			out[turn] = change{old: f.ID, now: fact1{now.ID, now.Content}, when: *f.ValidTo}
		}
	}
	return out
}

// correctionExtractor is the extractor of a fact made by longterm.Store.Correct.
const correctionExtractor = "correction"

// holding follows f's supersessions to the fact of its line that holds at at.
func (u *userView) holding(f longterm.Fact, at time.Time) (longterm.Fact, bool) {
	cur := f
	for range maxChain {
		next, ok := u.facts[cur.SupersededBy]
		if !ok {
			return longterm.Fact{}, false
		}
		if next.LiveAt(at) {
			return next, true
		}
		if next.SupersededBy == "" || next.Deleted {
			return longterm.Fact{}, false // the line ended without a successor
		}
		cur = next
	}
	return longterm.Fact{}, false
}

// markChanged marks the entries that said what has since changed (see changes): a turn's
// metadata gets superseded_by, superseded_at and superseded_fact, a summary's
// partly_superseded_by. It returns the note each marked entry's context line carries.
//
// A fact entry's metadata is shown as of at (asOf).
func markChanged(entries []events.RetrievedEntry, changes map[string]change, at time.Time) map[string]changeNote {
	notes := map[string]changeNote{}
	for i := range entries {
		e := &entries[i]
		switch memory.Type(e.Type) {
		case memory.Fact:
			e.Metadata = asOf(e.Metadata, at)
		case memory.Conversation, memory.ToolResult:
			c, ok := changes[e.ID]
			if !ok {
				continue
			}
			md := maps.Clone(e.Metadata) // shared by other entries of the view
			if md == nil {
				md = map[string]any{}
			}
			md["superseded_by"] = c.now.id
			md["superseded_at"] = c.when.UTC()
			md["superseded_fact"] = c.old
			e.Metadata = md
			notes[e.ID] = changeNote{turn: true, since: c.when, now: []string{c.now.content}}
		case memory.Summary:
			var by, now []string
			var since time.Time
			for _, p := range e.Provenance {
				c, ok := changes[p]
				if !ok || slices.Contains(by, c.now.id) {
					continue
				}
				by, now = append(by, c.now.id), append(now, c.now.content)
				if c.when.After(since) {
					since = c.when
				}
			}
			if len(by) == 0 {
				continue
			}
			md := maps.Clone(e.Metadata)
			if md == nil {
				md = map[string]any{}
			}
			md["partly_superseded_by"] = by
			e.Metadata = md
			notes[e.ID] = changeNote{since: since, now: now}
		}
	}
	return notes
}

// asOf returns a fact's metadata as it was at at: a fact that was live then shows no valid_to
// and superseded_by of a change made after at ("what did the agent know then?" knows nothing
// of it). The map is cloned when it changes.
func asOf(md map[string]any, at time.Time) map[string]any {
	end, ok := md["valid_to"].(time.Time)
	if !ok || !end.After(at) {
		return md
	}
	md = maps.Clone(md)
	delete(md, "valid_to")
	delete(md, "superseded_by")
	return md
}

// changeNote is what the context says of an entry that said what has since changed.
type changeNote struct {
	turn  bool // a turn (shown among the changed statements), else a summary (kept in place)
	since time.Time
	now   []string // the contents of the facts that hold now
}

// suffix is the note's text at the end of the entry's context line.
func (n changeNote) suffix(lang string) string {
	now := strings.Join(n.now, "; ")
	date := n.since.UTC().Format("2006-01-02")
	switch {
	case lang == "zh" && n.turn:
		return " → " + date + " 起：" + now
	case lang == "zh":
		return "（" + date + " 起已变更：" + now + "）"
	case n.turn:
		return " → since " + date + ": " + now
	}
	return " (changed since " + date + ": " + now + ")"
}
