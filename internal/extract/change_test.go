package extract_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/llm/llmtest"
	"github.com/agentmem/agentmem/internal/longterm"
)

// liveAndHistory splits a user's facts of one key into the live one and the history.
func liveAndHistory(facts []longterm.Fact, key string) (live, history []longterm.Fact) {
	for _, f := range facts {
		if f.Key != key {
			continue
		}
		if f.Live() {
			live = append(live, f)
		} else {
			history = append(history, f)
		}
	}
	return live, history
}

// TestChangeOfFactSupersedes: a fact stated in one session and changed in a later one, in the
// words people use, leaves the change live and the old value in the history, valid until the
// change (offline rules).
func TestChangeOfFactSupersedes(t *testing.T) {
	for _, tc := range []struct {
		name, before, change, key string
		wantLive, wantOld         string
	}{
		{"moved-from-to", "I live in Paris.", "I moved from Paris to Lisbon.", "user.city", "Lisbon", "Paris"},
		{"relocated", "I live in Paris.", "We relocated to Lisbon last month.", "user.city", "Lisbon", "Paris"},
		{"no-longer", "I live in Paris.", "I no longer live in Paris.", "user.city", "no longer lives in Paris", "The user lives in Paris"},
		{"chinese-move", "我住在北京。", "我上个月从北京搬到了上海。", "user.city", "上海", "北京"},
		{"job", "I work at Acme.", "I left Acme and joined Globex.", "user.employer", "Globex", "Acme"},
		{"diet", "I'm vegetarian.", "I started eating meat again.", "user.diet", "meat again", "vegetarian"},
		{"pet", "I have a dog named Max.", "My dog Max passed away.", "user.pet.dog", "passed away", "has a dog"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := start(t, 1, nil)
			week := t0.Add(7 * 24 * time.Hour)
			e.Say("acme", "s1", "alice", "t1", tc.before, t0)
			e.End("acme", "s1", "alice", "e1", t0.Add(time.Minute))
			e.Facts("acme", "alice", 1)
			e.Say("acme", "s2", "alice", "t2", tc.change, week)
			e.End("acme", "s2", "alice", "e2", week.Add(time.Minute))
			e.Drained()
			live, history := liveAndHistory(e.Facts("acme", "alice", 1), tc.key)
			if len(live) != 1 || !strings.Contains(live[0].Content, tc.wantLive) {
				t.Fatalf("live %s facts %+v, want one with %q", tc.key, live, tc.wantLive)
			}
			if len(history) != 1 || !strings.Contains(history[0].Content, tc.wantOld) || history[0].SupersededBy != live[0].ID ||
				history[0].ValidTo == nil || !history[0].ValidTo.Equal(week) {
				t.Fatalf("history %+v, want %q superseded by %s at %s", history, tc.wantOld, live[0].ID, week)
			}
		})
	}
}

// TestLLMChangeOfFactSupersedes: with an LLM, the prompt asks for a change as the new fact
// under the old one's key, and the store supersedes the old value. The server answers as a
// model following the prompt would (by the turn it is given), after a 429 on the first call.
func TestLLMChangeOfFactSupersedes(t *testing.T) {
	answers := map[string]string{
		"I live in Paris.":              `{"content":"The user lives in Paris","category":"identity","key":"user.city","confidence":0.9}`,
		"I moved from Paris to Lisbon.": `{"content":"The user lives in Lisbon","category":"identity","key":"user.city","confidence":0.9}`,
		"我住在北京。":                        `{"content":"用户住在北京","category":"identity","key":"user.city","confidence":0.9}`,
		"我上个月从北京搬到了上海。":                 `{"content":"用户住在上海","category":"identity","key":"user.city","confidence":0.9}`,
	}
	answer := llmtest.Answer(func(req llmtest.ChatRequest) string {
		var facts []string
		for _, line := range strings.Split(req.Messages[len(req.Messages)-1].Content, "\n") {
			var turn struct{ ID, Role, Content string }
			if json.Unmarshal([]byte(line), &turn) != nil {
				continue
			}
			if a, ok := answers[turn.Content]; ok {
				facts = append(facts, strings.TrimSuffix(a, "}")+fmt.Sprintf(`,"turns":[%q]}`, turn.ID))
			}
		}
		return `{"facts":[` + strings.Join(facts, ",") + `]}`
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
	week := t0.Add(7 * 24 * time.Hour)
	for _, u := range []struct{ user, before, change, want string }{
		{"alice", "I live in Paris.", "I moved from Paris to Lisbon.", "The user lives in Lisbon"},
		{"bob", "我住在北京。", "我上个月从北京搬到了上海。", "用户住在上海"},
	} {
		e.Say("acme", u.user+"-1", u.user, u.user+"-t1", u.before, t0)
		e.End("acme", u.user+"-1", u.user, u.user+"-e1", t0.Add(time.Minute))
		e.Facts("acme", u.user, 1)
		e.Say("acme", u.user+"-2", u.user, u.user+"-t2", u.change, week)
		e.End("acme", u.user+"-2", u.user, u.user+"-e2", week.Add(time.Minute))
		e.Drained()
		live, history := liveAndHistory(e.Facts("acme", u.user, 1), "user.city")
		if len(live) != 1 || live[0].Content != u.want || live[0].Extractor != "llm:test-model" {
			t.Fatalf("%s: live city facts %+v, want %q from the LLM", u.user, live, u.want)
		}
		if len(history) != 1 || history[0].SupersededBy != live[0].ID || history[0].ValidTo == nil || !history[0].ValidTo.Equal(week) {
			t.Fatalf("%s: history %+v, want the old city superseded by %s at %s", u.user, history, live[0].ID, week)
		}
	}
	// Every prompt told the model how to state a change; the 429 was retried.
	reqs := srv.Requests()
	if len(reqs) != 5 {
		t.Fatalf("%d requests, want the 429 and four answered extractions", len(reqs))
	}
	for _, r := range reqs {
		chat, err := llmtest.DecodeChat(r.Body)
		if err != nil {
			t.Fatal(err)
		}
		if sys := chat.Messages[0].Content; !strings.Contains(sys, "user.city") || !(strings.Contains(sys, "A change is the new fact") || strings.Contains(sys, "变化就是同一个 key 下的新事实")) {
			t.Fatalf("the system prompt does not say how to state a change of fact:\n%s", sys)
		}
	}
}
