package retrieve_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/retrieve"
	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

// TestQueryAboutAPeriod: a question about a period ("last Saturday", "上周六") counts what was said
// in it as fresh (decay 1.0), so it ranks above a newer, equally relevant entry; the same query
// without the period ranks the newer one first.
func TestQueryAboutAPeriod(t *testing.T) {
	t.Run("default", func(t *testing.T) { testQueryAboutAPeriod(t, start(t), true) })
	t.Run("IgnorePeriods", func(t *testing.T) {
		testQueryAboutAPeriod(t, startWith(t, retrieve.Config{IgnorePeriods: true}), false)
	})
}

func testQueryAboutAPeriod(t *testing.T, e *env, periods bool) {
	at := time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC) // a Wednesday
	saturday := time.Date(2026, 11, 28, 11, 0, 0, 0, time.UTC)
	e.seed(t, "weekend", "alice", []client.Turn{
		{Content: "I bought a brass lamp at the flea market.", Time: saturday},
		{Content: "我在跳蚤市场买了一盏铜灯。", Time: saturday.Add(time.Minute)},
	})
	e.seed(t, "tuesday", "alice", []client.Turn{
		{Content: "I bought a brass lamp for the desk.", Time: at.Add(-20 * time.Hour)},
		{Content: "我给书桌买了一盏铜灯。", Time: at.Add(-20*time.Hour + time.Minute)},
	})
	for _, tt := range []struct{ query, period, other string }{
		{"Which brass lamp did I buy last Saturday?", "weekend-00", "tuesday-00"},
		{"我上周六买了哪盏铜灯？", "weekend-01", "tuesday-01"},
	} {
		reply, err := e.cl.Retrieve(context.Background(), events.RetrieveRequest{Query: tt.query, User: "alice", At: &at})
		if err != nil {
			t.Fatal(err)
		}
		got := entryIDs(reply)
		if !periods {
			if len(got) == 0 || got[0] != tt.other {
				t.Errorf("%q with IgnorePeriods: %v, want %s first", tt.query, top(reply), tt.other)
			}
			continue
		}
		if len(got) < 2 || got[0] != tt.period {
			t.Errorf("%q: %s said last Saturday is not first: %v", tt.query, tt.period, top(reply))
		} else if d := reply.Entries[0].Scores.Decay; d != 1 {
			t.Errorf("%q: the decay of %s is %v, want 1", tt.query, tt.period, d)
		}
	}
	// Without the period, and in a dialogue (whose time words tell of the conversation), the
	// newer turn is first: the test above is not won by the text.
	for _, q := range []string{"Which brass lamp did I buy?", "I did some shopping last Saturday.\nassistant: Did you buy a brass lamp?"} {
		reply, err := e.cl.Retrieve(context.Background(), events.RetrieveRequest{Query: q, User: "alice", At: &at})
		if err != nil {
			t.Fatal(err)
		}
		if got := entryIDs(reply); len(got) == 0 || got[0] != "tuesday-00" {
			t.Errorf("%q: %v, want tuesday-00 first", q, top(reply))
		}
	}
}
