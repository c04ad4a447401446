package retrieve_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/daemon"
	"github.com/agentmem/agentmem/internal/daemon/daemontest"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

// BenchmarkWarmRequest measures warm retrieves through NATS request-reply, as an agent makes
// them (the micro endpoint, its dispatch and the reply included): a session of 40 turns whose
// view is cached. "serial" sends one request at a time; "parallel" keeps 8 in flight;
// "beside-waiters" keeps 8 in flight while 8 more wait (wait_ms 300) for a turn that never comes,
// which shows what a slow request costs the others. Each reports p50 and p99 in µs, and the
// share of requests that took longer than 250 ms (stalled-%: behind a waiter, or a stalled box).
func BenchmarkWarmRequest(b *testing.B) {
	_, nc, _ := daemontest.Start(b, daemon.Config{Ingest: ingest.Config{IdleTimeout: -1}})
	cl, err := client.New(nc, client.Options{Tenant: "acme"})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var last string
	for i := range 40 {
		ack, err := cl.Publish(ctx, client.Turn{Session: "w1", User: "bench", Role: "user",
			Content: fmt.Sprintf("turn %d about the postgres deploy and the kafka rollback %d", i, i%7)})
		if err != nil {
			b.Fatal(err)
		}
		last = ack.ID
	}
	req := events.RetrieveRequest{Query: "postgres rollback", Session: "w1"}
	if _, err := cl.Retrieve(ctx, events.RetrieveRequest{Query: "x", Session: "w1", After: last, WaitMS: 10000}); err != nil {
		b.Fatal(err)
	}
	run := func(b *testing.B, workers, waiters int) {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for range waiters {
			wg.Go(func() {
				slow := events.RetrieveRequest{Query: "x", Session: "w1", After: "never-published", WaitMS: 300}
				for {
					select {
					case <-stop:
						return
					default:
					}
					_, _ = cl.Retrieve(ctx, slow)
				}
			})
		}
		lat := make([]time.Duration, b.N)
		next := make(chan int, b.N)
		for i := range b.N {
			next <- i
		}
		close(next)
		b.ResetTimer()
		var work sync.WaitGroup
		errs := make(chan error, workers)
		for range workers {
			work.Go(func() {
				for i := range next {
					t0 := time.Now()
					if _, err := cl.Retrieve(ctx, req); err != nil {
						errs <- err
						return
					}
					lat[i] = time.Since(t0)
				}
			})
		}
		work.Wait()
		b.StopTimer()
		close(stop)
		wg.Wait()
		select {
		case err := <-errs:
			b.Fatal(err)
		default:
		}
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		stalled := len(lat) - sort.Search(len(lat), func(i int) bool { return lat[i] > 250*time.Millisecond })
		b.ReportMetric(100*float64(stalled)/float64(len(lat)), "stalled-%")
	}
	b.Run("serial", func(b *testing.B) { run(b, 1, 0) })
	b.Run("parallel", func(b *testing.B) { run(b, 8, 0) })
	b.Run("beside-waiters", func(b *testing.B) { run(b, 8, 8) })
}
