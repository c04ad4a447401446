package client_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/daemon/daemontest"
	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

// A kill -9 of the node leading the turns stream, while an agent publishes turns and asks the
// retriever, costs the agent latency, never an error: with the client's default options every
// publish and every retrieve succeeds, and every turn is stored once and applied.
func TestClientRidesThroughALeaderCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 3-node cluster and crashes a node; skipped with -short")
	}
	c := daemontest.StartCluster(t)
	agent, err := client.New(c.Connect(t, "agent"), client.Options{Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	const publishers = 4
	var acked atomic.Int64
	stop := make(chan struct{})
	errs := make(chan error, 64)
	report := func(err error) {
		select {
		case errs <- err:
		default:
		}
	}
	published := make([][]string, publishers)
	slowest := make([]time.Duration, publishers+1)
	var wg sync.WaitGroup
	for p := range publishers {
		wg.Go(func() {
			sess := fmt.Sprintf("s%d", p)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("p%d-%05d", p, i)
				start := time.Now()
				_, err := agent.Publish(context.Background(), client.Turn{ID: id, Session: sess, User: "u" + sess, Role: "user",
					Content: fmt.Sprintf("turn %d of publisher %d: the rollback plan for the billing service", i, p)})
				if err != nil {
					report(fmt.Errorf("publish %s: %w", id, err))
					return
				}
				slowest[p] = max(slowest[p], time.Since(start))
				published[p] = append(published[p], id)
				acked.Add(1)
			}
		})
	}
	var retrieves atomic.Int64
	wg.Go(func() {
		tick := time.NewTicker(20 * time.Millisecond) // an agent's pace: a question now and then
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			start := time.Now()
			if _, err := agent.Retrieve(context.Background(), events.RetrieveRequest{Query: "rollback plan", Session: "s0"}); err != nil {
				report(fmt.Errorf("retrieve: %w", err))
				return
			}
			slowest[publishers] = max(slowest[publishers], time.Since(start))
			retrieves.Add(1)
		}
	})
	c.CrashTurnsLeaderUnder(t, &acked, errs, 60*time.Second)
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	slowPublish := max(slowest[0], slowest[1], slowest[2], slowest[3])
	t.Logf("slowest publish %s, slowest retrieve %s (%d turns, %d retrieves)", slowPublish.Round(time.Millisecond),
		slowest[publishers].Round(time.Millisecond), acked.Load(), retrieves.Load())
	// A crash leaves the stream without a leader until the others elect one (a handover, as
	// a shutdown makes, costs milliseconds): the publishes waited for it.
	if slowPublish < time.Second {
		t.Fatalf("the slowest publish took %s: the crash was not staged (no election to wait for)", slowPublish)
	}
	// Every turn is stored once ...
	stored := c.Stored(t)
	total := 0
	for p, ids := range published {
		total += len(ids)
		for _, id := range ids {
			if n := stored[events.MsgID("acme", fmt.Sprintf("s%d", p), id)]; n != 1 {
				t.Errorf("turn %s stored %d times", id, n)
			}
		}
	}
	if len(stored) != total {
		t.Errorf("the turns stream holds %d distinct turns, %d were published", len(stored), total)
	}
	// ... and applied (read-your-writes on each session's last turn).
	for p, ids := range published {
		if _, err := agent.Retrieve(context.Background(), events.RetrieveRequest{Query: "rollback", Session: fmt.Sprintf("s%d", p),
			After: ids[len(ids)-1], WaitMS: 30000}); err != nil {
			t.Errorf("session s%d: its last turn %s is not applied: %v", p, ids[len(ids)-1], err)
		}
	}
	if t.Failed() {
		c.Explain(t)
	}
}
