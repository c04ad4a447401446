package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/agentmem/agentmem/internal/daemon"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

func TestServiceErrorOf(t *testing.T) {
	msg := func(code, desc, body string) *nats.Msg {
		m := nats.NewMsg("_INBOX.x")
		if code != "" {
			m.Header.Set(micro.ErrorCodeHeader, code)
			m.Header.Set(micro.ErrorHeader, desc)
		}
		m.Data = []byte(body)
		return m
	}
	for _, tc := range []struct {
		name string
		msg  *nats.Msg
		want *client.ServiceError
	}{
		{"an answer", msg("", "", `{"entries":[]}`), nil},
		{"error body", msg("400", "limit: must be 1-200", `{"error":{"code":400,"field":"limit","message":"must be 1-200"}}`),
			&client.ServiceError{Code: 400, Field: "limit", Message: "must be 1-200"}},
		{"headers only", msg("503", "not ready", ""), &client.ServiceError{Code: 503, Message: "not ready"}},
		{"another body", msg("500", "boom", `{"detail":"x"}`), &client.ServiceError{Code: 500, Message: "boom"}},
		{"a code that is not a number", msg("E1", "odd", ""), &client.ServiceError{Code: 0, Message: "odd"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := client.ServiceErrorOf(tc.msg)
			if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
				t.Fatalf("ServiceErrorOf = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestForgetAndCorrect(t *testing.T) {
	nc := startDaemon(t, daemon.Config{Ingest: ingest.Config{IdleTimeout: -1}})
	cl, err := client.New(nc, client.Options{Tenant: "acme", Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	added := make(chan events.Fact, 16)
	stop, err := cl.Watch(func(e client.Event) {
		if e.Event.Type() != events.TypeFact {
			return
		}
		if fe, err := events.DecodeData[events.FactEvent](e.Event); err == nil && fe.Op == events.FactAdded {
			added <- fe.Fact
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stop() }()
	for _, text := range []string{"My favourite programming language is Go.", "I live in Paris."} {
		if _, err := cl.Publish(ctx, client.Turn{Session: "s1", User: "alice", Role: "user", Content: text}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cl.EndSession(ctx, "s1", "alice"); err != nil {
		t.Fatal(err)
	}
	var facts []events.Fact
	for len(facts) < 2 {
		select {
		case f := <-added:
			facts = append(facts, f)
		case <-time.After(30 * time.Second):
			t.Fatalf("the extractor announced %d facts, want 2", len(facts))
		}
	}

	// Invalid input fails before anything is sent.
	if _, err := cl.Correct(ctx, "alice", facts[0].ID, ""); !errors.Is(err, events.ErrInvalid) {
		t.Fatalf("Correct without content: %v, want ErrInvalid", err)
	}
	if _, err := cl.Forget(ctx, "not a user"); !errors.Is(err, events.ErrInvalid) {
		t.Fatalf("Forget of an invalid user: %v, want ErrInvalid", err)
	}
	// The service's errors come back as *ServiceError.
	var se *client.ServiceError
	if _, err := cl.ForgetFact(ctx, "alice", "f-0000000000000000"); !errors.As(err, &se) || se.Code != 404 || se.Field != "fact_id" {
		t.Fatalf("ForgetFact of an unknown fact: %v, want a 404 on fact_id", err)
	}

	corrected, err := cl.Correct(ctx, "alice", facts[0].ID, "My favourite programming language is Rust.")
	if err != nil {
		t.Fatal(err)
	}
	if corrected.Fact == nil || corrected.Fact.ID == facts[0].ID || corrected.Fact.Content != "My favourite programming language is Rust." {
		t.Fatalf("Correct reply %+v", corrected)
	}
	deleted, err := cl.ForgetFact(ctx, "alice", facts[1].ID)
	if err != nil {
		t.Fatal(err)
	}
	if deleted.Fact != nil || deleted.Forgotten["facts"] != 1 {
		t.Fatalf("ForgetFact reply %+v", deleted)
	}
	gone, err := cl.Forget(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if gone.Forgotten["turns"] != 3 || gone.Forgotten["facts"] == 0 {
		t.Fatalf("Forget reply %+v, want 3 turns and the facts", gone)
	}
	// Nothing is left to correct.
	if _, err := cl.Correct(ctx, "alice", corrected.Fact.ID, "I write Zig."); !errors.As(err, &se) || se.Code != 404 {
		t.Fatalf("Correct after the forget: %v, want a 404", err)
	}
}
