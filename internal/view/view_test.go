package view_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/longterm"
	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/internal/view"
	"github.com/agentmem/agentmem/pkg/memory"
)

func TestFactState(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		f    longterm.Fact
		want string
	}{
		{"live", longterm.Fact{ID: "a"}, view.FactLive},
		{"superseded", longterm.Fact{ID: "a", ValidTo: &t0, SupersededBy: "b"}, view.FactSuperseded},
		{"ended without a successor", longterm.Fact{ID: "a", ValidTo: &t0}, view.FactSuperseded},
		{"deleted", longterm.Fact{ID: "a", ValidTo: &t0, Deleted: true}, view.FactDeleted},
		{"deleted after it was superseded", longterm.Fact{ID: "a", ValidTo: &t0, SupersededBy: "b", Deleted: true}, view.FactDeleted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := view.FactState(tc.f); got != tc.want {
				t.Fatalf("FactState = %q, want %q", got, tc.want)
			}
			// The state agrees with the store's own notion of a live fact.
			if (tc.want == view.FactLive) != tc.f.Live() {
				t.Fatalf("state %q but Live() = %t", tc.want, tc.f.Live())
			}
		})
	}
}

func TestFacts(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Hour)
	facts := []longterm.Fact{
		{ID: "c", Content: "lives in Berlin", ValidFrom: t1, Provenance: []string{"t3"}},
		{ID: "b", Content: "lives in Paris", ValidFrom: t0, ValidTo: &t1, SupersededBy: "c"},
		{ID: "a", Content: "likes Go", ValidFrom: t0, Extractor: "rules"},
		{ID: "d", Content: "plays piano", ValidFrom: t0, ValidTo: &t1, Deleted: true},
	}
	ids := func(vs []view.Fact) []string {
		var out []string
		for _, v := range vs {
			out = append(out, v.ID+"="+v.State)
		}
		return out
	}
	if got, want := ids(view.Facts(facts, false)), []string{"a=live", "c=live"}; !slices.Equal(got, want) {
		t.Fatalf("live facts %v, want %v", got, want)
	}
	if got, want := ids(view.Facts(facts, true)), []string{"a=live", "b=superseded", "d=deleted", "c=live"}; !slices.Equal(got, want) {
		t.Fatalf("history %v, want %v", got, want)
	}
	if got := view.Facts(nil, true); got == nil {
		t.Fatal("Facts(nil) is nil, want empty")
	}
	// The JSON is the HTTP API's: provenance never null, the stored record not included.
	b, err := json.Marshal(view.Facts(facts, false)[0])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if want := []string{"category", "confidence", "content", "extractor", "id", "provenance", "state", "valid_from"}; !slices.Equal(keys, want) {
		t.Fatalf("JSON keys %v, want %v (%s)", keys, want, b)
	}
}

func TestNewSession(t *testing.T) {
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	st := session.NewState(session.Key{Tenant: "acme", Session: "s1"}, 10)
	st.Header.User, st.Header.Turns = "alice", 4
	st.Short = memory.NewShortTerm(10)
	turn := func(id string, tokens int) memory.Entry {
		return memory.Entry{ID: id, Type: memory.Conversation, Role: "user", Tokens: tokens, Timestamp: at, Seq: uint64(len(id))}
	}
	st.Short.Store(turn("t1", 4))
	st.Short.Store(turn("t2", 4))
	st.Short.Store(turn("t3", 4)) // evicts t1 into the pending list
	if _, err := st.Short.Replace([]string{"t2"}, memory.Entry{ID: "named", Type: memory.Summary, Tokens: 2, Provenance: []string{"t2"}}); err != nil {
		t.Fatal(err)
	}
	st.Short.Store(memory.Entry{ID: "s0", Type: memory.Summary, Content: "earlier", Tokens: 1, Provenance: []string{"x", "y"}})

	v := view.NewSession(st)
	if v.Tenant != "acme" || v.Session != "s1" || v.User != "alice" || v.Turns != 4 || v.Budget != 10 {
		t.Fatalf("header fields: %+v", v)
	}
	states := func(es []view.Entry) []string {
		var out []string
		for _, e := range es {
			out = append(out, e.ID+"="+e.State)
		}
		return out
	}
	if got, want := states(v.Entries), []string{"t1=pending", "named=named", "t3=kept", "s0=kept"}; !slices.Equal(got, want) {
		t.Fatalf("entries %v, want %v", got, want)
	}
	if got, want := states(v.PendingList()), []string{"t1=pending"}; !slices.Equal(got, want) {
		t.Fatalf("pending list %v, want %v", got, want)
	}
	if got, want := states(v.KeptList()), []string{"named=named", "t3=kept", "s0=kept"}; !slices.Equal(got, want) {
		t.Fatalf("kept list %v, want %v", got, want)
	}
	if e := v.Entries[3]; e.Covers != 2 || e.Stored.Content != "earlier" {
		t.Fatalf("summary entry %+v", e)
	}
	if e := v.Entries[0]; e.Stored.Seq != 2 || e.Covers != 0 {
		t.Fatalf("turn entry %+v", e)
	}
	if got := view.NewSession(session.NewState(session.Key{Tenant: "acme", Session: "s2"}, 10)).Entries; got == nil || len(got) != 0 {
		t.Fatalf("empty session entries %v, want []", got)
	}
}
