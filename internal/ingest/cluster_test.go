package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/pkg/events"
)

func TestClusterStreamLeaderLostDuringIngest(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 3-node cluster; skipped with -short")
	}
	cl := brokertest.StartCluster(t, 3)
	connect := func() (*nats.Conn, jetstream.JetStream) {
		nc, err := nats.Connect(cl.URLs(), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		return nc, js
	}
	_, js := connect()
	topo := events.DefaultTopology()
	topo.Partitions = 4
	topo.Replicas = 3
	ctx := context.Background()
	setup, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := topo.Ensure(setup, js); err != nil {
		t.Fatal(err)
	}
	_, wjs := connect()
	w, err := ingest.New(setup, ingest.Config{Topology: topo, IdleTimeout: -1}, wjs, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	t.Cleanup(func() { stop(); <-done })

	const sessions, turns = 8, 800
	ids := map[string][]string{}
	publish := func(i int) {
		sess := fmt.Sprintf("s%d", i%sessions)
		id := fmt.Sprintf("%s-%04d", sess, i)
		ev, _ := events.NewEvent(id, events.TypeTurn, "test", time.Date(2026, 11, 30, 8, 0, 0, i, time.UTC),
			events.Turn{Role: "user", Content: fmt.Sprintf("clustered turn %d", i), User: "u" + sess})
		m, _ := events.BinaryMsg("memory.turns.acme."+sess, ev)
		m.Header.Set(events.HeaderMsgID, events.MsgID("acme", sess, id))
		// A publish during the leader change may fail or time out: retry with the same
		// Nats-Msg-Id, as a careful agent does; the stream stores it once.
		brokertest.CheckFor(t, 60*time.Second, 50*time.Millisecond, func() error {
			pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			_, err := js.PublishMsg(pctx, m)
			return err
		})
		ids[sess] = append(ids[sess], id)
	}
	for i := range turns / 2 {
		publish(i)
	}
	stream, err := js.Stream(ctx, topo.TurnsStream())
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	leader := cl.Server(info.Cluster.Leader)
	if leader == nil {
		t.Fatalf("no leader named %q", info.Cluster.Leader)
	}
	leader.Shutdown()
	t.Logf("shut down the turns stream leader %s", info.Cluster.Leader)
	for i := turns / 2; i < turns; i++ {
		publish(i)
	}
	bind, cancelBind := context.WithTimeout(ctx, 30*time.Second)
	defer cancelBind()
	store, err := session.NewStore(bind, js, topo)
	if err != nil {
		t.Fatal(err)
	}
	brokertest.CheckFor(t, 90*time.Second, 100*time.Millisecond, func() error {
		for s := range sessions {
			sess := fmt.Sprintf("s%d", s)
			h, _, err := store.Header(ctx, session.Key{Tenant: "acme", Session: sess})
			if err != nil {
				return err
			}
			if h.Turns < len(ids[sess]) {
				return fmt.Errorf("%s: %d of %d turns applied", sess, h.Turns, len(ids[sess]))
			}
		}
		return nil
	})
	for s := range sessions {
		sess := fmt.Sprintf("s%d", s)
		var st *session.State
		brokertest.CheckFor(t, 20*time.Second, 100*time.Millisecond, func() error {
			var err error
			st, err = store.Load(ctx, session.Key{Tenant: "acme", Session: sess}, 0)
			return err
		})
		if got := turnIDs(st); !slices.Equal(got, ids[sess]) {
			t.Fatalf("%s: lost, doubled or reordered turns:\n got %v\nwant %v", sess, got, ids[sess])
		}
	}
	// Each turn is stored once (ingest's announcements are on their own subjects).
	info, err = stream.Info(ctx, jetstream.WithSubjectFilter("*.memory.turns.>"))
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatal(err)
	}
	if info != nil && storedTurns(info) != turns {
		t.Fatalf("the turns stream holds %d turns, want %d", storedTurns(info), turns)
	}
}
