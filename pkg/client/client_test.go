package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker"
	"github.com/agentmem/agentmem/internal/daemon"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
	"github.com/agentmem/agentmem/pkg/memory"
)

func startDaemon(t *testing.T, cfg daemon.Config) *nats.Conn {
	t.Helper()
	cfg.Broker = broker.Config{Listen: "127.0.0.1:-1", DataDir: t.TempDir()}
	d, err := daemon.Start(context.Background(), cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Stop() })
	nc, err := nats.Connect(d.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

func TestPublishThenSearch(t *testing.T) {
	nc := startDaemon(t, daemon.Config{Ingest: ingest.Config{IdleTimeout: -1}})
	cl, err := client.New(nc, client.Options{Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	at := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	ack, err := cl.Publish(ctx, client.Turn{Session: "s1", User: "alice", Role: "user", Content: "I love writing Go, it's my favourite language", Time: at})
	if err != nil {
		t.Fatal(err)
	}
	if ack.ID == "" || ack.Sequence == 0 || ack.Duplicate {
		t.Fatalf("ack %+v", ack)
	}
	again, err := cl.Publish(ctx, client.Turn{ID: ack.ID, Session: "s1", User: "alice", Role: "user", Content: "I love writing Go, it's my favourite language", Time: at})
	if err != nil || !again.Duplicate {
		t.Fatalf("republishing the same id: %+v %v", again, err)
	}
	reply, err := cl.Retrieve(ctx, events.RetrieveRequest{Query: "favourite programming language", Session: "s1", After: ack.ID, WaitMS: 5000})
	if err != nil {
		t.Fatal(err)
	}
	if len(reply.Entries) != 1 || reply.Entries[0].ID != ack.ID || !reply.Entries[0].Timestamp.Equal(at) {
		t.Fatalf("entries %+v", reply.Entries)
	}
	text, err := cl.Context(ctx, "favourite language", "s1", "alice", 100)
	if err != nil || text == "" {
		t.Fatalf("context %q: %v", text, err)
	}
	_, err = cl.Retrieve(ctx, events.RetrieveRequest{Query: ""})
	var se *client.ServiceError
	if !errors.As(err, &se) || se.Code != 400 || se.Field != "query" {
		t.Fatalf("empty query: %v", err)
	}
	if _, err := cl.Publish(ctx, client.Turn{Session: "s1", Role: "robot", Content: "x"}); !errors.Is(err, events.ErrInvalid) {
		t.Fatalf("bad role published: %v", err)
	}
	if _, err := client.New(nc, client.Options{Tenant: "a.b"}); !errors.Is(err, events.ErrInvalid) {
		t.Fatalf("bad tenant accepted: %v", err)
	}
}

func TestWatchSeesPressureEvents(t *testing.T) {
	b := memory.DefaultBudget()
	b.ContextWindow = 200 + b.System + b.Tools + b.Response
	nc := startDaemon(t, daemon.Config{Ingest: ingest.Config{IdleTimeout: -1, Budget: b}})
	cl, err := client.New(nc, client.Options{Tenant: "acme", Structured: true})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan client.Event, 16)
	stop, err := cl.Watch(func(e client.Event) {
		select {
		case got <- e:
		default:
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stop() }()
	ctx := context.Background()
	for i := range 12 {
		role := []string{"user", "assistant"}[i%2]
		if _, err := cl.Publish(ctx, client.Turn{Session: "w1", User: "alice", Role: role, Content: "a fairly long sentence about the weather in Lyon and the trains to Paris"}); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case e := <-got:
		if e.Event.Type() != events.TypePressure || e.Subject != "memory.pressure.acme.w1" {
			t.Fatalf("event %s on %s", e.Event.Type(), e.Subject)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no pressure event within 10s")
	}
}

// TestWatchPassesAnEventOnce: a fact event published twice (an extractor that retried) reaches
// fn once; another tenant's events never do; after stop nothing more arrives.
func TestWatchPassesAnEventOnce(t *testing.T) {
	nc := startDaemon(t, daemon.Config{Ingest: ingest.Config{IdleTimeout: -1}})
	cl, err := client.New(nc, client.Options{Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan client.Event, 16)
	stop, err := cl.Watch(func(e client.Event) { got <- e })
	if err != nil {
		t.Fatal(err)
	}
	// Watch returned with its subscriptions registered: publishes from another connection made
	// right away are seen.
	other, err := nats.Connect(nc.ConnectedUrl())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	publish := func(subject, id string) {
		t.Helper()
		ev, err := events.NewEvent(id, events.TypeFact, "test", time.Now(), events.FactEvent{Op: events.FactAdded})
		if err != nil {
			t.Fatal(err)
		}
		m, err := events.BinaryMsg(subject, ev)
		if err != nil {
			t.Fatal(err)
		}
		if err := other.PublishMsg(m); err != nil {
			t.Fatal(err)
		}
	}
	publish("memory.facts.acme.alice", "f1")
	publish("memory.facts.acme.alice", "f1")
	publish("memory.facts.beta.bob", "f9")
	publish("memory.facts.acme.alice", "f2")
	for _, want := range []string{"f1", "f2"} {
		select {
		case e := <-got:
			if e.Event.ID() != want {
				t.Fatalf("got %s, want %s", e.Event.ID(), want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no event %s within 10s", want)
		}
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	publish("memory.facts.acme.alice", "f3")
	if err := other.Flush(); err != nil { // f3 reached the server, and would have reached Watch
		t.Fatal(err)
	}
	select {
	case e := <-got:
		t.Fatalf("after stop or a duplicate: %s", e.Event.ID())
	default:
	}
}
