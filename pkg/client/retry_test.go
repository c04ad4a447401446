package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
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
	cl, err := client.New(env.Connect(t), client.Options{Tenant: "acme", Timeout: 300 * time.Millisecond, Retry: 20 * time.Second})
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
	cl, _ := client.New(env.Connect(t), client.Options{Tenant: "acme", Timeout: time.Second, Retry: 20 * time.Second})
	start := time.Now()
	_, err = cl.Publish(context.Background(), client.Turn{Session: "s1", User: "alice", Role: "user", Content: "hello"})
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) || apiErr.Code != 400 || !strings.Contains(err.Error(), "1 attempts") {
		t.Fatalf("refused publish: %v", err)
	}
	if n := attempts.Load(); n != 1 || time.Since(start) > 5*time.Second {
		t.Fatalf("%d attempts in %s, want 1 at once", n, time.Since(start))
	}
	// The same with retries off, and a deadline on the context wins over Retry.
	cl, _ = client.New(env.Connect(t), client.Options{Tenant: "acme", Timeout: 100 * time.Millisecond, Retry: -1})
	if _, err := cl.Publish(context.Background(), client.Turn{Session: "nobody", User: "alice", Role: "user", Content: "x"}); err == nil ||
		!strings.Contains(err.Error(), "1 attempts") {
		t.Fatalf("retries off: %v", err)
	}
}

// A retrieve that found no retriever (as while the retriever's connection moves to another
// server), got no answer in time, or was answered 503 (not ready) is asked again until a
// retriever answers; one answered 400 or 404, or 503 on "after" (the retriever waited for the
// turn already), is final at once.
func TestRetrieveRetriesOnlyPassingFailures(t *testing.T) {
	env := brokertest.Start(t)
	nc := env.Connect(t)
	cl, err := client.New(env.Connect(t), client.Options{Tenant: "acme", Timeout: 300 * time.Millisecond, Retry: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// Replies the scripted retriever sends.
	var (
		silence     = &nats.Msg{} // no answer: the attempt times out
		noResponder = &nats.Msg{Header: nats.Header{"Status": []string{"503"}}}
		answer      = &nats.Msg{Data: []byte(`{"entries":[],"context":"ok"}`)}
	)
	serviceError := func(code int, field, message string) *nats.Msg {
		data, _ := json.Marshal(map[string]any{"error": map[string]any{"code": code, "field": field, "message": message}})
		return &nats.Msg{Header: nats.Header{"Nats-Service-Error-Code": []string{strconv.Itoa(code)}, "Nats-Service-Error": []string{message}}, Data: data}
	}
	for _, tc := range []struct {
		name     string
		replies  []*nats.Msg // the answer to each attempt, in order; the last one repeats
		attempts int32
		code     int // the ServiceError's code; 0: success
	}{
		// nats.go takes an empty reply with Status 503 as the server's "no responders".
		{"no retriever for a moment", []*nats.Msg{noResponder, noResponder, answer}, 3, 0},
		{"a request lost", []*nats.Msg{silence, answer}, 2, 0},
		{"503 not ready", []*nats.Msg{serviceError(503, "", "not ready"), answer}, 2, 0},
		{"400 is final", []*nats.Msg{serviceError(400, "query", "query must not be empty"), answer}, 1, 400},
		{"404 is final", []*nats.Msg{serviceError(404, "", "no such thing"), answer}, 1, 404},
		{"429 is final", []*nats.Msg{serviceError(429, "", "rate limit"), answer}, 1, 429},
		{"503 on after is final", []*nats.Msg{serviceError(503, "after", `turn "t9" of session "s1" is not applied yet (waited 50 ms)`), answer}, 1, 503},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var attempts atomic.Int32
			sub, err := nc.Subscribe("memory.retrieve.acme", func(m *nats.Msg) {
				n := attempts.Add(1)
				r := *tc.replies[min(int(n), len(tc.replies))-1]
				if r.Header == nil && r.Data == nil {
					return
				}
				r.Subject = m.Reply
				_ = nc.PublishMsg(&r)
			})
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Unsubscribe()
			if err := nc.Flush(); err != nil {
				t.Fatal(err)
			}
			reply, err := cl.Retrieve(context.Background(), events.RetrieveRequest{Query: "q", Session: "s1"})
			var se *client.ServiceError
			switch {
			case tc.code == 0 && (err != nil || reply.Context != "ok"):
				t.Fatalf("retrieve: %+v, %v", reply, err)
			case tc.code != 0 && (!errors.As(err, &se) || se.Code != tc.code):
				t.Fatalf("retrieve: %v, want a service error %d", err, tc.code)
			}
			if n := attempts.Load(); n != tc.attempts {
				t.Fatalf("%d attempts, want %d", n, tc.attempts)
			}
		})
	}
	// With retries off, one attempt.
	off, _ := client.New(env.Connect(t), client.Options{Tenant: "acme", Timeout: 200 * time.Millisecond, Retry: -1})
	if _, err := off.Retrieve(context.Background(), events.RetrieveRequest{Query: "q"}); !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("retries off, no retriever: %v", err)
	}
}
