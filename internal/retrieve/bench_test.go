package retrieve_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/daemon"
	"github.com/agentmem/agentmem/internal/daemon/daemontest"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/internal/retrieve"
	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

// startAgentmem starts an in-process agentmem (every worker, its retriever configured by rcfg)
// for a benchmark and connects to it.
func startAgentmem(b *testing.B, rcfg retrieve.Config) (*nats.Conn, jetstream.JetStream) {
	_, nc, _ := daemontest.Start(b, daemon.Config{Ingest: ingest.Config{IdleTimeout: -1}, Retrieve: rcfg})
	js, _ := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(512))
	return nc, js
}

// BenchmarkColdLoad10k measures the first request for a user with 10,000 archived turns in 20
// sessions, as a retriever that just started (or evicted the user) answers it: the user's
// sessions, chunks and turns read from JetStream and indexed. Each iteration uses a new
// retriever; b.N is the number of cold loads.
func BenchmarkColdLoad10k(b *testing.B) {
	ctx := context.Background()
	nc, js := startAgentmem(b, retrieve.Config{})
	const turns, sessions = 10000, 20
	words := []string{"deploy", "rollback", "kafka", "nats", "postgres", "budget", "travel", "paris", "berlin", "piano", "部署", "回滚", "预算", "旅行", "钢琴"}
	publishBenchTurns(b, js, "cold", "turn %d about %s and %s with %s", words, turns, sessions)
	topo := events.DefaultTopology()
	brokertest.CheckFor(b, 120*time.Second, 100*time.Millisecond, func() error {
		for p := range topo.Partitions {
			c, err := js.Consumer(ctx, topo.TurnsStream(), ingest.TurnsConsumerName(topo, p))
			if err != nil {
				return err
			}
			if info, err := c.Info(ctx); err != nil || info.NumPending+uint64(info.NumAckPending) > 0 {
				return fmt.Errorf("ingest busy")
			}
		}
		return nil
	})
	req := events.RetrieveRequest{Query: "rollback of the postgres deploy", User: "cold", Sources: []string{"archive"}}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		svc, err := retrieve.New(ctx, retrieve.Config{}, nc, js, zerolog.Nop())
		if err != nil {
			b.Fatal(err)
		}
		reply, rerr := svc.Retrieve(ctx, "acme", req)
		if rerr != nil {
			b.Fatal(rerr)
		}
		if len(reply.Entries) == 0 {
			b.Fatal("no entries")
		}
	}
}

// coldUsers starts agentmem and stores users × turns turns of 50 sessions each, applied by
// ingest; it returns the connection. A turn's text is about 90 bytes, padded to at least size
// bytes with words drawn as in natural language (Zipf's law over a vocabulary of 20,000 words).
func coldUsers(b *testing.B, users, turns, size int) (*nats.Conn, jetstream.JetStream) {
	ctx := context.Background()
	zipf := rand.NewZipf(rand.New(rand.NewPCG(1, 2)), 1.07, 2, 19999)
	filler := make([]string, 20000)
	for i := range filler {
		filler[i] = fmt.Sprintf("w%x", i*2654435761%1000003)
	}
	nc, js := startAgentmem(b, retrieve.Config{})
	const sessions = 50
	words := []string{"deploy", "rollback", "kafka", "nats", "postgres", "budget", "travel", "paris", "berlin", "piano", "部署", "回滚", "预算", "旅行", "钢琴"}
	for u := range users {
		for i := range turns {
			sess := fmt.Sprintf("u%02d-s%02d", u, i%sessions)
			id := fmt.Sprintf("%s-%05d", sess, i)
			text := fmt.Sprintf("turn %d about %s and %s with %s, and then some more words about the %s of the %s", i,
				words[i%len(words)], words[(i/3)%len(words)], words[(i/7)%len(words)], words[(i/11)%len(words)], words[(i/13)%len(words)])
			for len(text) < size {
				text += " " + filler[zipf.Uint64()]
			}
			ev, _ := events.NewEvent(id, events.TypeTurn, "bench", time.Date(2026, 10, 1, 0, 0, i, 0, time.UTC),
				events.Turn{Role: []string{"user", "assistant"}[i%2], Content: text, User: fmt.Sprintf("user%02d", u)})
			m, _ := events.BinaryMsg("memory.turns.acme."+sess, ev)
			m.Header.Set(events.HeaderMsgID, events.MsgID("acme", sess, id))
			if _, err := js.PublishMsgAsync(m, jetstream.WithStallWait(30*time.Second)); err != nil {
				b.Fatal(err)
			}
		}
	}
	<-js.PublishAsyncComplete()
	// Every worker is done with them (ingest, the extractor, the embedder), so that what is
	// measured next is the retriever alone.
	topo := events.DefaultTopology()
	brokertest.CheckFor(b, 300*time.Second, 100*time.Millisecond, func() error {
		s, err := js.Stream(ctx, topo.TurnsStream())
		if err != nil {
			return err
		}
		for info := range s.ListConsumers(ctx).Info() {
			if info.NumPending+uint64(info.NumAckPending) > 0 {
				return fmt.Errorf("%s busy", info.Name)
			}
		}
		return nil
	})
	return nc, js
}

// BenchmarkColdUser measures the first request for each of 20 users with 500 archived turns in
// 50 sessions each (a typical returning user), answered by a retriever that just started: the
// figures are p50 and p99 over the users, one at a time.
func BenchmarkColdUser(b *testing.B) {
	const users = 20
	nc, js := coldUsers(b, users, 500, 0)
	ctx := context.Background()
	b.ResetTimer()
	var took []time.Duration
	for i := 0; i < b.N; i++ {
		for u := range users {
			b.StopTimer()
			svc, err := retrieve.New(ctx, retrieve.Config{}, nc, js, zerolog.Nop())
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			start := time.Now()
			reply, rerr := svc.Retrieve(ctx, "acme", events.RetrieveRequest{Query: "rollback of the postgres deploy", User: fmt.Sprintf("user%02d", u), Sources: []string{"archive", "long"}})
			took = append(took, time.Since(start))
			if rerr != nil {
				b.Fatal(rerr)
			}
			if len(reply.Entries) == 0 {
				b.Fatal("no entries")
			}
		}
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50_ms")
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99_ms")
	// Then four clients at once, each asking for other users, of a retriever that just started.
	b.StopTimer()
	svc, err := retrieve.New(ctx, retrieve.Config{}, nc, js, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	var conc []time.Duration
	var wg sync.WaitGroup
	for c := range 4 {
		wg.Go(func() {
			for u := c; u < users; u += 4 {
				start := time.Now()
				_, err := svc.Retrieve(ctx, "acme", events.RetrieveRequest{Query: "rollback of the postgres deploy", User: fmt.Sprintf("user%02d", u), Sources: []string{"archive", "long"}})
				mu.Lock()
				conc = append(conc, time.Since(start))
				mu.Unlock()
				if err != nil {
					b.Error(err)
				}
			}
		})
	}
	wg.Wait()
	slices.Sort(conc)
	b.ReportMetric(float64(conc[len(conc)/2].Microseconds())/1000, "4clients_p50_ms")
	b.ReportMetric(float64(conc[len(conc)*99/100].Microseconds())/1000, "4clients_p99_ms")
}

// BenchmarkLoadedTurnMemory measures the heap a retriever holds per loaded turn: 40 users with
// 500 turns each are loaded (one retrieve each), then the live heap is compared with the heap
// before.
func BenchmarkLoadedTurnMemory(b *testing.B) {
	const users, turns = 40, 500
	nc, js := coldUsers(b, users, turns, 0)
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		svc, err := retrieve.New(ctx, retrieve.Config{}, nc, js, zerolog.Nop())
		if err != nil {
			b.Fatal(err)
		}
		for u := range users {
			if _, err := svc.Retrieve(ctx, "acme", events.RetrieveRequest{Query: "rollback", User: fmt.Sprintf("user%02d", u), Sources: []string{"archive", "long"}}); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(users*turns), "heap_bytes/turn")
		runtime.KeepAlive(svc)
	}
}

// BenchmarkLoadedTurnRSS measures what the whole agentmem process (every worker and the embedded
// NATS server, as memoryd runs them) holds per turn once 100,000 turns of 200 users (500 turns in
// 50 sessions each, about 400 bytes of text per turn) are stored and every user was loaded by a
// retrieve request: the growth of the process's resident set (Linux VmRSS) over the process
// with no data, after a GC that returns freed pages to the system, and of the live heap; right
// after the load, and again after 15 idle seconds.
func BenchmarkLoadedTurnRSS(b *testing.B) {
	const users, turns = 200, 500
	for i := 0; i < b.N; i++ {
		runtime.GC()
		debug.FreeOSMemory()
		rss0, heap0 := processMemory(b)
		nc, _ := coldUsers(b, users, turns, 400)
		c, err := client.New(nc, client.Options{Tenant: "acme", Timeout: time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		for u := range users {
			if _, err := c.Retrieve(ctx, events.RetrieveRequest{Query: "rollback", User: fmt.Sprintf("user%02d", u), Sources: []string{"archive", "long"}}); err != nil {
				b.Fatal(err)
			}
		}
		rssLive, _ := processMemory(b)
		runtime.GC()
		debug.FreeOSMemory()
		rss, heap := processMemory(b)
		// Then idle: the NATS server drops the caches of the message blocks it wrote and read
		// after 10 seconds without activity. (Not a wait for an event: the quiet period is what
		// this figure measures.)
		time.Sleep(15 * time.Second)
		runtime.GC()
		debug.FreeOSMemory()
		rssIdle, heapIdle := processMemory(b)
		n := float64(users * turns)
		b.ReportMetric(float64(rss-rss0)/n, "rss_bytes/turn")
		b.ReportMetric(float64(rssLive-rss0)/n, "rss_before_gc_bytes/turn")
		b.ReportMetric(float64(heap-heap0)/n, "heap_bytes/turn")
		b.ReportMetric(float64(rssIdle-rss0)/n, "idle_rss_bytes/turn")
		b.ReportMetric(float64(heapIdle-heap0)/n, "idle_heap_bytes/turn")
		b.ReportMetric(float64(rss)/(1<<20), "rss_MiB")
	}
}

// processMemory returns the process's resident set (VmRSS) and live heap, in bytes.
func processMemory(b *testing.B) (rss, heap uint64) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Skipf("no /proc/self/status (resident set measured on Linux only): %v", err)
	}
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				b.Fatalf("VmRSS %q: %v", v, err)
			}
			return kb << 10, ms.HeapAlloc
		}
	}
	b.Fatal("no VmRSS in /proc/self/status")
	return 0, 0
}

// publishBenchTurns publishes turns synthetic user turns of user (tenant acme) over sessions
// c00, c01, … (sessions of them, a second apart from 2026-10-01), the i-th made by format from
// i and three of words, and waits until the stream has acknowledged them all.
func publishBenchTurns(b *testing.B, js jetstream.JetStream, user, format string, words []string, turns, sessions int) {
	b.Helper()
	for i := range turns {
		sess := fmt.Sprintf("c%02d", i%sessions)
		id := fmt.Sprintf("%s-%05d", sess, i)
		text := fmt.Sprintf(format, i, words[i%len(words)], words[(i/3)%len(words)], words[(i/7)%len(words)])
		ev, _ := events.NewEvent(id, events.TypeTurn, "bench", time.Date(2026, 10, 1, 0, 0, i, 0, time.UTC), events.Turn{Role: "user", Content: text, User: user})
		m, _ := events.BinaryMsg("memory.turns.acme."+sess, ev)
		m.Header.Set(events.HeaderMsgID, events.MsgID("acme", sess, id))
		if _, err := js.PublishMsgAsync(m, jetstream.WithStallWait(30*time.Second)); err != nil {
			b.Fatal(err)
		}
	}
	<-js.PublishAsyncComplete()
}
