package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/pkg/client"
)

// A publish that no stream answers yet (a stream leader being elected answers nothing either) is
// tried again with the same Nats-Msg-Id until it is stored: the agent sees latency, not an error,
// and the turn is stored once.
func TestPublishRidesThroughAnAbsentStream(t *testing.T) {
	env := brokertest.Start(t)
	nc := env.Connect(t)
	var attempts atomic.Int32
	created := make(chan error, 1)
	// Count the attempts; after the third, the stream appears.
	spy, err := nc.Subscribe("memory.turns.acme.s1", func(*nats.Msg) {
		if attempts.Add(1) == 3 {
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_, err := env.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"memory.turns.>"}})
				created <- err
			}()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer spy.Unsubscribe()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(env.Connect(t), client.Options{Tenant: "acme", Timeout: 300 * time.Millisecond, PublishRetry: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ack, err := cl.Publish(context.Background(), client.Turn{ID: "t1", Session: "s1", User: "alice", Role: "user", Content: "hello"})
	if err != nil {
		t.Fatalf("publish through an absent stream: %v (after %d attempts)", err, attempts.Load())
	}
	if err := <-created; err != nil {
		t.Fatal(err)
	}
	if ack.Duplicate || ack.Sequence != 1 || attempts.Load() < 3 {
		t.Fatalf("ack %+v after %d attempts", ack, attempts.Load())
	}
	st, _ := env.JS.Stream(context.Background(), "T")
	info, err := st.Info(context.Background())
	if err != nil || info.State.Msgs != 1 {
		t.Fatalf("stream holds %d messages, want 1: %v", info.State.Msgs, err)
	}
}

// A refusal is final: answered at once, not tried again.
func TestPublishDoesNotRetryARefusal(t *testing.T) {
	env := brokertest.Start(t)
	nc := env.Connect(t)
	var attempts atomic.Int32
	_, err := nc.Subscribe("memory.turns.acme.s1", func(m *nats.Msg) {
		attempts.Add(1)
		body, _ := json.Marshal(map[string]any{"error": map[string]any{"code": 400, "err_code": 10400, "description": "Nats-Msg-Id does not match"}})
		_ = m.Respond(body)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil { // the responder is known to the server before the publish
		t.Fatal(err)
	}
	cl, _ := client.New(env.Connect(t), client.Options{Tenant: "acme", Timeout: time.Second, PublishRetry: 20 * time.Second})
	start := time.Now()
	_, err = cl.Publish(context.Background(), client.Turn{Session: "s1", User: "alice", Role: "user", Content: "hello"})
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) || apiErr.Code != 400 || !strings.Contains(err.Error(), "1 attempts") {
		t.Fatalf("refused publish: %v", err)
	}
	if n := attempts.Load(); n != 1 || time.Since(start) > 5*time.Second {
		t.Fatalf("%d attempts in %s, want 1 at once", n, time.Since(start))
	}
	// The same with retries off, and a deadline on the context wins over PublishRetry.
	cl, _ = client.New(env.Connect(t), client.Options{Tenant: "acme", Timeout: 100 * time.Millisecond, PublishRetry: -1})
	if _, err := cl.Publish(context.Background(), client.Turn{Session: "nobody", User: "alice", Role: "user", Content: "x"}); err == nil ||
		!strings.Contains(err.Error(), "1 attempts") {
		t.Fatalf("retries off: %v", err)
	}
}
