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

// tenancyCost is what one way of reaching the turns stream costs.
type tenancyCost struct {
	rate                 float64       // turns/s, async publish until every turn is applied
	pubP50, pubP99       time.Duration // one publish at a time, until its acknowledgement
	retrieveP50          time.Duration
	retrieveP99          time.Duration
	turns, pubs, queries int
}

// measureTenancy publishes turns of tenant a to root.<session> (memory.turns or, for admission
// reached from inside the service account, memory.intake) and measures throughput to applied,
// publish latency and retrieve latency.
func measureTenancy(b *testing.B, url, root string, opts ...nats.Option) tenancyCost {
	const turns, pubs, queries = 20000, 1000, 500
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(512))
	msg := func(sess string, i int) *nats.Msg {
		ev, _ := events.NewEvent(fmt.Sprintf("%s-%d", sess, i), events.TypeTurn, "bench", time.Now(), events.Turn{Role: "user", Content: fmt.Sprintf("turn %d about deploys and budgets", i), User: "u"})
		m, _ := events.BinaryMsg(root+"."+sess, ev)
		m.Header.Set(events.HeaderMsgID, events.MsgID("a", sess, ev.ID()))
		return m
	}
	cl, _ := client.New(nc, client.Options{Tenant: "a", Timeout: 30 * time.Second})
	ctx := context.Background()
	start := time.Now()
	for i := range turns {
		if _, err := js.PublishMsgAsync(msg(fmt.Sprintf("s%d", i%10), i), jetstream.WithStallWait(30*time.Second)); err != nil {
			b.Fatal(err)
		}
	}
	<-js.PublishAsyncComplete()
	brokertest.CheckFor(b, 60*time.Second, 10*time.Millisecond, func() error {
		for s := range 10 {
			if _, err := cl.Retrieve(ctx, events.RetrieveRequest{Query: "x", Session: fmt.Sprintf("s%d", s), After: fmt.Sprintf("s%d-%d", s, turns-10+s), WaitMS: 0}); err != nil {
				return err
			}
		}
		return nil
	})
	c := tenancyCost{rate: float64(turns) / time.Since(start).Seconds(), turns: turns, pubs: pubs, queries: queries}
	var lat []time.Duration
	for i := range pubs {
		m := msg("lat", i)
		t0 := time.Now()
		if _, err := js.PublishMsg(ctx, m); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	c.pubP50, c.pubP99 = lat[len(lat)/2], lat[len(lat)*99/100]
	lat = lat[:0]
	for i := range queries {
		t0 := time.Now()
		if _, err := cl.Retrieve(ctx, events.RetrieveRequest{Query: "deploys and budgets", Session: fmt.Sprintf("s%d", i%10)}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	c.retrieveP50, c.retrieveP99 = lat[len(lat)/2], lat[len(lat)*99/100]
	return c
}

// BenchmarkTenancyCost runs the same load through the three ways a turn can reach the turns
// stream, in the same run: straight into JetStream (authentication off: no tenancy), through
// admission from inside the service account (the "one account + trusted admission" candidate),
// and through admission from a tenant's own account (the model in use: accounts + admission).
func BenchmarkTenancyCost(b *testing.B) {
	report := func(name string, c tenancyCost) {
		b.ReportMetric(c.rate, "turns/s_"+name)
		b.ReportMetric(float64(c.pubP50.Microseconds()), "pub_p50_us_"+name)
		b.ReportMetric(float64(c.pubP99.Microseconds()), "pub_p99_us_"+name)
		b.ReportMetric(float64(c.retrieveP50.Microseconds()), "retrieve_p50_us_"+name)
	}
	for i := 0; i < b.N; i++ {
		open, err := daemon.Start(context.Background(), daemon.Config{
			Broker: broker.Config{Listen: "127.0.0.1:-1", DataDir: b.TempDir()}, Ingest: ingest.Config{IdleTimeout: -1},
		}, zerolog.Nop())
		if err != nil {
			b.Fatal(err)
		}
		direct := measureTenancy(b, open.URL(), "memory.turns.a")
		_ = open.Stop()

		s := startSecuredB(b)
		admin := nats.UserCredentials(s.store.CredsFile("admin"))
		oneAccount := measureTenancy(b, s.url, "memory.intake.a", admin)
		_ = s.d.Stop()

		s = startSecuredB(b)
		key := nats.UserCredentials(s.store.CredsFile("agent-a"))
		accounts := measureTenancy(b, s.url, "memory.turns.a", key)
		_ = s.d.Stop()

		report("direct", direct)
		report("admission_one_account", oneAccount)
		report("admission_accounts", accounts)
	}
}
