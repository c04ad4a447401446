package retrieve

import (
	"cmp"
	"slices"
	"time"

	"github.com/agentmem/agentmem/pkg/events"
	"github.com/agentmem/agentmem/pkg/memory"
)

// A user's live facts are their profile. Every retrieve with a known user gives them a share of
// the context, even when the query shares no word (or meaning) with them: "what do you know about
// me?", "你了解我什么？" or a "hi!" at the start of a new session get the user's facts, as the
// context of a prompt should. The facts the query ranks go first, then the newest; facts that
// are already among the ranked entries are not repeated.

// ProfileShare is the share of context_tokens the profile may take. The rest (and whatever the
// profile leaves) goes to the ranked entries.
const ProfileShare = 0.25

// liveFacts returns the user's facts live at `at`, in no order. The caller holds u.mu: the
// request that ranks the view reads its profile from it under the same lock.
func (u *userView) liveFacts(at time.Time) []memory.Entry {
	var out []memory.Entry
	for id, e := range u.long {
		if e.Type == memory.Fact && !e.Timestamp.After(at) && u.visibleAt(id, at) {
			out = append(out, e)
		}
	}
	return out
}

// byRelevance sorts facts most relevant first by rel (the fused relevance of the candidates the
// query ranked), then the newest, and returns them.
func byRelevance(facts []memory.Entry, rel map[string]float64) []memory.Entry {
	slices.SortFunc(facts, func(a, b memory.Entry) int {
		return cmp.Or(cmp.Compare(rel[b.ID], rel[a.ID]), b.Timestamp.Compare(a.Timestamp), cmp.Compare(a.ID, b.ID))
	})
	return facts
}

// profileEntries turns facts into reply entries, leaving out those in ranked. They are not
// ranked: their score is 0.
func profileEntries(facts []memory.Entry, ranked []events.RetrievedEntry) []events.RetrievedEntry {
	in := map[string]bool{}
	for _, e := range ranked {
		in[e.ID] = true
	}
	var out []events.RetrievedEntry
	for _, f := range facts {
		if in[f.ID] {
			continue
		}
		out = append(out, events.RetrievedEntry{
			ID: f.ID, Type: string(f.Type), Content: f.Content, Timestamp: f.Timestamp.UTC(), Source: memory.SourceLong,
			Scores:     events.Scores{Weight: memory.SourceWeight(memory.SourceLong)},
			Provenance: f.Provenance, Metadata: f.Metadata,
		})
	}
	return out
}
