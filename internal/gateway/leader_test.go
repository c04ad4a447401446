package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/daemon/daemontest"
	"github.com/agentmem/agentmem/internal/gateway"
	"github.com/agentmem/agentmem/pkg/events"
)

// A kill -9 of the node leading the turns stream costs the gateway's HTTP clients latency, never
// an error: with the gateway's defaults every event (one at a time and in batches) is answered
// 202 and stored once, and every retrieve is answered 200.
func TestGatewayRidesThroughALeaderCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 3-node cluster and crashes a node; skipped with -short")
	}
	c := daemontest.StartCluster(t)
	gnc := c.Connect(t, "gateway")
	g, err := gateway.New(gateway.Config{}, gnc, c.JetStream(t, gnc), c.Topology, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(srv.Close)
	post := func(path, contentType string, header map[string]string, body []byte) error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, "POST", srv.URL+path, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", contentType)
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("%s: %d %s", path, resp.StatusCode, bytes.TrimSpace(b))
		}
		return nil
	}

	const singles, batch = 3, 10
	var acked atomic.Int64
	stop := make(chan struct{})
	errs := make(chan error, 64)
	report := func(err error) {
		select {
		case errs <- err:
		default:
		}
	}
	published := make([][]string, singles+1) // by session: h0…h2 one event at a time, h3 in batches
	slowest := make([]time.Duration, singles+2)
	var wg sync.WaitGroup
	for p := range singles + 1 {
		wg.Go(func() {
			sess := fmt.Sprintf("h%d", p)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				start := time.Now()
				var ids []string
				var err error
				if p < singles {
					id := fmt.Sprintf("%s-%05d", sess, i)
					data, _ := json.Marshal(events.Turn{Role: "user", Content: fmt.Sprintf("turn %d: the rollback plan", i), User: "u" + sess})
					err = post("/v1/tenants/acme/events", "application/json", map[string]string{"ce-specversion": "1.0", "ce-id": id,
						"ce-type": events.TypeTurn, "ce-source": "agent/test", "ce-subject": sess}, data)
					ids = []string{id}
				} else {
					var evs []map[string]any
					for j := range batch {
						id := fmt.Sprintf("%s-%05d-%02d", sess, i, j)
						evs = append(evs, structured(id, sess, events.TypeTurn, events.Turn{Role: "user", Content: "a batched turn about the rollback plan", User: "u" + sess}))
						ids = append(ids, id)
					}
					body, _ := json.Marshal(evs)
					err = post("/v1/tenants/acme/events", gateway.ContentTypeBatch, nil, body)
				}
				if err != nil {
					report(err)
					return
				}
				slowest[p] = max(slowest[p], time.Since(start))
				published[p] = append(published[p], ids...)
				acked.Add(int64(len(ids)))
			}
		})
	}
	var retrieves atomic.Int64
	wg.Go(func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			start := time.Now()
			if err := post("/v1/tenants/acme/retrieve", "application/json", nil, []byte(`{"query":"rollback plan","session":"h0"}`)); err != nil {
				report(err)
				return
			}
			slowest[singles+1] = max(slowest[singles+1], time.Since(start))
			retrieves.Add(1)
		}
	})
	c.CrashTurnsLeaderUnder(t, &acked, errs, 90*time.Second)
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
	t.Logf("slowest publish %s, slowest retrieve %s (%d events, %d retrieves)", slowPublish.Round(time.Millisecond),
		slowest[singles+1].Round(time.Millisecond), acked.Load(), retrieves.Load())
	if slowPublish < time.Second {
		t.Fatalf("the slowest publish took %s: the crash was not staged (no election to wait for)", slowPublish)
	}
	stored := c.Stored(t)
	total := 0
	for p, ids := range published {
		total += len(ids)
		for _, id := range ids {
			if n := stored[events.MsgID("acme", fmt.Sprintf("h%d", p), id)]; n != 1 {
				t.Errorf("event %s stored %d times", id, n)
			}
		}
	}
	if len(stored) != total {
		t.Errorf("the turns stream holds %d distinct events, %d were published", len(stored), total)
	}
	for p, ids := range published {
		body := fmt.Sprintf(`{"query":"rollback","session":"h%d","after":%q,"wait_ms":30000}`, p, ids[len(ids)-1])
		if err := post("/v1/tenants/acme/retrieve", "application/json", nil, []byte(body)); err != nil {
			t.Errorf("session h%d: its last event is not applied: %v", p, strings.TrimSpace(err.Error()))
		}
	}
}
