package ingest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/internal/worker"
	"github.com/agentmem/agentmem/pkg/events"
)

// Two first deliveries of a session that this process received with a delivery to another member
// between them (a hand-over, a pin that moved) may have an undecided turn of the session between
// them: ingest asks the stream for it instead of assuming there is none. Without the delivery
// runs, turn t1 here was skipped for good (the session ended with t0 and t2).
func TestFirstDeliveriesWithAGapBetweenThemFillIt(t *testing.T) {
	env := brokertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	topo := events.DefaultTopology()
	topo.Partitions = 1
	if err := topo.Ensure(ctx, env.JS); err != nil {
		t.Fatal(err)
	}
	w, err := New(ctx, Config{Topology: topo, Partitions: []int{0}, IdleTimeout: -1}, env.JS, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		id := fmt.Sprintf("t%d", i)
		ev, _ := events.NewEvent(id, events.TypeTurn, "test", time.Date(2026, 12, 1, 9, 0, i, 0, time.UTC),
			events.Turn{Role: "user", Content: "turn " + id, User: "u1"})
		m, _ := events.BinaryMsg("memory.turns.acme.s1", ev)
		m.Header.Set(events.HeaderMsgID, events.MsgID("acme", "s1", id))
		if _, err := env.JS.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	// A plain consumer of the partition: this process gets t0 and t2, another member got t1
	// (delivered, never acknowledged) in between.
	cons, err := env.JS.CreateConsumer(ctx, topo.TurnsStream(), jetstream.ConsumerConfig{
		Durable: "runs", FilterSubject: topo.PartitionFilter(0), AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	fetch := func() jetstream.Msg {
		batch, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for m := range batch.Messages() {
			return m
		}
		t.Fatal("nothing fetched")
		return nil
	}
	first, _, third := fetch(), fetch(), fetch()
	// The consume layer numbers delivery runs (internal/worker TestDeliveryRuns): t0 and t2 came
	// in different runs.
	var group []worker.Delivery[events.TurnAddress]
	for i, m := range []jetstream.Msg{first, third} {
		meta, err := m.Metadata()
		if err != nil {
			t.Fatal(err)
		}
		group = append(group, worker.Delivery[events.TurnAddress]{Msg: m, Meta: meta, Key: events.TurnAddress{Tenant: "acme", Session: "s1", Partition: 0}, Run: uint64(i + 1)})
	}
	if _, err := w.processSession(ctx, newPartition(0, 10), group); err != nil {
		t.Fatal(err)
	}
	st, err := w.store.Load(ctx, session.Key{Tenant: "acme", Session: "s1"}, w.cfg.Budget.Conversation())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range st.Short.Entries() {
		ids = append(ids, e.ID)
	}
	if fmt.Sprint(ids) != "[t0 t1 t2]" || st.Header.Turns != 3 {
		t.Fatalf("session holds %v (%d turns), want [t0 t1 t2]", ids, st.Header.Turns)
	}
}
