package ingest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/pkg/events"
)

// storedIDs lists the ce-ids of a session's messages in stream order.
func storedIDs(t *testing.T, h *harness, tenant, sess string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cons, err := h.env.JS.OrderedConsumer(ctx, h.topo.TurnsStream(), jetstream.OrderedConsumerConfig{FilterSubjects: []string{"*.memory.turns." + tenant + "." + sess}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for {
		batch, err := cons.FetchNoWait(500)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for m := range batch.Messages() {
			n++
			ids = append(ids, m.Headers().Get("ce-id"))
		}
		if n == 0 {
			return ids
		}
	}
}

// intake publishes a turn to memory.intake.<tenant>.<session>, as an agent's publish arrives in
// the service account, and returns admission's answer.
func intakeMsg(t *testing.T, tenant, sess, id string) *nats.Msg {
	t.Helper()
	ev, err := events.NewEvent(id, events.TypeTurn, "test", time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC), events.Turn{Role: "user", Content: "turn " + id, User: "u"})
	if err != nil {
		t.Fatal(err)
	}
	subj, _ := events.IntakeSubject(tenant, sess)
	m, err := events.BinaryMsg(subj, ev)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Two ingest processes admit every turn: a session's turns sent back to back, without waiting
// for their acknowledgements, are stored once each and in the order they were sent.
func TestAdmissionKeepsOrderWithTwoProcesses(t *testing.T) {
	h := newHarness(t, ingest.Config{IdleTimeout: -1})
	h.startWorker() // a second process on its own connection
	nc := h.env.Connect(t)
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(256))
	if err != nil {
		t.Fatal(err)
	}
	// Both processes subscribe to the intake; wait until each answers (every process answers
	// every turn). A process that joined in the middle of the burst below could store a later
	// turn before the earlier ones the other process still holds: the order this test checks is
	// that of processes that both saw the session's turns from the first.
	inbox := nc.NewRespInbox()
	answers, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	brokertest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		m := intakeMsg(t, "t", "warm", "w")
		m.Reply = inbox
		if err := nc.PublishMsg(m); err != nil {
			return err
		}
		n := 0
		for {
			if _, err := answers.NextMsg(500 * time.Millisecond); err != nil {
				break
			}
			n++
		}
		if n < 2 {
			return fmt.Errorf("%d answers to a turn, want one from each of the two processes", n)
		}
		return nil
	})
	_ = answers.Unsubscribe()
	const n = 300
	var futs []jetstream.PubAckFuture
	for i := range n {
		// A loaded machine may take a while to answer 256 in flight: wait for room.
		f, err := js.PublishMsgAsync(intakeMsg(t, "t", "s", fmt.Sprintf("%03d", i)), jetstream.WithStallWait(30*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		futs = append(futs, f)
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(30 * time.Second):
		t.Fatal("admission did not answer every turn in 30s")
	}
	for i, f := range futs {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			t.Fatalf("turn %d: %v", i, err)
		}
	}
	ids := storedIDs(t, h, "t", "s")
	if len(ids) != n {
		t.Fatalf("%d messages stored, want %d (each once)", len(ids), n)
	}
	for i, id := range ids {
		if want := fmt.Sprintf("%03d", i); id != want {
			t.Fatalf("stream position %d holds %s, want %s: order lost", i, id, want)
		}
	}
	// The stored Nats-Msg-Id is the derived one.
	ctx := context.Background()
	st, _ := h.env.JS.Stream(ctx, h.topo.TurnsStream())
	raw, err := st.GetLastMsgForSubject(ctx, events.PartitionedSubject(events.Partition("t", "s", h.topo.Partitions), "t", "s"))
	if err != nil {
		t.Fatalf("the stream's partition is not events.Partition's: %v", err)
	}
	if got := raw.Header.Get(events.HeaderMsgID); got != "t.s.299" {
		t.Errorf("stored Nats-Msg-Id %q, want t.s.299", got)
	}
}

// events.Partition computes the partition the stream's subject transform picks.
func TestPartitionMatchesTheStream(t *testing.T) {
	h := newHarness(t, ingest.Config{IdleTimeout: -1})
	ctx := context.Background()
	st, err := h.env.JS.Stream(ctx, h.topo.TurnsStream())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		tenant, sess := fmt.Sprintf("tenant-%d", i%3), fmt.Sprintf("sess_%d", i)
		ack := h.publish(tenant, sess, turn{id: "x", role: "user", content: "hi", user: "u"})
		raw, err := st.GetMsg(ctx, ack.Sequence)
		if err != nil {
			t.Fatal(err)
		}
		if want := events.PartitionedSubject(events.Partition(tenant, sess, h.topo.Partitions), tenant, sess); raw.Subject != want {
			t.Fatalf("stored as %s, events.Partition says %s", raw.Subject, want)
		}
	}
}

// Bad input through admission: an id-less turn is stored once (its content's id) however many
// processes admit it, and dead-lettered by ingest; a forged Nats-Msg-Id is refused with a 400
// and a dead letter; an answer only ever goes to an inbox.
func TestAdmissionBadInput(t *testing.T) {
	h := newHarness(t, ingest.Config{IdleTimeout: -1})
	h.startWorker()
	nc := h.env.Connect(t)
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	brokertest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		cctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer cancel()
		_, err := js.PublishMsg(cctx, intakeMsg(t, "t", "warm", "w"))
		return err
	})
	noID := intakeMsg(t, "t", "bad", "x")
	noID.Header.Del("ce-id")
	for range 3 {
		if _, err := js.PublishMsg(ctx, noID); err != nil {
			t.Fatalf("id-less turn: %v (it is stored, then dead-lettered)", err)
		}
	}
	forged := intakeMsg(t, "t", "bad", "y")
	forged.Header.Set(events.HeaderMsgID, "other.s.y")
	var apiErr *jetstream.APIError
	if _, err := js.PublishMsg(ctx, forged); err == nil || !asAPIError(err, &apiErr) || apiErr.Code != 400 {
		t.Fatalf("forged Nats-Msg-Id: %v, want a 400", err)
	}
	brokertest.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		var reasons []string
		for _, dl := range h.deadLetters() {
			reasons = append(reasons, dl.Reason)
		}
		if len(reasons) != 2 {
			return fmt.Errorf("dead letters %q, want the id-less turn once and the forged id", reasons)
		}
		return nil
	})
	if ids := storedIDs(t, h, "t", "bad"); len(ids) != 1 {
		t.Fatalf("%d copies of the id-less turn stored, want 1", len(ids))
	}
	// A reply subject that is not an inbox gets nothing, and the turn is not stored.
	sub, err := nc.SubscribeSync("memory.facts.t.u")
	if err != nil {
		t.Fatal(err)
	}
	m := intakeMsg(t, "t", "deputy", "z")
	m.Reply = "memory.facts.t.u"
	if err := nc.PublishMsg(m); err != nil {
		t.Fatal(err)
	}
	if got, err := sub.NextMsg(300 * time.Millisecond); err == nil {
		t.Fatalf("admission answered on %s: %s", got.Subject, got.Data)
	}
	if ids := storedIDs(t, h, "t", "deputy"); len(ids) != 0 {
		t.Fatalf("a turn with a refused reply subject was stored: %v", ids)
	}
	// The answer to a good turn is the PubAck JSON any JetStream client reads.
	resp, err := nc.RequestMsg(intakeMsg(t, "t", "good", "g"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var ack jetstream.PubAck
	if err := json.Unmarshal(resp.Data, &ack); err != nil || ack.Stream != h.topo.TurnsStream() || ack.Sequence == 0 {
		t.Fatalf("answer %s: %+v %v", resp.Data, ack, err)
	}
}

func asAPIError(err error, target **jetstream.APIError) bool { return errors.As(err, target) }
