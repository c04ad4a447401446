package retrieve_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/retrieve"
	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

// TestQueryAboutAPeriod: a question about a period ("last Saturday", "上周六") raises what was said
// in it (scores.period), so it ranks above a newer, equally relevant entry; the same query
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
		} else if f := reply.Entries[0].Scores.Period; f <= 1 {
			t.Errorf("%q: the period factor of %s is %v, want more than 1", tt.query, tt.period, f)
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

// TestPeriodIsASoftPrior: answers said inside "two weeks ago", at its edge (19 days back) and
// well outside it (two months back) all stay in the top ten among turns said within the period
// that are nearly as relevant; inside and at the edge rank above outside, as a person who says
// "two weeks ago" for 10 to 20 days would expect.
func TestPeriodIsASoftPrior(t *testing.T) {
	e := start(t)
	at := time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	// Turns said within the period, each in a session of its own, about as relevant as the
	// answers: with the old rule (what was said in the period counted as fresh, twice the
	// weight of anything older than a day) they pushed the answers at the edge and outside out of
	// the top ten.
	for i := range 12 {
		e.seed(t, fmt.Sprintf("visit-%02d", i), "alice", []client.Turn{{ID: fmt.Sprintf("visit-%02d", i),
			Content: fmt.Sprintf("At the shelter I saw a kitten but did not adopt it, on visit number %d of many.", i),
			Time:    at.Add(-14*day + time.Duration(i)*time.Hour)}})
	}
	// Each answer in a session of its own, so that no session's evidence or diversity tells them
	// apart: only their time does.
	for _, a := range []struct {
		id, name string
		ago      time.Duration
	}{{"inside", "Miso", 14 * day}, {"edge", "Tofu", 19 * day}, {"outside", "Natto", 60 * day}} {
		e.seed(t, "pets-"+a.id, "alice", []client.Turn{{ID: a.id, Content: "I adopted a kitten named " + a.name + " from the shelter.", Time: at.Add(-a.ago)}})
	}
	reply, err := e.cl.Retrieve(context.Background(), events.RetrieveRequest{Query: "Which kitten did I adopt from the shelter two weeks ago?", User: "alice", At: &at})
	if err != nil {
		t.Fatal(err)
	}
	rank := map[string]int{}
	for i, en := range reply.Entries {
		rank[en.ID] = i + 1
	}
	for _, id := range []string{"inside", "edge", "outside"} {
		if r, ok := rank[id]; !ok || r > 10 {
			t.Errorf("%s is not in the top ten: %v", id, top(reply))
		}
	}
	if !(rank["inside"] < rank["edge"] && rank["edge"] < rank["outside"]) {
		t.Errorf("ranks inside %d, edge %d, outside %d: want inside, then the edge, then outside", rank["inside"], rank["edge"], rank["outside"])
	}
}
