package broker_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
)

// BenchmarkSyncedPublish measures what bounds durable one-turn-per-request ingestion on the
// embedded server with the default durability (every write of the stream synced before its
// acknowledgement), which issue 37's single-turn goal (0.9x the raw durable rate) runs into:
//
//   - readers=N: 8 publishers, each publishing 512-byte messages one at a time and waiting for
//     the acknowledgement, to a stream that N consumers read meanwhile (each a filtered part of
//     the subjects, acknowledging every message, as ingest's partition consumers do: memoryd
//     has 16 and two more on the turns stream). readers=0 is the raw baseline; a reader costs
//     the publishers because it loads what was just written while the writer syncs.
//     readers=16-memory keeps the 16 consumers' state in memory (as memoryd's consumers of the
//     turns stream do with lazy persistence); readers=16-on-mirror has them read an
//     asynchronously persisted mirror of the stream instead (one internal reader of the synced
//     stream); readers=mirror-only is the mirror with no consumer.
//   - atomic=N: one publisher sending atomic batches of N messages one after another: what
//     coalescing concurrent requests into one batch (group commit) costs per message; the
//     fixed cost of a batch (about 5 ms: the server stages it in a store of its own) is what
//     the HTTP gateway's group commit shares between requests.
//
// One op is a message; msgs/s is the figure to compare, within one run (a shared virtual disk's
// sync time drifts between runs).
func BenchmarkSyncedPublish(b *testing.B) {
	payload := []byte(strings.Repeat("x", 512))
	for _, variant := range []string{"0", "1", "4", "16", "16-memory", "16-on-mirror", "mirror-only"} {
		readers, _ := strconv.Atoi(strings.Split(variant, "-")[0]) // 0 for mirror-only
		b.Run("readers="+variant, func(b *testing.B) {
			env := brokertest.Start(b)
			ctx := context.Background()
			s, err := env.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "SYNCED", Subjects: []string{"synced.>"},
				Storage: jetstream.FileStorage, Duplicates: 2 * time.Minute})
			if err != nil {
				b.Fatal(err)
			}
			if strings.Contains(variant, "mirror") {
				if s, err = env.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "MIRROR", Mirror: &jetstream.StreamSource{Name: "SYNCED"},
					Storage: jetstream.FileStorage, PersistMode: jetstream.AsyncPersistMode}); err != nil {
					b.Fatal(err)
				}
			}
			const parts = 16
			for r := range readers {
				var filters []string
				for p := r; p < parts; p += readers {
					filters = append(filters, fmt.Sprintf("synced.%d", p))
				}
				c, err := s.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: fmt.Sprintf("r%d", r),
					FilterSubjects: filters, AckPolicy: jetstream.AckExplicitPolicy, MemoryStorage: strings.Contains(variant, "-")})
				if err != nil {
					b.Fatal(err)
				}
				cc, err := c.Consume(func(m jetstream.Msg) { _ = m.Ack() })
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(cc.Stop)
			}
			const publishers = 8
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for p := range publishers {
				wg.Go(func() {
					for i := p; i < b.N; i += publishers {
						m := nats.NewMsg(fmt.Sprintf("synced.%d", i%parts))
						m.Data = payload
						m.Header.Set(jetstream.MsgIDHeader, fmt.Sprint(i))
						if _, err := env.JS.PublishMsg(ctx, m); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
		})
	}
	for _, size := range []int{1, 2, 8, 32, 100, 400, 800} {
		b.Run(fmt.Sprintf("atomic=%d", size), func(b *testing.B) {
			env := brokertest.Start(b)
			ctx := context.Background()
			if _, err := env.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "SYNCED", Subjects: []string{"synced.>"},
				Storage: jetstream.FileStorage, AllowAtomicPublish: true}); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i += size {
				msgs := make([]*nats.Msg, size)
				for k := range msgs {
					msgs[k] = nats.NewMsg(fmt.Sprintf("synced.%d", k))
					msgs[k].Data = payload
				}
				var err error
				if size == 1 {
					_, err = env.JS.PublishMsg(ctx, msgs[0])
				} else {
					_, err = jetstreamext.PublishMsgBatch(ctx, env.JS, msgs)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
		})
	}
}
