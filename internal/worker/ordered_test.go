package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/deadletter"
	"github.com/agentmem/agentmem/internal/worker"
	"github.com/agentmem/agentmem/pkg/events"
)

// letters returns the dead letters written so far.
func letters(t *testing.T, env *brokertest.Env) []events.DeadLetter {
	t.Helper()
	ctx := context.Background()
	s, err := env.JS.Stream(ctx, "AGENTMEM_DLQ")
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []events.DeadLetter
	for seq := info.State.FirstSeq; seq > 0 && seq <= info.State.LastSeq; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			continue
		}
		var dl events.DeadLetter
		if err := json.Unmarshal(m.Data, &dl); err != nil {
			t.Fatal(err)
		}
		out = append(out, dl)
	}
	return out
}

// The ordered mode groups a batch by key, hands each group its messages in order, and settles
// every message by its outcome: done, recorded by the handler, dead-lettered with its class, or
// retried (a failed group, a panic) until it succeeds.
func TestOrderedSettlesEachMessageByItsOutcome(t *testing.T) {
	env, js := setup(t, -1, 5*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	seen := map[string][]string{} // group → data, in the order handled
	var calls [][]uint64          // the stream sequences of each call's group
	failed, panicked := false, false
	handle := func(_ context.Context, g []worker.Delivery[string]) ([]error, error) {
		mu.Lock()
		defer mu.Unlock()
		key := g[0].Key
		var seqs []uint64
		for _, d := range g {
			seqs = append(seqs, d.Meta.Sequence.Stream)
		}
		calls = append(calls, seqs)
		out := make([]error, len(g))
		for i, d := range g {
			data := string(d.Msg.Data())
			seen[key] = append(seen[key], data)
			switch {
			case data == "fail-once" && !failed:
				failed = true
				return nil, errors.New("store unavailable")
			case data == "panic-once" && !panicked:
				panicked = true
				panic("boom")
			case data == "recorded":
				out[i] = worker.Recorded("refused by the handler")
			case data == "bad":
				out[i] = worker.Classed(deadletter.ClassInvalid, errors.New("bad data"))
			}
		}
		return out, nil
	}
	o := worker.NewOrdered(worker.OrderedConfig{Name: "test", BatchSize: 16, Buffer: 64,
		Backoff: func(uint64) time.Duration { return 10 * time.Millisecond }}, js, deadletter.NewWriter(js, 0), zerolog.Nop())
	done := make(chan error, 1)
	go func() {
		done <- o.Run(ctx, worker.Feed[string]{Stream: "WORK", Consumer: "w", Handle: handle,
			Group: func(m jetstream.Msg) (string, error) {
				k := strings.TrimPrefix(m.Subject(), "work.")
				if k == "nokey" {
					return "", worker.Classed(deadletter.ClassMalformed, errors.New("no key"))
				}
				return k, nil
			}})
	}()
	for _, p := range [][2]string{{"a", "a1"}, {"b", "b1"}, {"a", "fail-once"}, {"b", "panic-once"}, {"a", "recorded"},
		{"b", "bad"}, {"nokey", "x"}, {"a", "a2"}, {"b", "b2"}} {
		if _, err := js.Publish(context.Background(), "work."+p[0], []byte(p[1])); err != nil {
			t.Fatal(err)
		}
	}
	// Everything was handled; the failed and the panicking message twice.
	want := map[string][]string{"a": {"a1", "fail-once", "recorded", "a2"}, "b": {"b1", "panic-once", "bad", "b2"}}
	missing := func() []string {
		var out []string
		for key, datas := range want {
			for _, data := range datas {
				n, wantN := 0, 1
				if data == "fail-once" || data == "panic-once" {
					wantN = 2
				}
				for _, d := range seen[key] {
					if d == data {
						n++
					}
				}
				if n < wantN {
					out = append(out, fmt.Sprintf("group %s: %q handled %d times, want at least %d (handled %v)", key, data, n, wantN, seen[key]))
				}
			}
		}
		slices.Sort(out)
		return out
	}
	// Done when every message was handled as often as it must be and the consumer holds nothing
	// (a message waiting for its redelivery after a Nak is neither pending nor unacknowledged, so
	// the consumer alone can look done too early).
	cons, _ := js.Consumer(context.Background(), "WORK", "w")
	brokertest.CheckFor(t, 15*time.Second, 20*time.Millisecond, func() error {
		mu.Lock()
		m := missing()
		mu.Unlock()
		if len(m) > 0 {
			return errors.New(m[0])
		}
		info, err := cons.Info(context.Background())
		if err != nil {
			return err
		}
		if info.NumPending+uint64(info.NumAckPending) != 0 {
			return fmt.Errorf("%d pending, %d unacknowledged", info.NumPending, info.NumAckPending)
		}
		return nil
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	// Each call saw its group in stream order. (Across a retry the layer keeps no order: a
	// failed group's messages come back after later ones of the key; ingest's gap fill orders
	// them.)
	for _, seqs := range calls {
		if !slices.IsSorted(seqs) {
			t.Errorf("a group was handed over out of order: %v", seqs)
		}
	}
	for _, m := range missing() {
		t.Error(m)
	}
	var reasons []string
	for _, dl := range letters(t, env) {
		reasons = append(reasons, dl.Subject+": "+dl.Reason)
	}
	slices.Sort(reasons)
	if fmt.Sprint(reasons) != "[work.b: bad data work.nokey: no key]" {
		t.Fatalf("dead letters %q, want the bad one and the unkeyed one; recorded ones are the handler's", reasons)
	}
}

// A consumer that stops delivering on its own (nats.go stops consuming for good when the
// server says the consumer was deleted) ends Run with the reason, after what was delivered is
// handled, instead of leaving the runner waiting for ever on a feed that no longer delivers:
// the caller starts it again (ingest's keepPartition).
func TestOrderedReturnsWhenAConsumerStops(t *testing.T) {
	_, js := setup(t, -1, 5*time.Second)
	handled := make(chan string, 16)
	o := worker.NewOrdered(worker.OrderedConfig{Name: "test", BatchSize: 4}, js, deadletter.NewWriter(js, 0), zerolog.Nop())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- o.Run(ctx, worker.Feed[string]{Stream: "WORK", Consumer: "w",
			Group: func(m jetstream.Msg) (string, error) { return m.Subject(), nil },
			Handle: func(_ context.Context, g []worker.Delivery[string]) ([]error, error) {
				for _, d := range g {
					handled <- string(d.Msg.Data())
				}
				return nil, nil
			}})
	}()
	if _, err := js.Publish(context.Background(), "work.a", []byte("a1")); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-handled:
		if got != "a1" {
			t.Fatalf("handled %q, want a1", got)
		}
	case err := <-done:
		t.Fatalf("Run returned before the first message was handled: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the first message was not handled in 30 s")
	}
	if err := js.DeleteConsumer(context.Background(), "WORK", "w"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), `consumer "w" stopped delivering`) || !errors.Is(err, jetstream.ErrConsumerDeleted) {
			t.Fatalf("Run returned %v, want the consumer named as stopped because it was deleted", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run still waits on a consumer that was deleted 30 s ago")
	}
}
