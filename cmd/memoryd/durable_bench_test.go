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
// rate of the same embedded server, in one run. Each iteration is a round of six phases, each
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

	raw, batch, cbatch := &phase{n: rawN}, &phase{n: batchN}, &phase{n: batchN}
	single, natsSingle, raw8 := &phase{n: singleN}, &phase{n: singleN}, &phase{n: raw8N}
	cl, err := client.New(nc, client.Options{Tenant: "load", Source: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	njs, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	payload := []byte(durableText(r, size))
	drained := func() { waitDrainedFor(b, nc, 10*time.Minute, 20*time.Millisecond) }
	for round := 0; b.Loop(); round++ {
		b.StopTimer()
		drained()
		raw.add(rawPublish(b, ctx, nc, cnc, fmt.Sprint(round), rawN, 0, payload))

		bodies := make([][]byte, batchN/batchSize)
		for k := range bodies {
			batch := make([]any, batchSize)
			for j := range batch {
				batch[j] = turn("b")
			}
			bodies[k], _ = json.Marshal(batch)
		}
		drained()
		batch.add(spread(len(bodies), func(k int) { post("application/cloudevents-batch+json", bodies[k]) }))

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
		drained()
		cbatch.add(spread(len(cbatches), func(k int) {
			if _, err := cl.PublishBatch(ctx, cbatches[k]); err != nil {
				b.Fatal(err)
			}
		}))

		singles := make([][]byte, singleN)
		for k := range singles {
			singles[k], _ = json.Marshal(turn("o"))
		}
		drained()
		single.add(spread(len(singles), func(k int) { post("application/cloudevents+json", singles[k]) }))

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
		drained()
		natsSingle.add(spread(len(nmsgs), func(k int) {
			if _, err := njs.PublishMsg(ctx, nmsgs[k]); err != nil {
				b.Fatal(err)
			}
		}))

		drained()
		raw8.add(rawPublish(b, ctx, nc, cnc, fmt.Sprintf("%d_8", round), raw8N, clients, payload))
		x := func(p *phase) float64 { return p.rates[round] / raw.rates[round] }
		b.Logf("round %d: raw %.0f msgs/s, batches %.0f turns/s (%.2fx), client batches %.0f turns/s (%.2fx), single %.0f turns/s (%.2fx), NATS single %.0f turns/s (%.2fx), raw one at a time %.0f msgs/s (%.2fx)", round,
			raw.rates[round], batch.rates[round], x(batch), cbatch.rates[round], x(cbatch), single.rates[round], x(single),
			natsSingle.rates[round], x(natsSingle), raw8.rates[round], x(raw8))
		b.StartTimer()
	}
	for _, p := range []struct {
		name, unit string
		p          *phase
	}{
		{"raw", "msgs", raw}, {"batch", "turns", batch}, {"client_batch", "turns", cbatch},
		{"single", "turns", single}, {"nats_single", "turns", natsSingle}, {"raw8", "msgs", raw8},
	} {
		b.ReportMetric(p.p.rate(), p.name+"_"+p.unit+"/s")
		if p.p != raw {
			b.ReportMetric(p.p.rate()/raw.rate(), strings.ReplaceAll(p.name, "_", "-")+"-x-raw")
		}
	}
	b.ReportMetric(0, "ns/op")
	m.stop(b)
}

// phase is one phase of BenchmarkDurableBlackBox: its messages per round, its time over the
// rounds and its rate in each.
type phase struct {
	n     int
	total time.Duration
	rates []float64
}

// add records one round's time.
func (p *phase) add(d time.Duration) {
	p.total += d
	p.rates = append(p.rates, float64(p.n)/d.Seconds())
}

// rate is the phase's rate over every round.
func (p *phase) rate() float64 { return float64(len(p.rates)*p.n) / p.total.Seconds() }

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
