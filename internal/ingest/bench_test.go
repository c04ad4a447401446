package ingest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/pkg/events"
)

// benchTurns is how many turns each run of BenchmarkIngestVsRawJetStream moves.
const benchTurns = 10000

// buildTurns makes n binary-mode turn messages over sessions sessions of ~512 bytes of English
// and Chinese text each.
func buildTurns(tb testing.TB, tenant string, n, sessions int) []*nats.Msg {
	tb.Helper()
	text := strings.Repeat("The deploy failed twice; 部署失败了两次，我们回滚了。", 8)[:480]
	msgs := make([]*nats.Msg, n)
	at := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	for i := range n {
		sess := fmt.Sprintf("b%03d", i%sessions)
		id := fmt.Sprintf("%s-%06d", sess, i)
		role := []string{"user", "assistant"}[(i/sessions)%2]
		ev, err := events.NewEvent(id, events.TypeTurn, "bench", at.Add(time.Duration(i)*time.Millisecond), events.Turn{Role: role, Content: text, User: "u" + sess})
		if err != nil {
			tb.Fatal(err)
		}
		m, err := events.BinaryMsg("memory.turns."+tenant+"."+sess, ev)
		if err != nil {
			tb.Fatal(err)
		}
		m.Header.Set(events.HeaderMsgID, events.MsgID(tenant, sess, id))
		msgs[i] = m
	}
	return msgs
}

// publishAll publishes asynchronously through a bounded window and waits for every PubAck.
func publishAll(tb testing.TB, js jetstream.JetStream, msgs []*nats.Msg) {
	tb.Helper()
	for _, m := range msgs {
		if _, err := js.PublishMsgAsync(m, jetstream.WithStallWait(30*time.Second)); err != nil {
			tb.Fatal(err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(60 * time.Second):
		tb.Fatal("publish acks did not arrive")
	}
}

// BenchmarkIngestVsRawJetStream measures ingest end to end (publish -> every turn applied and
// acknowledged) next to raw JetStream publish + consume + ack of the same messages on the same
// server, and reports the ratio and the KV writes per turn, for 20, 100 and 1,000 sessions.
func BenchmarkIngestVsRawJetStream(b *testing.B) {
	for _, sessions := range []int{20, 100, 1000} {
		b.Run(fmt.Sprintf("sessions=%d", sessions), func(b *testing.B) { benchIngestVsRaw(b, sessions) })
	}
}

func benchIngestVsRaw(b *testing.B, sessions int) {
	for i := 0; i < b.N; i++ {
		env := brokertest.Start(b)
		js, err := jetstream.New(env.NC, jetstream.WithPublishAsyncMaxPending(1000))
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		msgs := buildTurns(b, fmt.Sprintf("bench%d", i), benchTurns, sessions)

		// Raw JetStream: a file stream and one durable pull consumer acking each message.
		rawMsgs := make([]*nats.Msg, len(msgs))
		for j, m := range msgs {
			c := nats.NewMsg("raw." + strings.TrimPrefix(m.Subject, "memory.turns."))
			c.Header, c.Data = m.Header, m.Data
			rawMsgs[j] = c
		}
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "RAW", Subjects: []string{"raw.>"}, Storage: jetstream.FileStorage}); err != nil {
			b.Fatal(err)
		}
		if _, err := js.CreateOrUpdateConsumer(ctx, "RAW", jetstream.ConsumerConfig{Durable: "raw", AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 1024}); err != nil {
			b.Fatal(err)
		}
		done := make(chan struct{})
		count := 0
		rawJS, err := jetstream.New(env.Connect(b))
		if err != nil {
			b.Fatal(err)
		}
		rc, err := rawJS.Consumer(ctx, "RAW", "raw")
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		cc, err := rc.Consume(func(m jetstream.Msg) {
			_ = m.Ack()
			count++
			if count == len(rawMsgs) {
				close(done)
			}
		}, jetstream.PullMaxMessages(500))
		if err != nil {
			b.Fatal(err)
		}
		publishAll(b, js, rawMsgs)
		<-done
		rawElapsed := time.Since(start)
		cc.Stop()

		// Ingest: the real topology and worker.
		topo := events.DefaultTopology()
		if err := topo.Ensure(ctx, js); err != nil {
			b.Fatal(err)
		}
		wnc := env.Connect(b)
		wjs, _ := jetstream.New(wnc)
		w, err := ingest.New(ctx, ingest.Config{Topology: topo, IdleTimeout: -1}, wjs, zerolog.Nop())
		if err != nil {
			b.Fatal(err)
		}
		runCtx, stop := context.WithCancel(ctx)
		stopped := make(chan error, 1)
		go func() { stopped <- w.Run(runCtx) }()
		start = time.Now()
		publishAll(b, js, msgs)
		for w.Stats().Applied < uint64(len(msgs)) {
			wait := time.NewTimer(2 * time.Millisecond)
			<-wait.C
		}
		ingestElapsed := time.Since(start)
		st := w.Stats()
		stop()
		<-stopped

		rawRate := float64(len(msgs)) / rawElapsed.Seconds()
		ingestRate := float64(len(msgs)) / ingestElapsed.Seconds()
		b.ReportMetric(rawRate, "raw_msgs/s")
		b.ReportMetric(ingestRate, "ingest_turns/s")
		b.ReportMetric(ingestRate/rawRate, "ratio")
		b.ReportMetric(float64(st.Writes)/float64(st.Applied), "kv_writes/turn")
		b.ReportMetric(float64(st.Applied)/float64(st.Commits), "turns/commit")
		env.Stop()
	}
}

// BenchmarkIngestInteractive publishes one turn at a time and waits until it is applied, as a
// single agent does: the latency from publish to applied, and the KV writes per turn when every
// batch holds one turn.
func BenchmarkIngestInteractive(b *testing.B) {
	env := brokertest.Start(b)
	ctx := context.Background()
	topo := events.DefaultTopology()
	if err := topo.Ensure(ctx, env.JS); err != nil {
		b.Fatal(err)
	}
	wjs, _ := jetstream.New(env.Connect(b))
	w, err := ingest.New(ctx, ingest.Config{Topology: topo, IdleTimeout: -1}, wjs, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- w.Run(runCtx) }()
	msgs := buildTurns(b, "interactive", b.N, 4)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := env.JS.PublishMsg(ctx, msgs[i]); err != nil {
			b.Fatal(err)
		}
		for w.Stats().Applied < uint64(i+1) {
			wait := time.NewTimer(50 * time.Microsecond)
			<-wait.C
		}
	}
	b.StopTimer()
	st := w.Stats()
	b.ReportMetric(float64(st.Writes)/float64(st.Applied), "kv_writes/turn")
	stop()
	<-stopped
}
