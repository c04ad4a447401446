package eval

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
)

func TestWaitDrainedNeedsAStreamAndConsumers(t *testing.T) {
	env := brokertest.Start(t)
	ctx := context.Background()
	if _, err := waitDrained(ctx, env.JS, 10*time.Millisecond, 5*time.Second, zerolog.Nop()); err == nil {
		t.Fatal("no stream holds the turns, yet the wait succeeded")
	}
	if _, err := env.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"memory.turns.>"}}); err != nil {
		t.Fatal(err)
	}
	_, err := waitDrained(ctx, env.JS, 10*time.Millisecond, 5*time.Second, zerolog.Nop())
	if err == nil || !strings.Contains(err.Error(), "no consumers") {
		t.Fatalf("a stream without consumers: %v", err)
	}
}

func TestWaitDrainedNamesTheBusyConsumer(t *testing.T) {
	env := brokertest.Start(t)
	ctx := context.Background()
	if _, err := env.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"memory.turns.>"}}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"idle", "stuck"} {
		if _, err := env.JS.CreateOrUpdateConsumer(ctx, "T", jetstream.ConsumerConfig{Durable: name, AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := env.JS.Publish(ctx, "memory.turns.t.s", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	// Both consumers have the message pending; "idle" takes and acknowledges it.
	c, err := env.JS.Consumer(ctx, "T", "idle")
	if err != nil {
		t.Fatal(err)
	}
	m, err := c.Next(jetstream.FetchMaxWait(5 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.DoubleAck(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = waitDrained(ctx, env.JS, 10*time.Millisecond, time.Second, zerolog.Nop())
	if err == nil || !strings.Contains(err.Error(), "stuck pending=1") || strings.Contains(err.Error(), "idle") {
		t.Fatalf("want a timeout naming only the stuck consumer, got %v", err)
	}

	// Once it is consumed too, the wait returns.
	c, err = env.JS.Consumer(ctx, "T", "stuck")
	if err != nil {
		t.Fatal(err)
	}
	if m, err = c.Next(jetstream.FetchMaxWait(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := m.DoubleAck(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := waitDrained(ctx, env.JS, 10*time.Millisecond, 5*time.Second, zerolog.Nop()); err != nil {
		t.Fatalf("drained: %v", err)
	}
}
