package forget_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/extract"
	"github.com/agentmem/agentmem/internal/extract/extracttest"
	"github.com/agentmem/agentmem/internal/graph"
	"github.com/agentmem/agentmem/internal/longterm"
	"github.com/agentmem/agentmem/pkg/events"
)

type env = extracttest.Env

func start(t *testing.T, extractors int, chat extract.Chat) *env {
	return extracttest.Start(t, extractors, chat)
}

var t0 = time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)

func TestForgetLeavesNothingOfTheUser(t *testing.T) {
	e := start(t, 1, nil)
	e.Say("acme", "a1", "alice", "t1", "I live in Paris.", t0)
	e.Say("acme", "a2", "alice", "t2", "I prefer tea.", t0.Add(time.Hour))
	e.End("acme", "a1", "alice", "e1", t0.Add(2*time.Hour))
	e.End("acme", "a2", "alice", "e2", t0.Add(2*time.Hour))
	e.Say("acme", "b1", "bob", "u1", "I live in Rome.", t0)
	e.End("acme", "b1", "bob", "e3", t0.Add(time.Hour))
	// A bad turn of alice's, so that a dead letter exists too.
	e.Publish("acme", "a1", "bad", events.TypeTurn, t0, map[string]string{"role": "robot", "content": "x"})
	e.Facts("acme", "alice", 2)
	e.Facts("acme", "bob", 1)
	e.Drained()

	body, _ := json.Marshal(events.ForgetRequest{User: "alice"})
	m, err := e.Broker.NC.Request("memory.forget.acme", body, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if code := m.Header.Get("Nats-Service-Error-Code"); code != "" {
		t.Fatalf("forget: %s %s", code, m.Header.Get("Nats-Service-Error"))
	}
	var reply events.ForgetReply
	if err := json.Unmarshal(m.Data, &reply); err != nil {
		t.Fatal(err)
	}
	// "I live in Paris" made a place, the user's node and their edge.
	if reply.Forgotten["turns"] < 3 || reply.Forgotten["facts"] < 2 || reply.Forgotten["sessions"] != 2 ||
		reply.Forgotten["entities"] != 2 || reply.Forgotten["relations"] != 1 {
		t.Fatalf("forgotten %v", reply.Forgotten)
	}
	ctx := context.Background()
	// Nothing of alice in any stream or bucket; bob untouched.
	names := e.Broker.JS.StreamNames(ctx)
	for name := range names.Name() {
		s, err := e.Broker.JS.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(ctx, jetstream.WithSubjectFilter(">"))
		if err != nil {
			t.Fatal(err)
		}
		for subj := range info.State.Subjects {
			// Whole tokens: a random key part (a chunk's nuid) may start with "a1".
			tokens := strings.Split(subj, ".")
			if slices.Contains(tokens, "a1") || slices.Contains(tokens, "a2") || strings.Contains(subj, "alice") {
				// The tombstones of alice's sessions hold no memory, only watermarks.
				if name == "KV_"+e.Topo.SessionBucket() {
					continue
				}
				t.Errorf("stream %s still holds %s", name, subj)
			}
		}
		for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
			msg, err := s.GetMsg(ctx, seq)
			if err != nil {
				continue
			}
			if strings.Contains(string(msg.Data), "Paris") || strings.Contains(string(msg.Data), "tea") {
				t.Errorf("stream %s message %d (%s) still says %q", name, seq, msg.Subject, msg.Data)
			}
		}
	}
	if facts := e.Facts("acme", "bob", 1); len(facts) != 1 {
		t.Fatalf("bob's facts: %+v", facts)
	}
	// A new turn in a forgotten session starts afresh.
	e.Say("acme", "a1", "carol", "c1", "I prefer coffee.", t0.Add(3*time.Hour))
	e.End("acme", "a1", "carol", "c2", t0.Add(3*time.Hour))
	e.Facts("acme", "carol", 1)
}

func TestDeleteAndCorrectOneFact(t *testing.T) {
	e := start(t, 1, nil)
	e.Say("acme", "s1", "alice", "t1", "I live in Paris. I prefer tea.", t0)
	e.End("acme", "s1", "alice", "e1", t0.Add(time.Minute))
	facts := e.Facts("acme", "alice", 2)
	var city, tea longterm.Fact
	for _, f := range facts {
		if strings.Contains(f.Content, "Paris") {
			city = f
		} else {
			tea = f
		}
	}
	ask := func(req events.ForgetRequest) (events.ForgetReply, string) {
		body, _ := json.Marshal(req)
		m, err := e.Broker.NC.Request("memory.forget.acme", body, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var reply events.ForgetReply
		_ = json.Unmarshal(m.Data, &reply)
		return reply, m.Header.Get("Nats-Service-Error-Code")
	}
	if _, code := ask(events.ForgetRequest{User: "alice", FactID: tea.ID}); code != "" {
		t.Fatalf("delete: %s", code)
	}
	reply, code := ask(events.ForgetRequest{User: "alice", FactID: city.ID, Content: "The user lives in Lyon"})
	if code != "" || reply.Fact == nil || reply.Fact.Content != "The user lives in Lyon" {
		t.Fatalf("correct: %s %+v", code, reply)
	}
	if _, code := ask(events.ForgetRequest{User: "alice", FactID: "fact_nope"}); code != "404" {
		t.Fatalf("unknown fact: code %q, want 404", code)
	}
	recs, err := e.Store.User(context.Background(), "acme", "alice")
	if err != nil {
		t.Fatal(err)
	}
	var live []string
	for _, f := range recs.Facts {
		if f.Live() {
			live = append(live, f.Content)
		}
	}
	if !slices.Equal(live, []string{"The user lives in Lyon"}) || len(recs.Facts) != 3 {
		t.Fatalf("live %v of %d facts, want only Lyon with Paris and tea in the history", live, len(recs.Facts))
	}
}

// TestCorrectionToTheSameContentIsRefused: a correction that states the fact as it is (also a
// restated version, whose id is not its content's) is a 400 on content, and the fact stays live.
func TestCorrectionToTheSameContentIsRefused(t *testing.T) {
	e := start(t, 1, nil)
	day := 24 * time.Hour
	for i, text := range []string{"I live in Paris.", "I live in Lisbon.", "I live in Paris."} {
		at := t0.Add(time.Duration(i) * day)
		sess := fmt.Sprintf("s%d", i+1)
		e.Say("acme", sess, "alice", fmt.Sprintf("t%d", i+1), text, at)
		e.End("acme", sess, "alice", fmt.Sprintf("e%d", i+1), at.Add(time.Minute))
		e.Drained()
	}
	var live longterm.Fact
	for _, f := range e.Facts("acme", "alice", 1) {
		if f.Live() {
			live = f
		}
	}
	body, _ := json.Marshal(events.ForgetRequest{User: "alice", FactID: live.ID, Content: "the user LIVES in Paris!"})
	m, err := e.Broker.NC.Request("memory.forget.acme", body, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if code := m.Header.Get("Nats-Service-Error-Code"); code != "400" || !strings.Contains(string(m.Data), `"content"`) {
		t.Fatalf("a correction to the same content: %q %s", code, m.Data)
	}
	still, err := e.Store.Fact(context.Background(), "acme", "alice", live.ID)
	if err != nil || !still.Live() {
		t.Fatalf("the fact after the refused correction: %+v %v", still, err)
	}
}

// TestGraphFollowsAFactsCorrectionAndDeletion: the relation a corrected fact stated is
// superseded by the correction's (and kept in the history); deleting the live fact ends it.
func TestGraphFollowsAFactsCorrectionAndDeletion(t *testing.T) {
	e := start(t, 1, nil)
	e.Say("acme", "s1", "alice", "t1", "I live in Paris.", t0)
	e.End("acme", "s1", "alice", "e1", t0.Add(time.Minute))
	city := e.Facts("acme", "alice", 1)[0]
	ask := func(req events.ForgetRequest) events.ForgetReply {
		body, _ := json.Marshal(req)
		m, err := e.Broker.NC.Request("memory.forget.acme", body, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if code := m.Header.Get("Nats-Service-Error-Code"); code != "" {
			t.Fatalf("%+v: %s %s", req, code, m.Data)
		}
		var reply events.ForgetReply
		_ = json.Unmarshal(m.Data, &reply)
		return reply
	}
	lives := func() (now []string, history int) {
		t.Helper()
		recs, err := e.Store.User(context.Background(), "acme", "alice")
		if err != nil {
			t.Fatal(err)
		}
		s := graph.Build(recs).At(time.Now().Add(time.Minute))
		for _, r := range s.Relations {
			if r.Relation == "lives_in" {
				now = append(now, r.ObjectName)
			}
		}
		for _, r := range s.History {
			if r.Relation == "lives_in" {
				history++
			}
		}
		return now, history
	}
	// The extractor writes the graph after the fact: wait for it.
	brokertest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if now, _ := lives(); !slices.Equal(now, []string{"Paris"}) {
			return fmt.Errorf("lives in %v, want Paris", now)
		}
		return nil
	})
	reply := ask(events.ForgetRequest{User: "alice", FactID: city.ID, Content: "The user lives in Lyon"})
	if now, history := lives(); !slices.Equal(now, []string{"Lyon"}) || history != 2 {
		t.Fatalf("after the correction: lives in %v with %d edges in the history, want Lyon and 2 (Paris ended)", now, history)
	}
	ask(events.ForgetRequest{User: "alice", FactID: reply.Fact.ID})
	if now, history := lives(); len(now) != 0 || history != 3 {
		t.Fatalf("after deleting the correction: lives in %v with %d edges in the history, want nowhere and 3", now, history)
	}
	// Deleting the superseded Paris fact ends nothing more.
	ask(events.ForgetRequest{User: "alice", FactID: city.ID})
	if now, history := lives(); len(now) != 0 || history != 3 {
		t.Fatalf("after deleting the superseded fact: lives in %v with %d edges in the history, want nowhere and 3", now, history)
	}
}
