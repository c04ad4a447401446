package ingest_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/pkg/events"
)

func TestDuplicateTurnStoredAndAppliedOnce(t *testing.T) {
	h := newHarness(t, ingest.Config{IdleTimeout: -1})
	tr := turn{id: "dup-1", role: "user", content: "I prefer tea over coffee", user: "u1"}
	first := h.publish("acme", "s1", tr)
	again := h.publish("acme", "s1", tr)
	if first.Duplicate || !again.Duplicate || again.Sequence != first.Sequence {
		t.Fatalf("second publish: duplicate=%t seq=%d; want duplicate of seq %d", again.Duplicate, again.Sequence, first.Sequence)
	}
	// A late copy (after the duplicate window, simulated by leaving out Nats-Msg-Id) is stored
	// again by JetStream but must not be applied again.
	ev, err := events.NewEvent(tr.id, events.TypeTurn, "test", time.Now(), events.Turn{Role: "user", Content: tr.content, User: "u1"})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := events.BinaryMsg("memory.turns.acme.s1", ev)
	if err != nil {
		t.Fatal(err)
	}
	late := h.publishMsg(msg)
	if late.Duplicate {
		t.Fatal("the copy without Nats-Msg-Id should be stored")
	}
	next := h.publish("acme", "s1", turn{id: "dup-2", role: "assistant", content: "Tea it is."})
	hd := h.waitDecided("acme", "s1", next.Sequence)
	if hd.Turns != 2 {
		t.Fatalf("applied %d turns, want 2", hd.Turns)
	}
	if ids := turnIDs(h.load("acme", "s1")); !slices.Equal(ids, []string{"dup-1", "dup-2"}) {
		t.Fatalf("entries %v", ids)
	}
	if st := h.worker.Stats(); st.Duplicates != 1 {
		t.Fatalf("duplicates counted %d, want 1", st.Duplicates)
	}
}

func TestBadInputDeadLetteredAndNextTurnApplied(t *testing.T) {
	h := newHarness(t, ingest.Config{IdleTimeout: -1, MaxContentBytes: 64})
	const tenant, sess = "acme", "bad"
	h.publish(tenant, sess, turn{id: "owner", role: "user", content: "hello", user: "alice"})

	good := func(id string) *nats.Msg {
		ev, err := events.NewEvent(id, events.TypeTurn, "test", time.Now(), events.Turn{Role: "user", Content: "fine", User: "alice"})
		if err != nil {
			t.Fatal(err)
		}
		m, err := events.BinaryMsg("memory.turns."+tenant+"."+sess, ev)
		if err != nil {
			t.Fatal(err)
		}
		m.Header.Set(events.HeaderMsgID, events.MsgID(tenant, sess, id))
		return m
	}
	cases := []struct {
		name   string
		msg    func() *nats.Msg
		reason string // part of the dead letter's reason
		dlq    string // dead-letter subject
	}{
		{"invalid body", func() *nats.Msg { m := good("b1"); m.Data = []byte("{not json"); return m }, "JSON", "memory.dlq.acme.bad"},
		{"missing id", func() *nats.Msg { m := good("b2"); m.Header.Del("ce-id"); m.Header.Del(events.HeaderMsgID); return m }, "id", "memory.dlq.acme.bad"},
		{"Nats-Msg-Id mismatch", func() *nats.Msg { m := good("b3"); m.Header.Set(events.HeaderMsgID, "acme.other.b3"); return m }, "Nats-Msg-Id", "memory.dlq.acme.bad"},
		{"unknown type", func() *nats.Msg { m := good("b4"); m.Header.Set("ce-type", "agentmem.nonsense.v1"); return m }, "unknown event type", "memory.dlq.acme.bad"},
		{"other user", func() *nats.Msg {
			ev, _ := events.NewEvent("b5", events.TypeTurn, "test", time.Now(), events.Turn{Role: "user", Content: "mine now", User: "mallory"})
			m, _ := events.BinaryMsg("memory.turns."+tenant+"."+sess, ev)
			return m
		}, `belongs to user "alice"`, "memory.dlq.acme.bad"},
		{"content over the limit", func() *nats.Msg {
			ev, _ := events.NewEvent("b6", events.TypeTurn, "test", time.Now(), events.Turn{Role: "user", Content: strings.Repeat("x", 65), User: "alice"})
			m, _ := events.BinaryMsg("memory.turns."+tenant+"."+sess, ev)
			return m
		}, "limit is 64", "memory.dlq.acme.bad"},
		{"bad role", func() *nats.Msg {
			ev, _ := events.NewEvent("b7", events.TypeTurn, "test", time.Now(), events.Turn{Role: "robot", Content: "beep", User: "alice"})
			m, _ := events.BinaryMsg("memory.turns."+tenant+"."+sess, ev)
			return m
		}, "role", "memory.dlq.acme.bad"},
		{"content not UTF-8", func() *nats.Msg {
			m := good("b10")
			m.Data = []byte("{\"role\":\"user\",\"content\":\"caf\xe9\",\"user\":\"alice\"}")
			return m
		}, "data: not valid UTF-8 at byte 29", "memory.dlq.acme.bad"},
		{"bad subject token", func() *nats.Msg {
			m := good("b8")
			m.Subject = "memory.turns.acme.b@d"
			m.Header.Del(events.HeaderMsgID)
			return m
		}, "session", "memory.dlq._"},
		{"malformed subject", func() *nats.Msg {
			m := good("b9")
			m.Subject = "memory.turns.acme.bad.extra"
			m.Header.Del(events.HeaderMsgID)
			return m
		}, "is not memory.turns.<tenant>.<session>", "memory.dlq._"},
	}
	subs := map[string]*nats.Subscription{}
	for _, s := range []string{"memory.dlq.acme.bad", "memory.dlq._"} {
		sub, err := h.env.NC.SubscribeSync(s)
		if err != nil {
			t.Fatal(err)
		}
		subs[s] = sub
	}
	for _, c := range cases {
		h.publishMsg(c.msg())
	}
	ack := h.publishMsg(good("after"))
	hd := h.waitDecided(tenant, sess, ack.Sequence)
	if ids := turnIDs(h.load(tenant, sess)); !slices.Equal(ids, []string{"owner", "after"}) {
		t.Fatalf("entries %v, want the owner's turn and the good turn after the bad ones", ids)
	}
	if hd.Rejected != 8 {
		t.Errorf("session recorded %d rejections, want 8", hd.Rejected)
	}
	got := map[string][]events.DeadLetter{}
	brokertest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		got = map[string][]events.DeadLetter{}
		for _, dl := range h.deadLetters() {
			got[dl.Subject] = append(got[dl.Subject], dl)
		}
		n := 0
		for _, l := range got {
			n += len(l)
		}
		if n < len(cases) {
			return fmt.Errorf("%d dead letters, want %d", n, len(cases))
		}
		return nil
	})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := subs[c.dlq].NextMsg(5 * time.Second)
			if err != nil {
				t.Fatalf("no dead letter on %s: %v", c.dlq, err)
			}
			var found bool
			for _, l := range got {
				for _, dl := range l {
					if strings.Contains(dl.Reason, c.reason) {
						found = true
						if dl.Stream == "" || dl.StreamSeq == 0 || dl.Consumer == "" || dl.BodySize == 0 {
							t.Errorf("dead letter lacks its origin: %+v", dl)
						}
					}
				}
			}
			if !found {
				t.Errorf("no dead letter with a reason containing %q (the one on %s was %s)", c.reason, c.dlq, m.Header.Get("Agentmem-Reason"))
			}
		})
	}
}

// publishMany publishes n turns round-robin over sessions and returns the ids per session in
// publish order and the highest sequence per session.
func publishMany(h *harness, tenant string, sessions, n int) (map[string][]string, map[string]uint64) {
	ids := map[string][]string{}
	last := map[string]uint64{}
	for i := range n {
		sess := fmt.Sprintf("s%d", i%sessions)
		id := fmt.Sprintf("%s-%04d", sess, i)
		role := "user"
		if (i/sessions)%2 == 1 {
			role = "assistant"
		}
		ack := h.publish(tenant, sess, turn{id: id, role: role, content: fmt.Sprintf("turn %d says hello about topic %d", i, i%7), user: "u-" + sess})
		ids[sess] = append(ids[sess], id)
		last[sess] = ack.Sequence
	}
	return ids, last
}

func checkSessions(t *testing.T, h *harness, tenant string, ids map[string][]string, last map[string]uint64) {
	t.Helper()
	for sess, want := range ids {
		hd := h.waitDecided(tenant, sess, last[sess])
		if hd.Turns != len(want) {
			t.Errorf("%s: %d turns applied, want %d", sess, hd.Turns, len(want))
		}
		if got := turnIDs(h.load(tenant, sess)); !slices.Equal(got, want) {
			t.Errorf("%s: entries out of order, lost or doubled:\n got %v\nwant %v", sess, got, want)
		}
	}
}

func TestNewConsumerProcessCarriesOn(t *testing.T) {
	h := newHarness(t, ingest.Config{IdleTimeout: -1, BatchSize: 16})
	ids1, _ := publishMany(h, "acme", 5, 150)
	// Stop the worker while it may be half-way through, then publish more with nobody consuming.
	brokertest.CheckFor(t, 10*time.Second, 5*time.Millisecond, func() error {
		if h.worker.Stats().Applied < 20 {
			return fmt.Errorf("applied %d", h.worker.Stats().Applied)
		}
		return nil
	})
	h.stop()
	more, last := publishManyFrom(h, "acme", 5, 150, 150)
	for s, l := range more {
		ids1[s] = append(ids1[s], l...)
	}
	h.startWorker()
	checkSessions(t, h, "acme", ids1, last)
}

func TestCrashedWorkerTurnsAppliedInOrderByNextWorker(t *testing.T) {
	env := brokertest.Start(t)
	h := startOn(t, env, ingest.Config{IdleTimeout: -1, BatchSize: 8})
	h.stop()
	ids, last := publishMany(h, "acme", 4, 120)
	// A worker that crashed: it took the first messages of every partition and never acknowledged
	// them. JetStream redelivers them only after AckWait (60s); the next worker must apply them
	// first, in order, instead of applying the later turns of those sessions before them.
	crashNC := env.Connect(t)
	crashJS, err := jetstream.New(crashNC)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	taken := 0
	for p := range h.topo.Partitions {
		cons, err := crashJS.Consumer(ctx, h.topo.TurnsStream(), ingest.TurnsConsumerName(h.topo, p))
		if err != nil {
			t.Fatal(err)
		}
		batch, err := cons.Fetch(5, jetstream.FetchMaxWait(time.Second), jetstream.FetchPriorityGroup(ingest.PriorityGroup))
		if err != nil {
			t.Fatal(err)
		}
		for range batch.Messages() {
			taken++
		}
	}
	if taken == 0 {
		t.Fatal("the crashed worker took no messages")
	}
	crashNC.Close()
	h.startWorker()
	checkSessions(t, h, "acme", ids, last)
	if st := h.worker.Stats(); st.Filled != uint64(taken) {
		t.Errorf("read %d undecided messages back from the stream, want the %d the crashed worker took", st.Filled, taken)
	}
}

func publishManyFrom(h *harness, tenant string, sessions, n, from int) (map[string][]string, map[string]uint64) {
	ids := map[string][]string{}
	last := map[string]uint64{}
	for i := from; i < from+n; i++ {
		sess := fmt.Sprintf("s%d", i%sessions)
		id := fmt.Sprintf("%s-%04d", sess, i)
		ack := h.publish(tenant, sess, turn{id: id, role: "user", content: fmt.Sprintf("later turn %d", i), user: "u-" + sess})
		ids[sess] = append(ids[sess], id)
		last[sess] = ack.Sequence
	}
	return ids, last
}
