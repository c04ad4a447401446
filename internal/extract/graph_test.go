package extract_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/graph"
	"github.com/agentmem/agentmem/internal/llm/llmtest"
	"github.com/agentmem/agentmem/internal/longterm"
	"github.com/agentmem/agentmem/internal/usage"
)

// graphOf waits until the user's graph has at least want relations stated (history included)
// and returns it at `at`.
func graphOf(t *testing.T, e *env, user string, want int, at time.Time) graph.Snapshot {
	t.Helper()
	var recs longterm.UserRecords
	brokertest.CheckFor(t, 15*time.Second, 20*time.Millisecond, func() error {
		var err error
		if recs, err = e.Store.User(context.Background(), "acme", user); err != nil {
			return err
		}
		if len(recs.Edges) < want {
			return fmt.Errorf("%d edges, want %d", len(recs.Edges), want)
		}
		return nil
	})
	return graph.Build(recs).At(at)
}

// relations prints a snapshot's live relations as "subject relation object".
func relations(s graph.Snapshot) []string {
	var out []string
	for _, r := range s.Relations {
		out = append(out, r.SubjectName+" "+r.Relation+" "+r.ObjectName)
	}
	slices.Sort(out)
	return out
}

func TestGraphFromTheRulesRacingExtractorsAndAMove(t *testing.T) {
	e := start(t, 2, nil)
	day := 24 * time.Hour
	e.Say("acme", "s1", "alice", "t1", "My sister Anna just married Tom.", t0)
	e.Say("acme", "s1", "alice", "t2", "I live in Paris.", t0.Add(time.Minute))
	e.End("acme", "s1", "alice", "e1", t0.Add(2*time.Minute))
	// The same session end again, as a second message: both extractors may take one.
	e.End("acme", "s1", "alice", "e1-again", t0.Add(3*time.Minute))
	e.Drained()
	e.Say("acme", "s2", "alice", "t3", "I moved from Paris to Lisbon. My sister Anna visited me there.", t0.Add(day))
	e.End("acme", "s2", "alice", "e2", t0.Add(day+time.Minute))
	e.Drained()

	before := graphOf(t, e, "alice", 4, t0.Add(time.Hour))
	if got, want := relations(before), []string{"Anna married_to Tom", "user lives_in Paris", "user sister Anna"}; !slices.Equal(got, want) {
		t.Errorf("relations before the move %q, want %q", got, want)
	}
	after := graphOf(t, e, "alice", 4, t0.Add(2*day))
	if got, want := relations(after), []string{"Anna married_to Tom", "user lives_in Lisbon", "user sister Anna"}; !slices.Equal(got, want) {
		t.Errorf("relations after the move %q, want %q", got, want)
	}
	// Paris's edge is in the history, ended by Lisbon's.
	var paris, lisbon graph.Edge
	for _, h := range after.History {
		switch h.ObjectName {
		case "Paris":
			paris = h
		case "Lisbon":
			lisbon = h
		}
	}
	if paris.ValidTo == nil || !paris.ValidTo.Equal(t0.Add(day)) || paris.SupersededBy != lisbon.ID || paris.Extractor != "rules" {
		t.Errorf("Paris edge %+v, want it ended at the move by the Lisbon edge, extractor rules", paris)
	}
	// One node per entity, whatever the racing extractors did; Anna named in both sessions.
	names := map[string]int{}
	var anna graph.Node
	for _, n := range after.Entities {
		names[n.Name]++
		if n.Name == "Anna" {
			anna = n
		}
	}
	for _, n := range []string{"user", "Anna", "Tom", "Paris", "Lisbon"} {
		if names[n] != 1 {
			t.Errorf("%d nodes named %s in %+v", names[n], n, after.Entities)
		}
	}
	if !slices.Equal(anna.Provenance, []string{"t1", "t3"}) || !anna.FirstSeen.Equal(t0) || !anna.LastSeen.Equal(t0.Add(day)) {
		t.Errorf("Anna %+v, want provenance t1 and t3, first seen %s, last seen %s", anna, t0, t0.Add(day))
	}
}

func TestGraphInChineseFoldsANickname(t *testing.T) {
	e := start(t, 1, nil)
	e.Say("acme", "zh", "lihua", "t1", "我妹妹小美和小刚结婚了。", t0)
	e.Say("acme", "zh", "lihua", "t2", "小美是王美丽的小名。", t0.Add(time.Minute))
	e.Say("acme", "zh", "lihua", "t3", "王美丽下个月去上海。", t0.Add(2*time.Minute))
	e.End("acme", "zh", "lihua", "e1", t0.Add(3*time.Minute))
	s := graphOf(t, e, "lihua", 2, t0.Add(time.Hour))
	if got, want := relations(s), []string{"user sister 王美丽", "王美丽 married_to 小刚"}; !slices.Equal(got, want) {
		t.Errorf("relations %q, want %q (小美 folded into 王美丽)", got, want)
	}
	for _, n := range s.Entities {
		slices.Sort(n.Provenance)
		if n.Name == "小美" {
			t.Errorf("小美 is a node of its own: %+v", n)
		}
		if n.Name == "王美丽" && (!slices.Equal(n.Aliases, []string{"小美"}) || !slices.Equal(n.Provenance, []string{"t1", "t2", "t3"})) {
			t.Errorf("王美丽 %+v, want alias 小美 and the turns of both names", n)
		}
	}
}

func TestGraphFromTheLLMInTheSameCallAfterA429(t *testing.T) {
	answer := llmtest.Answer(func(req llmtest.ChatRequest) string {
		if !strings.Contains(req.Messages[0].Content, `"relations"`) {
			return `{"facts":[]}` // the prompt does not ask for the graph: no graph
		}
		return `{"facts":[{"content":"The user lives in Lisbon","category":"identity","key":"user.city","confidence":0.9,"turns":["t1"]}],
		 "entities":[{"name":"Melanie","type":"person","aliases":["Mel"]},{"name":"Lisbon","type":"place"}],
		 "relations":[{"subject":"user","relation":"lives_in","object":"Lisbon","turns":["t1"]},
		              {"subject":"user","relation":"friend","object":"Mel","turns":["t2"]}]}`
	})
	srv := llmtest.NewServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			w.Header().Set("Retry-After", "0")
			llmtest.WriteError(w, http.StatusTooManyRequests, "rate_limit_error", "rate_limit_exceeded", "slow down")
			return
		}
		answer(w, r, n)
	})
	e := start(t, 1, llmClient(t, srv))
	e.Say("acme", "s1", "alice", "t1", "I live in Lisbon.", t0)
	e.Say("acme", "s1", "alice", "t2", "My friend Melanie, Mel for short, lives nearby.", t0.Add(time.Minute))
	e.End("acme", "s1", "alice", "e1", t0.Add(2*time.Minute))
	s := graphOf(t, e, "alice", 2, t0.Add(time.Hour))
	if got, want := relations(s), []string{"user friend Melanie", "user lives_in Lisbon"}; !slices.Equal(got, want) {
		t.Errorf("relations %q, want %q (Mel folded into Melanie)", got, want)
	}
	for _, r := range s.Relations {
		if r.Extractor != "llm:test-model" {
			t.Errorf("edge %+v: extractor %q", r, r.Extractor)
		}
	}
	// One extraction call (the facts and the graph together) after the 429.
	if n := srv.Count(); n != 2 {
		t.Fatalf("%d LLM requests, want the 429 and one extraction", n)
	}
	us, err := usage.Open(context.Background(), e.Broker.JS, e.Topo)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := us.Report(context.Background(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Total.Calls != 1 || rep.Total.InputTokens == 0 {
		t.Errorf("usage %+v, want the one answered call counted", rep.Total)
	}
}

func TestMalformedGraphInTheAnswerStoresNothing(t *testing.T) {
	var calls atomic.Int64
	srv := llmtest.NewServer(t, llmtest.Answer(func(llmtest.ChatRequest) string {
		calls.Add(1)
		// Good facts, but a relation without an object: the whole answer is refused.
		return `{"facts":[{"content":"The user lives in Lisbon","category":"identity","confidence":0.9}],
		 "relations":[{"subject":"user","relation":"lives_in"}]}`
	}))
	e := start(t, 1, llmClient(t, srv))
	sub, err := e.Broker.NC.SubscribeSync("memory.dlq.acme.s1")
	if err != nil {
		t.Fatal(err)
	}
	e.Say("acme", "s1", "alice", "t1", "I live in Lisbon.", t0)
	e.End("acme", "s1", "alice", "e1", t0.Add(time.Minute))
	m, err := sub.NextMsg(20 * time.Second)
	if err != nil {
		t.Fatalf("no dead letter: %v (calls %d)", err, calls.Load())
	}
	if r := m.Header.Get("Agentmem-Reason"); !strings.Contains(r, "malformed") || !strings.Contains(r, "no object") {
		t.Fatalf("reason %q", r)
	}
	recs, err := e.Store.User(context.Background(), "acme", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs.Facts)+len(recs.Entities)+len(recs.Edges) != 0 {
		t.Fatalf("stored from a malformed answer: %+v", recs)
	}
}

// A replay into an empty system rebuilds the same graph: two fresh systems, one with two
// racing extractors, given the same conversations, store the same records.
func TestReplayRebuildsTheSameGraph(t *testing.T) {
	snap := func(extractors int) string {
		e := start(t, extractors, nil)
		texts := []string{"My sister Anna lives in Rome.", "I work at Acme.", "My friend Melanie, Mel for short, called.",
			"I left Acme and joined Globex.", "Mel visited me in Paris.", "我妹妹小美和小刚结婚了。"}
		for i, text := range texts {
			at := t0.Add(time.Duration(i) * time.Hour)
			sess := fmt.Sprintf("s%d", i%3)
			e.Say("acme", sess, "alice", fmt.Sprintf("t%d", i), text, at)
		}
		for i := range 3 {
			e.End("acme", fmt.Sprintf("s%d", i), "alice", fmt.Sprintf("e%d", i), t0.Add(10*time.Hour))
		}
		e.Drained()
		s := graphOf(t, e, "alice", 5, t0.Add(24*time.Hour))
		for i := range s.Entities {
			slices.Sort(s.Entities[i].Provenance)
		}
		for i := range s.History {
			slices.Sort(s.History[i].Provenance)
		}
		s.Relations = nil
		b, _ := json.Marshal(s)
		return string(b)
	}
	one, two := snap(1), snap(2)
	if one != two {
		t.Fatalf("one extractor built\n%s\ntwo built\n%s", one, two)
	}
	if !strings.Contains(one, "Globex") || !strings.Contains(one, `"aliases":["Mel"]`) {
		t.Fatalf("graph %s lacks Globex or Mel as Melanie's alias", one)
	}
}

// In Chinese: a move ends the old city's edge (offline rules), and the same relation named three
// ways by an LLM ("Lives In", "lives-in", lives_in) is one edge, its turns merged, until a
// newer city supersedes it.
func TestGraphChineseMoveAndARenamedRelation(t *testing.T) {
	t.Run("rules", func(t *testing.T) {
		e := start(t, 1, nil)
		day := 24 * time.Hour
		e.Say("acme", "z1", "lihua", "t1", "我住在北京。", t0)
		e.End("acme", "z1", "lihua", "e1", t0.Add(time.Minute))
		e.Drained()
		e.Say("acme", "z2", "lihua", "t2", "我上个月从北京搬到了上海。", t0.Add(day))
		e.End("acme", "z2", "lihua", "e2", t0.Add(day+time.Minute))
		e.Drained()
		s := graphOf(t, e, "lihua", 2, t0.Add(2*day))
		if got := relations(s); !slices.Equal(got, []string{"user lives_in 上海"}) {
			t.Errorf("relations %q, want only 上海", got)
		}
		for _, h := range s.History {
			if h.ObjectName == "北京" && (h.ValidTo == nil || !h.ValidTo.Equal(t0.Add(day))) {
				t.Errorf("北京 edge %+v, want it ended at the move", h)
			}
		}
	})
	t.Run("llm", func(t *testing.T) {
		answers := map[string]string{
			"我住在杭州。":   `{"subject":"用户","relation":"Lives In","object":"杭州","turns":["%s"]}`,
			"我还是住在杭州。": `{"subject":"我","relation":"lives-in","object":"杭州","turns":["%s"]}`,
			"我搬到上海了。":  `{"subject":"user","relation":"lives_in","object":"上海","turns":["%s"]}`,
		}
		srv := llmtest.NewServer(t, llmtest.Answer(func(req llmtest.ChatRequest) string {
			var rels []string
			for _, line := range strings.Split(req.Messages[len(req.Messages)-1].Content, "\n") {
				var turn struct{ ID, Content string }
				if json.Unmarshal([]byte(line), &turn) == nil && answers[turn.Content] != "" {
					rels = append(rels, fmt.Sprintf(answers[turn.Content], turn.ID))
				}
			}
			return `{"facts":[],"entities":[{"name":"杭州","type":"place"},{"name":"上海","type":"place"}],"relations":[` + strings.Join(rels, ",") + `]}`
		}))
		e := start(t, 1, llmClient(t, srv))
		day := 24 * time.Hour
		for i, text := range []string{"我住在杭州。", "我还是住在杭州。", "我搬到上海了。"} {
			at := t0.Add(time.Duration(i) * day)
			sess := fmt.Sprintf("z%d", i)
			e.Say("acme", sess, "lihua", fmt.Sprintf("t%d", i), text, at)
			e.End("acme", sess, "lihua", fmt.Sprintf("e%d", i), at.Add(time.Minute))
			e.Drained()
		}
		before := graphOf(t, e, "lihua", 2, t0.Add(day+time.Hour))
		if len(before.Relations) != 1 || before.Relations[0].Relation != "lives_in" || before.Relations[0].ObjectName != "杭州" ||
			!slices.Equal(before.Relations[0].Provenance, []string{"t0", "t1"}) {
			t.Errorf("before the move: %+v, want one lives_in 杭州 edge stated by t0 and t1", before.Relations)
		}
		after := graphOf(t, e, "lihua", 2, t0.Add(3*day))
		if got := relations(after); !slices.Equal(got, []string{"user lives_in 上海"}) {
			t.Errorf("after the move: %q", got)
		}
	})
}
