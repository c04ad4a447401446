package inspector

import (
	"slices"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/longterm"
	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/pkg/memory"
)

// A summary named at a crossing but not yet written stands for the turns it covers; once the
// compressor stored it, it lists what it replaced from long-term memory, and a later summary
// that folds it in marks it replaced.
func TestSummariesOfASession(t *testing.T) {
	key := session.Key{Tenant: "acme", Session: "s1"}
	st := session.NewState(key, 1000)
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	turns := map[string]turnText{}
	for i, id := range []string{"t1", "t2", "t3", "t4"} {
		at := t0.Add(time.Duration(i) * time.Minute)
		st.Add(memory.Entry{ID: id, Type: memory.Conversation, Role: "user", Tokens: 10, Seq: uint64(i + 1), Timestamp: at}, 1000, "alice")
		turns[id] = turnText{id: id, session: "s1", role: "user", content: "text of " + id, seq: uint64(i + 1), at: at}
	}
	first := session.SummaryID(key, []string{"t1", "t2"})
	if _, err := st.Name([]string{"t1", "t2"}, memory.Entry{ID: first, Type: memory.Summary, Tokens: 5, Timestamp: t0.Add(time.Minute),
		Metadata: map[string]any{"status": "pending", "pressure": float64(1)}}); err != nil {
		t.Fatal(err)
	}

	got := summaries(st, nil, turns)
	if len(got) != 1 || got[0].ID != first || got[0].Status != "pending" || got[0].Pressure != 1 || got[0].Content != "" {
		t.Fatalf("summaries %+v, want the pending %s", got, first)
	}
	var texts []string
	for _, e := range got[0].Replaced {
		texts = append(texts, e.Content)
	}
	if !slices.Equal(got[0].Replaces, []string{"t1", "t2"}) || !slices.Equal(texts, []string{"text of t1", "text of t2"}) {
		t.Fatalf("the pending summary stands for %v %v, want t1 and t2 with their text", got[0].Replaces, texts)
	}
	if v := entryView(st.Short.Entries()[0], turns); v.Status != "pending" || v.Type != memory.Summary {
		t.Fatalf("the placeholder entry %+v", v)
	}

	// The compressor stored it; ingest has not applied it yet.
	stored := longterm.Summary{ID: first, Session: "s1", Content: "[Conversation summary] t1 and t2", Timestamp: t0.Add(time.Minute),
		Replaces: []string{"t1", "t2"}, Provenance: []string{"t1", "t2"}, Summarizer: "extractive"}
	got = summaries(st, []longterm.Summary{stored}, turns)
	if len(got) != 1 || got[0].Status != "stored" || got[0].Content != stored.Content || got[0].Summarizer != "extractive" {
		t.Fatalf("a stored summary: %+v", got)
	}

	// Applied, then folded into a second summary that is still pending.
	st.ApplySummary(memory.Entry{ID: first, Type: memory.Summary, Content: stored.Content, Timestamp: stored.Timestamp})
	second := session.SummaryID(key, []string{"t1", "t2", "t3"})
	if _, err := st.Name([]string{first, "t3"}, memory.Entry{ID: second, Type: memory.Summary, Tokens: 5, Timestamp: t0.Add(2 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	got = summaries(st, []longterm.Summary{stored}, turns)
	if len(got) != 2 || got[0].ID != first || got[0].Status != "replaced" || got[1].ID != second || got[1].Status != "pending" {
		t.Fatalf("summaries %+v, want %s replaced then %s pending", got, first, second)
	}
	if r := got[1].Replaced; len(r) != 2 || r[0].ID != first || r[0].Content != stored.Content || r[1].Content != "text of t3" {
		t.Fatalf("the second summary stands for %+v", r)
	}
	if !slices.Equal(got[1].Provenance, []string{"t1", "t2", "t3"}) {
		t.Fatalf("provenance %v", got[1].Provenance)
	}
}
