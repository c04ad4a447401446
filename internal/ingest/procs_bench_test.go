package ingest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/pkg/events"
)

// BenchmarkIngestProcesses measures ingest end to end (publish -> every partition consumer
// drained) with 1, 2 and 3 ingest OS processes, next to raw JetStream publish+consume of the same
// messages on the same server in the same run.
func BenchmarkIngestProcesses(b *testing.B) {
	bin, err := buildIngest()
	if err != nil {
		b.Fatal(err)
	}
	const turns, sessions = 20000, 100
	for _, procs := range []int{1, 2, 3} {
		b.Run(fmt.Sprintf("procs=%d", procs), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				env := brokertest.Start(b)
				js, err := jetstream.New(env.NC, jetstream.WithPublishAsyncMaxPending(1000))
				if err != nil {
					b.Fatal(err)
				}
				ctx := context.Background()
				msgs := buildTurns(b, "procs", turns, sessions)
				raw := rawRate(b, env, js, msgs)
				topo := events.DefaultTopology()
				if err := topo.Ensure(ctx, js); err != nil {
					b.Fatal(err)
				}
				var members []*member
				for p := range procs {
					members = append(members, startMember(b, bin, env.URL, fmt.Sprintf("b%d", p)))
				}
				// Wait until the members split the partitions among themselves.
				brokertest.CheckFor(b, 30*time.Second, 50*time.Millisecond, func() error {
					total := 0
					for _, m := range members {
						total += len(m.partitions())
					}
					if total != topo.Partitions || (procs > 1 && len(members[procs-1].partitions()) == 0) {
						return fmt.Errorf("partitions owned: %d", total)
					}
					return nil
				})
				start := time.Now()
				publishAll(b, js, msgs)
				brokertest.CheckFor(b, 120*time.Second, 10*time.Millisecond, func() error {
					for p := range topo.Partitions {
						c, err := js.Consumer(ctx, topo.TurnsStream(), ingest.TurnsConsumerName(topo, p))
						if err != nil {
							return err
						}
						info, err := c.Info(ctx)
						if err != nil {
							return err
						}
						if info.NumPending+uint64(info.NumAckPending) > 0 {
							return fmt.Errorf("partition %d busy", p)
						}
					}
					return nil
				})
				rate := float64(turns) / time.Since(start).Seconds()
				b.ReportMetric(rate, "turns/s")
				b.ReportMetric(raw, "raw_msgs/s")
				b.ReportMetric(rate/raw, "ratio")
			}
		})
	}
}

// rawRate publishes msgs (on raw.> subjects) into a scratch stream and consumes them with one
// durable pull consumer, and returns messages per second.
func rawRate(b *testing.B, env *brokertest.Env, js jetstream.JetStream, msgs []*nats.Msg) float64 {
	ctx := context.Background()
	raws := make([]*nats.Msg, len(msgs))
	for j, m := range msgs {
		c := nats.NewMsg("raw." + strings.TrimPrefix(m.Subject, "memory.turns."))
		c.Header, c.Data = m.Header, m.Data
		raws[j] = c
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "RAW", Subjects: []string{"raw.>"}, Storage: jetstream.FileStorage}); err != nil {
		b.Fatal(err)
	}
	if _, err := js.CreateOrUpdateConsumer(ctx, "RAW", jetstream.ConsumerConfig{Durable: "raw", AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 1024}); err != nil {
		b.Fatal(err)
	}
	rjs, _ := jetstream.New(env.Connect(b))
	rc, _ := rjs.Consumer(ctx, "RAW", "raw")
	done := make(chan struct{})
	n := 0
	start := time.Now()
	cc, err := rc.Consume(func(m jetstream.Msg) {
		_ = m.Ack()
		if n++; n == len(raws) {
			close(done)
		}
	}, jetstream.PullMaxMessages(500))
	if err != nil {
		b.Fatal(err)
	}
	publishAll(b, js, raws)
	<-done
	cc.Stop()
	return float64(len(raws)) / time.Since(start).Seconds()
}
