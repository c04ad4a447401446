package worker

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/deadletter"
)

// Deliveries with consecutive consumer sequences share a run; a delivery to another member in
// between starts a new one (ingest then asks the stream for what lies between them).
func TestDeliveryRuns(t *testing.T) {
	env := brokertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := env.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "RUNS", Subjects: []string{"runs.>"}}); err != nil {
		t.Fatal(err)
	}
	cons, err := env.JS.CreateConsumer(ctx, "RUNS", jetstream.ConsumerConfig{Durable: "c", AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for range 4 {
		if _, err := env.JS.Publish(ctx, "runs.s", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	var msgs []jetstream.Msg
	for range 4 {
		b, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for m := range b.Messages() {
			msgs = append(msgs, m)
		}
	}
	var runs []uint64
	o := NewOrdered(OrderedConfig{Name: "test", Heartbeat: time.Minute}, env.JS, deadletter.NewWriter(env.JS, 0), zerolog.Nop())
	f := &feed{settler: &settler{log: zerolog.Nop(), backoff: Backoff}, consumed: Feed[string]{
		Group: func(jetstream.Msg) (string, error) { return "s", nil },
		Handle: func(_ context.Context, g []Delivery[string]) ([]error, error) {
			for _, d := range g {
				runs = append(runs, d.Run)
			}
			return nil, nil
		},
	}.consumer()}
	// This process got deliveries 1, 2 and 4; delivery 3 went to another member.
	o.batch(f, []jetstream.Msg{msgs[0], msgs[1]})
	o.batch(f, []jetstream.Msg{msgs[3]})
	if len(runs) != 3 || runs[0] != runs[1] || runs[2] == runs[1] {
		t.Fatalf("runs %v: want the first two in one run and the third in another", runs)
	}
}
