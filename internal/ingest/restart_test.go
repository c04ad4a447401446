package ingest_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/pkg/events"
)

// TestPartitionThatCannotStartIsStartedAgain: a partition whose consumer cannot be bound when its
// process takes it (here it is deleted; after a server restart its leader may not be elected
// yet) is started again until it can be. Before, a member kept such a partition as its own while
// serving nobody (make chaos: a turn unapplied for minutes), and a static worker stopped.
func TestPartitionThatCannotStartIsStartedAgain(t *testing.T) {
	for _, mode := range []struct {
		name string
		cfg  ingest.Config
	}{
		{"members", ingest.Config{IdleTimeout: -1}},
		{"static", ingest.Config{Partitions: []int{0, 1, 2, 3}, IdleTimeout: -1}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			env := brokertest.Start(t)
			topo := events.DefaultTopology()
			topo.Partitions = 4
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			if err := topo.Ensure(ctx, env.JS); err != nil {
				t.Fatal(err)
			}
			store, err := session.NewStore(ctx, env.JS, topo)
			if err != nil {
				t.Fatal(err)
			}
			cfg := mode.cfg
			cfg.Topology = topo
			h := &harness{t: t, env: env, topo: topo, store: store, cfg: cfg}
			js, err := jetstream.New(env.Connect(t))
			if err != nil {
				t.Fatal(err)
			}
			var logs syncBuffer
			w, err := ingest.New(ctx, cfg, js, zerolog.New(&logs))
			if err != nil {
				t.Fatal(err)
			}
			// The partition of session s1 loses its turns consumer before the worker starts it.
			p := events.Partition("acme", "s1", topo.Partitions)
			if err := env.JS.DeleteConsumer(ctx, topo.TurnsStream(), ingest.TurnsConsumerName(topo, p)); err != nil {
				t.Fatal(err)
			}
			runCtx, stop := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- w.Run(runCtx) }()
			t.Cleanup(func() {
				stop()
				select {
				case err := <-done:
					if err != nil {
						t.Errorf("ingest run: %v", err)
					}
				case <-time.After(30 * time.Second):
					t.Errorf("ingest did not stop within 30s")
				}
			})
			ack := h.publish("acme", "s1", turn{id: "t1", role: "user", content: "hello", user: "u1"})
			brokertest.CheckFor(t, 20*time.Second, 10*time.Millisecond, func() error {
				if !strings.Contains(logs.String(), "partition stopped; starting it again") {
					return errors.New("the partition has not failed to start yet")
				}
				return nil
			})
			select {
			case err := <-done:
				t.Fatalf("the worker stopped: %v", err)
			default:
			}
			// The consumer comes back (as when its leader is elected): the partition is served.
			if _, err := ingest.New(ctx, cfg, env.JS, zerolog.Nop()); err != nil {
				t.Fatal(err)
			}
			if hd := h.waitDecided("acme", "s1", ack.Sequence); hd.Turns != 1 {
				t.Fatalf("session header %+v, want the turn applied", hd)
			}
		})
	}
}
