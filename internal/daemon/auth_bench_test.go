package daemon_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker"
	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/daemon"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

// BenchmarkAuthOverhead runs the same ingest and retrieve load against memoryd with NKey
// authentication and per-tenant permissions on and off, in the same run.
func BenchmarkAuthOverhead(b *testing.B) {
	const turns, queries = 5000, 300
	run := func(b *testing.B, url string, opts ...nats.Option) (float64, time.Duration) {
		nc, err := nats.Connect(url, opts...)
		if err != nil {
			b.Fatal(err)
		}
		defer nc.Close()
		js, _ := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(512))
		start := time.Now()
		for i := range turns {
			sess := fmt.Sprintf("s%d", i%10)
			ev, _ := events.NewEvent(fmt.Sprintf("%s-%d", sess, i), events.TypeTurn, "bench", time.Now(), events.Turn{Role: "user", Content: fmt.Sprintf("turn %d about deploys and budgets", i), User: "u"})
			m, _ := events.BinaryMsg("memory.turns.a."+sess, ev)
			m.Header.Set(events.HeaderMsgID, events.MsgID("a", sess, ev.ID()))
			if _, err := js.PublishMsgAsync(m, jetstream.WithStallWait(30*time.Second)); err != nil {
				b.Fatal(err)
			}
		}
		<-js.PublishAsyncComplete()
		cl, _ := client.New(nc, client.Options{Tenant: "a", Timeout: 30 * time.Second})
		if _, err := cl.Retrieve(context.Background(), events.RetrieveRequest{Query: "deploys", Session: "s9", After: fmt.Sprintf("s9-%d", turns-1), WaitMS: 60000}); err != nil {
			b.Fatal(err)
		}
		brokertest.CheckFor(b, 60*time.Second, 10*time.Millisecond, func() error {
			for s := range 10 {
				r, err := cl.Retrieve(context.Background(), events.RetrieveRequest{Query: "x", Session: fmt.Sprintf("s%d", s), After: fmt.Sprintf("s%d-%d", s, turns-10+s), WaitMS: 0})
				if err != nil {
					return err
				}
				_ = r
			}
			return nil
		})
		rate := float64(turns) / time.Since(start).Seconds()
		var lat []time.Duration
		for i := range queries {
			t0 := time.Now()
			if _, err := cl.Retrieve(context.Background(), events.RetrieveRequest{Query: "deploys and budgets", Session: fmt.Sprintf("s%d", i%10)}); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t0))
		}
		slices.Sort(lat)
		return rate, lat[len(lat)/2]
	}
	for i := 0; i < b.N; i++ {
		open, err := daemon.Start(context.Background(), daemon.Config{
			Broker: broker.Config{Listen: "127.0.0.1:-1", DataDir: b.TempDir()}, Ingest: ingest.Config{IdleTimeout: -1},
		}, zerolog.Nop())
		if err != nil {
			b.Fatal(err)
		}
		rateOff, p50Off := run(b, open.URL())
		_ = open.Stop()

		s := startSecuredB(b)
		key, _ := nats.NkeyOptionFromSeed(s.store.SeedFile("agent-a"))
		rateOn, p50On := run(b, s.url, key, nats.CustomInboxPrefix("_INBOX_a"))
		_ = s.d.Stop()
		b.ReportMetric(rateOff, "turns/s_noauth")
		b.ReportMetric(rateOn, "turns/s_auth")
		b.ReportMetric(float64(p50Off.Microseconds()), "retrieve_p50_us_noauth")
		b.ReportMetric(float64(p50On.Microseconds()), "retrieve_p50_us_auth")
	}
}
