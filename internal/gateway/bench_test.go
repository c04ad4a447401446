package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/internal/gateway"
	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

// benchClient is an HTTP client that keeps enough idle connections for parallel publishers.
func benchClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	return &http.Client{Transport: tr}
}

// post sends a request and fails unless it gets want.
func post(b *testing.B, c *http.Client, url string, header map[string]string, body string, want int) []byte {
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != want {
		b.Fatalf("status %d: %s", resp.StatusCode, data)
	}
	return data
}

// paired records the durations of the two ways of doing one thing, measured alternately in the
// same loop so that whatever else the machine does weighs on both alike.
type paired struct {
	mu         sync.Mutex
	http, nats []time.Duration
}

func (p *paired) add(h, n time.Duration) {
	p.mu.Lock()
	p.http, p.nats = append(p.http, h), append(p.nats, n)
	p.mu.Unlock()
}

// report adds per-way metrics: operations per second of wall time (each way had half of it, so
// it counts double), and p50/p99 latencies.
func (p *paired) report(b *testing.B, unit string) {
	for _, w := range []struct {
		name string
		lat  []time.Duration
	}{{"http", p.http}, {"nats", p.nats}} {
		if len(w.lat) == 0 {
			continue
		}
		var sum time.Duration
		for _, d := range w.lat {
			sum += d
		}
		slices.Sort(w.lat)
		b.ReportMetric(float64(len(w.lat))/sum.Seconds(), w.name+"-"+unit+"/s")
		b.ReportMetric(float64(w.lat[len(w.lat)/2].Microseconds()), w.name+"-p50-µs")
		b.ReportMetric(float64(w.lat[len(w.lat)*99/100].Microseconds()), w.name+"-p99-µs")
	}
}

// timed returns how long fn took.
func timed(fn func()) time.Duration {
	t0 := time.Now()
	fn()
	return time.Since(t0)
}

// postAccepted posts body from a client goroutine and reports anything but a 202 with Error (only
// the benchmark's own goroutine may stop it).
func postAccepted(b *testing.B, c *http.Client, url, ctype, body string) {
	resp, err := c.Post(url, ctype, strings.NewReader(body))
	if err != nil {
		b.Error(err)
		return
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		b.Errorf("status %d: %s", resp.StatusCode, data)
	}
}

// spread runs do(0) … do(jobs-1) on clients goroutines, each taking the next job when done with
// one, and returns how long they took.
func spread(clients, jobs int, do func(k int)) time.Duration {
	var next atomic.Int64
	var wg sync.WaitGroup
	return timed(func() {
		for range clients {
			wg.Go(func() {
				for k := int(next.Add(1)) - 1; k < jobs; k = int(next.Add(1)) - 1 {
					do(k)
				}
			})
		}
		wg.Wait()
	})
}

// BenchmarkPublish measures publishing turns (until JetStream acknowledged them) through the
// HTTP gateway next to the same through NATS with pkg/client, alternately in one loop, against
// one in-process agentmem whose workers apply the turns meanwhile. turns/s is per way: the
// number of its turns over the time spent in its calls (per publisher, for parallel).
func BenchmarkPublish(b *testing.B) {
	e := start(b, gateway.Config{})
	cl, err := client.New(e.nc, client.Options{Tenant: "acme"})
	if err != nil {
		b.Fatal(err)
	}
	hc := benchClient()
	url := e.srv.URL + "/v1/tenants/acme/events"
	content := "I moved the deploy job to the new cluster and the build takes four minutes now"
	var n atomic.Int64
	httpTurn := func() {
		i := n.Add(1)
		r := binaryTurn(fmt.Sprintf("h%d", i), fmt.Sprintf("hs%d", i%32), fmt.Sprintf("u%d", i%32), "user", content)
		post(b, hc, url, r.header, r.body, http.StatusAccepted)
	}
	natsTurn := func() {
		i := n.Add(1)
		if _, err := cl.Publish(context.Background(), client.Turn{ID: fmt.Sprintf("n%d", i), Session: fmt.Sprintf("ns%d", i%32),
			User: fmt.Sprintf("u%d", i%32), Role: "user", Content: content}); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("sequential", func(b *testing.B) {
		var p paired
		for b.Loop() {
			p.add(timed(httpTurn), timed(natsTurn))
		}
		p.report(b, "turns")
	})
	b.Run("parallel", func(b *testing.B) {
		var p paired
		b.SetParallelism(4)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				p.add(timed(httpTurn), timed(natsTurn))
			}
		})
		p.report(b, "turns")
		b.ReportMetric(float64(2*b.N)/b.Elapsed().Seconds(), "both-turns/s")
	})
	b.Run("batch100", func(b *testing.B) {
		// One op is a turn: 100 through the gateway in one batch, then the same 100 through
		// NATS with pkg/client, one after the other.
		// Then the same number of turns published straight to JetStream, asynchronously, waiting
		// for every ack: the speed of JetStream the batch endpoint is measured against.
		hdr := map[string]string{"content-type": gateway.ContentTypeBatch}
		var httpTime, natsTime, rawTime time.Duration
		for done := 0; done < b.N; {
			size := min(100, b.N-done)
			batch := make([]any, size)
			raw := make([]*nats.Msg, size)
			for j := range batch {
				i := n.Add(1)
				turn := events.Turn{Role: "user", Content: content, User: fmt.Sprintf("u%d", i%32)}
				batch[j] = structured(fmt.Sprintf("b%d", i), fmt.Sprintf("bs%d", i%32), events.TypeTurn, turn)
				ev, _ := events.NewEvent(fmt.Sprintf("r%d", i), events.TypeTurn, "bench", time.Now(), turn)
				raw[j], _ = events.EventMsg("acme", fmt.Sprintf("rs%d", i%32), ev)
			}
			body, _ := json.Marshal(batch)
			httpTime += timed(func() { post(b, hc, url, hdr, string(body), http.StatusAccepted) })
			rawTime += timed(func() {
				for _, res := range client.PublishAll(context.Background(), e.js, raw, 10*time.Second) {
					if res.Err != nil {
						b.Fatal(res.Err)
					}
				}
			})
			natsTime += timed(func() {
				for range size {
					natsTurn()
				}
			})
			done += size
		}
		b.ReportMetric(float64(b.N)/httpTime.Seconds(), "http-batch-turns/s")
		b.ReportMetric(float64(b.N)/natsTime.Seconds(), "nats-turns/s")
		b.ReportMetric(float64(b.N)/rawTime.Seconds(), "jetstream-batch-msgs/s")
	})
	b.Run("batch100-8clients", func(b *testing.B) {
		// One op is a turn: eight clients each post batches of 100 at once, as a bulk import
		// over HTTP does, then the same turns go straight to JetStream in batches of 100 from
		// eight goroutines.
		hdr := map[string]string{"content-type": gateway.ContentTypeBatch}
		const clients = 8
		batches := (b.N + 99) / 100
		bodies := make([]string, batches)
		raws := make([][]*nats.Msg, batches)
		for k := range bodies {
			size := min(100, b.N-k*100)
			batch := make([]any, size)
			raws[k] = make([]*nats.Msg, size)
			for j := range batch {
				i := n.Add(1)
				turn := events.Turn{Role: "user", Content: content, User: fmt.Sprintf("u%d", i%100)}
				batch[j] = structured(fmt.Sprintf("p%d", i), fmt.Sprintf("ps%d", i%100), events.TypeTurn, turn)
				ev, _ := events.NewEvent(fmt.Sprintf("q%d", i), events.TypeTurn, "bench", time.Now(), turn)
				raws[k][j], _ = events.EventMsg("acme", fmt.Sprintf("qs%d", i%100), ev)
			}
			body, _ := json.Marshal(batch)
			bodies[k] = string(body)
		}
		// The clients' goroutines report failures with Error: only the benchmark's own goroutine
		// may stop it.
		httpTime := spread(clients, batches, func(k int) { postAccepted(b, hc, url, hdr["content-type"], bodies[k]) })
		rawTime := spread(clients, batches, func(k int) {
			for _, res := range client.PublishAll(context.Background(), e.js, raws[k], 10*time.Second) {
				if res.Err != nil {
					b.Error(res.Err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/httpTime.Seconds(), "http-batch-turns/s")
		b.ReportMetric(float64(b.N)/rawTime.Seconds(), "jetstream-batch-msgs/s")
	})
}

// BenchmarkRetrieve measures a retrieve over a session of 200 turns through the HTTP gateway next
// to the same request through NATS with pkg/client, alternately in one loop.
func BenchmarkRetrieve(b *testing.B) {
	e := start(b, gateway.Config{})
	cl, err := client.New(e.nc, client.Options{Tenant: "acme"})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	topics := []string{"the deploy pipeline", "my favourite editor", "the database migration", "lunch plans", "the quarterly report"}
	var last string
	for i := range 200 {
		ack, err := cl.Publish(ctx, client.Turn{Session: "s1", User: "alice", Role: "user",
			Content: fmt.Sprintf("note %d about %s and some more words to make it a realistic turn", i, topics[i%len(topics)])})
		if err != nil {
			b.Fatal(err)
		}
		last = ack.ID
	}
	if _, err := cl.Retrieve(ctx, events.RetrieveRequest{Query: "deploy", Session: "s1", After: last, WaitMS: 30000}); err != nil {
		b.Fatal(err)
	}
	req := events.RetrieveRequest{Query: "what did I say about the database migration?", Session: "s1", User: "alice"}
	body, _ := json.Marshal(req)
	hc := benchClient()
	url := e.srv.URL + "/v1/tenants/acme/retrieve"
	hdr := map[string]string{"content-type": "application/json"}
	var p paired
	for b.Loop() {
		h := timed(func() {
			if out := post(b, hc, url, hdr, string(body), http.StatusOK); len(out) < 100 {
				b.Fatalf("reply %s", out)
			}
		})
		n := timed(func() {
			if r, err := cl.Retrieve(ctx, req); err != nil || len(r.Entries) == 0 {
				b.Fatalf("retrieve: %d entries, %v", len(r.Entries), err)
			}
		})
		p.add(h, n)
	}
	p.report(b, "retrieves")
}

// BenchmarkDurable measures the goals of durable ingestion side by side in one run, against one
// in-process agentmem with the default durability (every write synced before it is
// acknowledged) whose workers apply the turns meanwhile: one op is a turn.
//
//   - raw-durable-msgs/s: 512-byte messages published straight to a plain stream of the same
//     server, asynchronously with up to 1000 unacknowledged (as memprobe load -skip-service
//     does): one disk sync per message, the baseline of the ratios;
//   - http-batch-turns/s: batches of 100 turns posted by 8 clients at once (atomic batches, one
//     sync per batch), and batch-x-raw, its ratio to the baseline (goal: 3);
//   - http-single-turns/s: one turn per request from 8 clients at once (at most 2000 turns), and
//     single-x-raw (goal: 0.9).
//
// The three alternate, a tenth of each at a time, the baseline once the workers are idle.
func BenchmarkDurable(b *testing.B) {
	e := start(b, gateway.Config{})
	ctx := context.Background()
	if _, err := e.js.CreateStream(ctx, jetstream.StreamConfig{Name: "RAW_DURABLE", Subjects: []string{"raw.>"},
		Storage: jetstream.FileStorage, Duplicates: 2 * time.Minute}); err != nil {
		b.Fatal(err)
	}
	hc := benchClient()
	url := e.srv.URL + "/v1/tenants/acme/events"
	content := strings.Repeat("durable ", 64)
	var n atomic.Int64
	event := func(prefix string) any {
		i := n.Add(1)
		turn := events.Turn{Role: "user", Content: content, User: fmt.Sprintf("u%d", i%100)}
		return structured(fmt.Sprintf("%s%d", prefix, i), fmt.Sprintf("%ss%d", prefix, i%100), events.TypeTurn, turn)
	}
	const clients = 8

	rjs, err := jetstream.New(e.nc, jetstream.WithPublishAsyncMaxPending(1000))
	if err != nil {
		b.Fatal(err)
	}
	payload := []byte(strings.Repeat("x", 512))
	// The three go in turns, a tenth of each at a time, so that a disk whose speed drifts during
	// the run (a shared virtual disk does) weighs on each alike; the baseline is measured once
	// the workers are idle.
	const rounds = 10
	var rawTime, batchTime, singleTime time.Duration
	singleTurns := 0
	turns, err := e.js.Stream(ctx, e.topo.TurnsStream())
	if err != nil {
		b.Fatal(err)
	}
	// drained waits until the workers applied every turn, so that the baseline is measured on an
	// idle server, as memprobe load -skip-service measures it.
	drained := func() {
		for deadline := time.Now().Add(5 * time.Minute); ; {
			busy := false
			for ci := range turns.ListConsumers(ctx).Info() {
				if ci.NumPending > 0 || ci.NumAckPending > 0 {
					busy = true
				}
			}
			if !busy {
				return
			}
			if time.Now().After(deadline) {
				b.Fatal("the workers did not drain in 5 minutes")
			}
			<-time.After(20 * time.Millisecond)
		}
	}
	for r := range rounds {
		from, to := b.N*r/rounds, b.N*(r+1)/rounds
		drained()
		rawTime += timed(func() {
			for i := from; i < to; i++ {
				m := nats.NewMsg(fmt.Sprintf("raw.s%d", i%100))
				m.Data = payload
				m.Header.Set(jetstream.MsgIDHeader, fmt.Sprint(i))
				if _, err := rjs.PublishMsgAsync(m, jetstream.WithStallWait(time.Minute)); err != nil {
					b.Fatal(err)
				}
			}
			select {
			case <-rjs.PublishAsyncComplete():
			case <-time.After(5 * time.Minute):
				b.Fatal("raw publishes not acknowledged in 5 minutes")
			}
		})

		var bodies []string
		for k := from; k < to; k += 100 {
			batch := make([]any, min(100, to-k))
			for j := range batch {
				batch[j] = event("b")
			}
			body, _ := json.Marshal(batch)
			bodies = append(bodies, string(body))
		}
		batchTime += spread(clients, len(bodies), func(k int) { postAccepted(b, hc, url, gateway.ContentTypeBatch, bodies[k]) })

		singles := make([]string, min(to-from, 200))
		for k := range singles {
			body, _ := json.Marshal(event("o"))
			singles[k] = string(body)
		}
		singleTime += spread(clients, len(singles), func(k int) { postAccepted(b, hc, url, events.ContentTypeStructured, singles[k]) })
		singleTurns += len(singles)
	}

	raw := float64(b.N) / rawTime.Seconds()
	batch := float64(b.N) / batchTime.Seconds()
	single := float64(singleTurns) / singleTime.Seconds()
	b.ReportMetric(raw, "raw-durable-msgs/s")
	b.ReportMetric(batch, "http-batch-turns/s")
	b.ReportMetric(single, "http-single-turns/s")
	b.ReportMetric(batch/raw, "batch-x-raw")
	b.ReportMetric(single/raw, "single-x-raw")
}
