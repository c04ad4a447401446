package worker

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
)

// A batch that runs longer than the consumer's AckWait keeps its messages: hold sends
// InProgress, so JetStream does not redeliver them meanwhile. Without the heartbeats the second
// fetch below gets the redelivery. (Moved from internal/ingest with the heartbeat.)
func TestLongBatchKeepsItsMessages(t *testing.T) {
	env := brokertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const ackWait = 300 * time.Millisecond
	if _, err := env.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "HB", Subjects: []string{"hb.>"}}); err != nil {
		t.Fatal(err)
	}
	cons, err := env.JS.CreateConsumer(ctx, "HB", jetstream.ConsumerConfig{Durable: "c", AckPolicy: jetstream.AckExplicitPolicy, AckWait: ackWait})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.JS.Publish(ctx, "hb.1", []byte("x")); err != nil {
		t.Fatal(err)
	}
	first, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var batch []jetstream.Msg
	for m := range first.Messages() {
		batch = append(batch, m)
	}
	if len(batch) != 1 {
		t.Fatalf("fetched %d messages, want 1", len(batch))
	}
	release := hold(batch, ackWait/4)
	func(b []jetstream.Msg) {
		// While the batch runs for four AckWaits, the consumer has nothing to redeliver.
		again, err := cons.Fetch(1, jetstream.FetchMaxWait(4*ackWait))
		if err != nil {
			t.Error(err)
			return
		}
		for m := range again.Messages() {
			md, _ := m.Metadata()
			t.Errorf("message redelivered while its batch ran (delivery %d)", md.NumDelivered)
		}
		if err := b[0].DoubleAck(ctx); err != nil {
			t.Error(err)
		}
	}(batch)
	release()
	info, err := cons.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.NumRedelivered != 0 || info.NumAckPending != 0 {
		t.Fatalf("redelivered %d, ack pending %d; want 0 and 0", info.NumRedelivered, info.NumAckPending)
	}
}
