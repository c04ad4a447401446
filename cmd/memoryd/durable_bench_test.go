package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

// BenchmarkDurableBlackBox measures what issue 37's goals name, the way a user sees it: the
// memoryd binary with its default flags (durability sync) and --http, against the raw durable
// rate of the same embedded server, in one run. Each iteration is a round of three phases, each
// started once every consumer has drained:
//
//   - raw: 10,000 messages of 512 bytes (a Nats-Msg-Id each) published to a stream of their own
//     (file storage, one replica: synced like the turns stream, since the server syncs every
//     write) through an async window of 1,000, while a durable pull consumer fetches and
//     acknowledges them on another connection, timed until every PubAck (memprobe load's raw
//     publish);
//   - batches: 10,000 turns of 512 bytes over 100 sessions as HTTP batches of 100 structured
//     CloudEvents, from 8 clients, timed until every 202;
//   - client batches: 10,000 turns as pkg/client PublishBatch calls of 100 from 8 goroutines
//     (one connection), the NATS way of sending a batch;
//   - single: 2,000 turns, one per HTTP request, from 8 clients;
//   - NATS single: 2,000 turns published to memory.turns.load.<session> (binary CloudEvents, a
//     Nats-Msg-Id each) by 8 plain JetStream publishers, each waiting for its PubAck: one turn per
//     request without HTTP;
//   - raw one at a time: 2,000 messages to a stream of their own from 8 plain JetStream
//     publishers, each waiting for its PubAck before the next (no HTTP, no pipeline): what any
//     path that has 8 clients each waiting for their acknowledgement can reach on this server.
//
// It reports each phase's rate over all rounds (raw_msgs/s, batch_turns/s, client_batch_turns/s,
// single_turns/s, nats_single_turns/s, raw8_msgs/s) and the ratios the issue states
// (batch-x-raw, single-x-raw), client-batch-x-raw, nats-single-x-raw and raw8-x-raw; the
// rounds alternate so that a disk whose speed drifts weighs on the phases alike (-benchtime 3x:
// three rounds).
// AGENTMEM_BENCH_ARGS adds flags to memoryd's.
func BenchmarkDurableBlackBox(b *testing.B) {
	const (
		rawN      = 10_000
		raw8N     = 2_000
		batchN    = 10_000
		singleN   = 2_000
		batchSize = 100
		clients   = 8
		sessions  = 100
		size      = 512
	)
	bin := buildMemoryd(b)
	dir := b.TempDir()
	httpAddr := freeAddr(b)
	args := append([]string{"--http", httpAddr}, strings.Fields(os.Getenv("AGENTMEM_BENCH_ARGS"))...)
	m := startMemorydProcess(b, bin, dir, args...)
	nc := connect(b, m.listen)
	cnc := connect(b, m.listen)
	url := "http://" + httpAddr + "/v1/tenants/load/events"
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}, Timeout: time.Minute}
	ctx := context.Background()

	r := rand.New(rand.NewPCG(37, 37))
	var next atomic.Int64
	turn := func(prefix string) map[string]any {
		i := next.Add(1)
		s := i % sessions
		return map[string]any{
			"specversion": "1.0", "id": fmt.Sprintf("%s-%d", prefix, i), "source": "bench", "type": events.TypeTurn,
			"subject": fmt.Sprintf("s%d", s), "time": time.Now().UTC().Format(time.RFC3339Nano),
			"datacontenttype": "application/json",
			"data":            map[string]any{"role": "user", "content": durableText(r, size), "user": fmt.Sprintf("u%d", s)},
		}
	}
	post := func(ct string, body []byte) {
		resp, err := hc.Post(url, ct, bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			b.Fatalf("POST %s: %d %.300s", ct, resp.StatusCode, out)
		}
	}
	// spread runs n jobs on clients goroutines and returns how long they took.
	spread := func(n int, job func(k int)) time.Duration {
		var k atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		for range clients {
			wg.Go(func() {
				for i := int(k.Add(1)) - 1; i < n; i = int(k.Add(1)) - 1 {
					job(i)
				}
			})
		}
		wg.Wait()
		return time.Since(start)
	}

	var rawT, batchT, cbatchT, singleT, natsT, raw8T time.Duration
	var rawRates, batchRates, cbatchRates, singleRates, natsRates, raw8Rates []float64
	cl, err := client.New(nc, client.Options{Tenant: "load", Source: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	payload := []byte(durableText(r, size))
	for round := 0; b.Loop(); round++ {
		b.StopTimer()
		waitDrainedQuick(b, nc)
		d := rawPublish(b, ctx, nc, cnc, fmt.Sprint(round), rawN, 0, payload)
		rawT += d
		rawRates = append(rawRates, rawN/d.Seconds())

		bodies := make([][]byte, batchN/batchSize)
		for k := range bodies {
			batch := make([]any, batchSize)
			for j := range batch {
				batch[j] = turn("b")
			}
			bodies[k], _ = json.Marshal(batch)
		}
		waitDrainedQuick(b, nc)
		d = spread(len(bodies), func(k int) { post("application/cloudevents-batch+json", bodies[k]) })
		batchT += d
		batchRates = append(batchRates, batchN/d.Seconds())

		cbatches := make([][]client.Turn, batchN/batchSize)
		for k := range cbatches {
			cbatches[k] = make([]client.Turn, batchSize)
			for j := range cbatches[k] {
				t := turn("c")
				d := t["data"].(map[string]any)
				cbatches[k][j] = client.Turn{ID: t["id"].(string), Session: t["subject"].(string), User: d["user"].(string),
					Role: "user", Content: d["content"].(string)}
			}
		}
		waitDrainedQuick(b, nc)
		d = spread(len(cbatches), func(k int) {
			if _, err := cl.PublishBatch(ctx, cbatches[k]); err != nil {
				b.Fatal(err)
			}
		})
		cbatchT += d
		cbatchRates = append(cbatchRates, batchN/d.Seconds())

		singles := make([][]byte, singleN)
		for k := range singles {
			singles[k], _ = json.Marshal(turn("o"))
		}
		waitDrainedQuick(b, nc)
		d = spread(len(singles), func(k int) { post("application/cloudevents+json", singles[k]) })
		singleT += d
		singleRates = append(singleRates, singleN/d.Seconds())

		nmsgs := make([]*nats.Msg, singleN)
		for k := range nmsgs {
			t := turn("n")
			ev, err := events.NewEvent(t["id"].(string), events.TypeTurn, "bench", time.Now(), t["data"])
			if err != nil {
				b.Fatal(err)
			}
			if nmsgs[k], err = events.BinaryMsg("memory.turns.load."+t["subject"].(string), ev); err != nil {
				b.Fatal(err)
			}
			nmsgs[k].Header.Set(events.HeaderMsgID, events.MsgID("load", t["subject"].(string), t["id"].(string)))
		}
		njs, _ := jetstream.New(nc)
		waitDrainedQuick(b, nc)
		d = spread(len(nmsgs), func(k int) {
			if _, err := njs.PublishMsg(ctx, nmsgs[k]); err != nil {
				b.Fatal(err)
			}
		})
		natsT += d
		natsRates = append(natsRates, singleN/d.Seconds())

		waitDrainedQuick(b, nc)
		d = rawPublish(b, ctx, nc, cnc, fmt.Sprintf("%d_8", round), raw8N, clients, payload)
		raw8T += d
		raw8Rates = append(raw8Rates, raw8N/d.Seconds())
		b.Logf("round %d: client batches %.0f turns/s (%.2fx)", round, cbatchRates[round], cbatchRates[round]/rawRates[round])
		b.Logf("round %d: raw %.0f msgs/s, batches %.0f turns/s (%.2fx), single %.0f turns/s (%.2fx), NATS single %.0f turns/s (%.2fx), raw one at a time %.0f msgs/s (%.2fx)", round,
			rawRates[round], batchRates[round], batchRates[round]/rawRates[round], singleRates[round], singleRates[round]/rawRates[round],
			natsRates[round], natsRates[round]/rawRates[round], raw8Rates[round], raw8Rates[round]/rawRates[round])
		b.StartTimer()
	}
	rounds := float64(len(rawRates))
	raw := rounds * rawN / rawT.Seconds()
	batch := rounds * batchN / batchT.Seconds()
	single := rounds * singleN / singleT.Seconds()
	b.ReportMetric(raw, "raw_msgs/s")
	b.ReportMetric(batch, "batch_turns/s")
	b.ReportMetric(single, "single_turns/s")
	b.ReportMetric(batch/raw, "batch-x-raw")
	b.ReportMetric(single/raw, "single-x-raw")
	cbatch := rounds * batchN / cbatchT.Seconds()
	b.ReportMetric(cbatch, "client_batch_turns/s")
	b.ReportMetric(cbatch/raw, "client-batch-x-raw")
	natsSingle := rounds * singleN / natsT.Seconds()
	b.ReportMetric(natsSingle, "nats_single_turns/s")
	b.ReportMetric(natsSingle/raw, "nats-single-x-raw")
	raw8 := rounds * raw8N / raw8T.Seconds()
	b.ReportMetric(raw8, "raw8_msgs/s")
	b.ReportMetric(raw8/raw, "raw8-x-raw")
	b.ReportMetric(0, "ns/op")
	m.stop(b)
}

// rawPublish is memprobe load's raw phase: n messages published to a stream of their own
// through an async window of 1,000 while a durable consumer on cnc fetches and acknowledges
// them; it returns the time until the last PubAck and deletes the stream. With publishers > 0,
// that many publishers each publish one message at a time instead, waiting for its PubAck.
func rawPublish(b *testing.B, ctx context.Context, nc, cnc *nats.Conn, round string, n, publishers int, payload []byte) time.Duration {
	b.Helper()
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(1000))
	if err != nil {
		b.Fatal(err)
	}
	name := "BENCH_RAW_" + round
	subj := "bench.raw." + round
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{subj + ".>"},
		Storage: jetstream.FileStorage, Duplicates: 2 * time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = js.DeleteStream(ctx, name) }()
	cjs, _ := jetstream.New(cnc)
	cs, err := cjs.Stream(ctx, name)
	if err != nil {
		b.Fatal(err)
	}
	c, err := cs.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "raw", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		b.Fatal(err)
	}
	cc, err := c.Consume(func(m jetstream.Msg) { _ = m.Ack() }, jetstream.PullMaxMessages(500))
	if err != nil {
		b.Fatal(err)
	}
	defer cc.Stop()
	msg := func(i int) *nats.Msg {
		m := nats.NewMsg(fmt.Sprintf("%s.s%d", subj, i%100))
		m.Data = payload
		m.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("%s-%d", round, i))
		return m
	}
	start := time.Now()
	if publishers > 0 {
		var wg sync.WaitGroup
		failed := make(chan error, publishers)
		for p := range publishers {
			wg.Go(func() {
				for i := p; i < n; i += publishers {
					if _, err := js.PublishMsg(ctx, msg(i)); err != nil {
						failed <- err
						return
					}
				}
			})
		}
		wg.Wait()
		select {
		case err := <-failed:
			b.Fatal(err)
		default:
		}
		return time.Since(start)
	}
	for i := range n {
		if _, err := js.PublishMsgAsync(msg(i), jetstream.WithStallWait(time.Minute)); err != nil {
			b.Fatal(err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(5 * time.Minute):
		b.Fatal("raw publishes not acknowledged in 5 minutes")
	}
	return time.Since(start)
}

// waitDrainedQuick waits until no consumer of memoryd has messages pending, polling every 20 ms.
func waitDrainedQuick(b *testing.B, nc *nats.Conn) {
	b.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Minute)
	for {
		busy := false
		for si := range js.ListStreams(ctx).Info() {
			st, err := js.Stream(ctx, si.Config.Name)
			if err != nil {
				continue
			}
			for ci := range st.ListConsumers(ctx).Info() {
				if ci.NumPending+uint64(ci.NumAckPending) > 0 {
					busy = true
				}
			}
		}
		if !busy {
			return
		}
		if time.Now().After(deadline) {
			b.Fatal("memoryd's consumers did not drain in 10 minutes")
		}
		<-time.After(20 * time.Millisecond)
	}
}

// durableText is n bytes of English-like words.
func durableText(r *rand.Rand, n int) string {
	words := []string{"the", "agent", "remembers", "a", "meeting", "on", "tuesday", "with", "alice", "about",
		"budget", "travel", "plans", "to", "lisbon", "and", "her", "favourite", "coffee", "shop", "near", "office"}
	var sb strings.Builder
	for sb.Len() < n {
		if sb.Len() > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(words[r.IntN(len(words))])
	}
	return sb.String()[:n]
}
