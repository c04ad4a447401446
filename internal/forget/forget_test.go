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
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/extract"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/internal/longterm"
	"github.com/agentmem/agentmem/pkg/events"
)

type env struct {
	t     *testing.T
	env   *brokertest.Env
	topo  events.Topology
	store *longterm.Store
}

func start(t *testing.T, extractors int, chat extract.Chat) *env {
	t.Helper()
	be := brokertest.Start(t)
	topo := events.DefaultTopology()
	topo.Partitions = 2
	ctx := context.Background()
	if err := topo.Ensure(ctx, be.JS); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, env: be, topo: topo}
	in, err := ingest.New(ctx, ingest.Config{Topology: topo, IdleTimeout: -1}, jsOf(t, be), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	e.run(in.Run)
	for range extractors {
		x, err := extract.New(ctx, extract.Config{Topology: topo, Backoff: func(uint64) time.Duration { return 20 * time.Millisecond }},
			jsOf(t, be), chat, "test-model", zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		e.run(x.Run)
	}
	if e.store, err = longterm.Open(ctx, be.JS, topo); err != nil {
		t.Fatal(err)
	}
	return e
}

func jsOf(t *testing.T, be *brokertest.Env) jetstream.JetStream {
	js, err := jetstream.New(be.Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	return js
}

func (e *env) run(fn func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fn(ctx) }()
	e.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			e.t.Errorf("worker: %v", err)
		}
	})
}

func (e *env) publish(tenant, sess, id, typ string, at time.Time, data any) {
	e.t.Helper()
	ev, err := events.NewEvent(id, typ, "test", at, data)
	if err != nil {
		e.t.Fatal(err)
	}
	m, err := events.BinaryMsg("memory.turns."+tenant+"."+sess, ev)
	if err != nil {
		e.t.Fatal(err)
	}
	m.Header.Set(events.HeaderMsgID, events.MsgID(tenant, sess, id))
	if _, err := e.env.JS.PublishMsg(context.Background(), m); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) say(tenant, sess, user, id, text string, at time.Time) {
	e.publish(tenant, sess, id, events.TypeTurn, at, events.Turn{Role: "user", Content: text, User: user})
}

func (e *env) end(tenant, sess, user, id string, at time.Time) {
	e.publish(tenant, sess, id, events.TypeSessionEnded, at, events.SessionEnded{User: user})
}

// facts waits until the user has want live facts (bounded) and returns every fact.
func (e *env) facts(tenant, user string, want int) []longterm.Fact {
	e.t.Helper()
	var recs longterm.UserRecords
	brokertest.CheckFor(e.t, 15*time.Second, 20*time.Millisecond, func() error {
		var err error
		if recs, err = e.store.User(context.Background(), tenant, user); err != nil {
			return err
		}
		live := 0
		for _, f := range recs.Facts {
			if f.Live() {
				live++
			}
		}
		if live < want {
			return fmt.Errorf("%d live facts, want %d", live, want)
		}
		return nil
	})
	return recs.Facts
}

// drained waits until ingest and then the extractors have nothing pending: ingest first, since it
// announces the session ends the extractors read.
func (e *env) drained() {
	e.t.Helper()
	ctx := context.Background()
	var consumers [][2]string
	for p := range e.topo.Partitions {
		consumers = append(consumers, [2]string{e.topo.TurnsStream(), ingest.TurnsConsumerName(e.topo, p)})
	}
	consumers = append(consumers, [2]string{e.topo.TurnsStream(), extract.EndConsumerName(e.topo)},
		[2]string{e.topo.SummaryStream(), extract.SummaryConsumerName(e.topo)})
	brokertest.CheckFor(e.t, 15*time.Second, 20*time.Millisecond, func() error {
		for _, sc := range consumers {
			stream, name := sc[0], sc[1]
			c, err := e.env.JS.Consumer(ctx, stream, name)
			if err != nil {
				return err
			}
			info, err := c.Info(ctx)
			if err != nil {
				return err
			}
			if info.NumPending+uint64(info.NumAckPending) > 0 {
				return fmt.Errorf("%s: %d pending, %d unacknowledged", name, info.NumPending, info.NumAckPending)
			}
		}
		return nil
	})
}

var t0 = time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)

func TestForgetLeavesNothingOfTheUser(t *testing.T) {
	e := start(t, 1, nil)
	e.say("acme", "a1", "alice", "t1", "I live in Paris.", t0)
	e.say("acme", "a2", "alice", "t2", "I prefer tea.", t0.Add(time.Hour))
	e.end("acme", "a1", "alice", "e1", t0.Add(2*time.Hour))
	e.end("acme", "a2", "alice", "e2", t0.Add(2*time.Hour))
	e.say("acme", "b1", "bob", "u1", "I live in Rome.", t0)
	e.end("acme", "b1", "bob", "e3", t0.Add(time.Hour))
	// A bad turn of alice's, so that a dead letter exists too.
	e.publish("acme", "a1", "bad", events.TypeTurn, t0, map[string]string{"role": "robot", "content": "x"})
	e.facts("acme", "alice", 2)
	e.facts("acme", "bob", 1)
	e.drained()

	body, _ := json.Marshal(events.ForgetRequest{User: "alice"})
	m, err := e.env.NC.Request("memory.forget.acme", body, 30*time.Second)
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
	if reply.Forgotten["turns"] < 3 || reply.Forgotten["facts"] < 2 || reply.Forgotten["sessions"] != 2 {
		t.Fatalf("forgotten %v", reply.Forgotten)
	}
	ctx := context.Background()
	// Nothing of alice in any stream or bucket; bob untouched.
	names := e.env.JS.StreamNames(ctx)
	for name := range names.Name() {
		s, err := e.env.JS.Stream(ctx, name)
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
				if name == "KV_"+e.topo.SessionBucket() {
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
	if facts := e.facts("acme", "bob", 1); len(facts) != 1 {
		t.Fatalf("bob's facts: %+v", facts)
	}
	// A new turn in a forgotten session starts afresh.
	e.say("acme", "a1", "carol", "c1", "I prefer coffee.", t0.Add(3*time.Hour))
	e.end("acme", "a1", "carol", "c2", t0.Add(3*time.Hour))
	e.facts("acme", "carol", 1)
}

func TestDeleteAndCorrectOneFact(t *testing.T) {
	e := start(t, 1, nil)
	e.say("acme", "s1", "alice", "t1", "I live in Paris. I prefer tea.", t0)
	e.end("acme", "s1", "alice", "e1", t0.Add(time.Minute))
	facts := e.facts("acme", "alice", 2)
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
		m, err := e.env.NC.Request("memory.forget.acme", body, 10*time.Second)
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
	recs, err := e.store.User(context.Background(), "acme", "alice")
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
		e.say("acme", sess, "alice", fmt.Sprintf("t%d", i+1), text, at)
		e.end("acme", sess, "alice", fmt.Sprintf("e%d", i+1), at.Add(time.Minute))
		e.drained()
	}
	var live longterm.Fact
	for _, f := range e.facts("acme", "alice", 1) {
		if f.Live() {
			live = f
		}
	}
	body, _ := json.Marshal(events.ForgetRequest{User: "alice", FactID: live.ID, Content: "the user LIVES in Paris!"})
	m, err := e.env.NC.Request("memory.forget.acme", body, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if code := m.Header.Get("Nats-Service-Error-Code"); code != "400" || !strings.Contains(string(m.Data), `"content"`) {
		t.Fatalf("a correction to the same content: %q %s", code, m.Data)
	}
	still, err := e.store.Fact(context.Background(), "acme", "alice", live.ID)
	if err != nil || !still.Live() {
		t.Fatalf("the fact after the refused correction: %+v %v", still, err)
	}
}
