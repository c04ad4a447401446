package daemon_test

import (
	"context"
	"fmt"
	"net"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker"
	"github.com/agentmem/agentmem/internal/daemon"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

func freePort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func TestRestartOnSameDataKeepsEverySession(t *testing.T) {
	dir := t.TempDir()
	cfg := daemon.Config{
		Broker: broker.Config{Listen: freePort(t), DataDir: dir},
		Ingest: ingest.Config{IdleTimeout: -1},
	}
	ctx := context.Background()
	d, err := daemon.Start(ctx, cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(d.URL())
	if err != nil {
		t.Fatal(err)
	}
	cl, _ := client.New(nc, client.Options{Tenant: "acme"})
	last := map[string]string{}
	for i := range 30 {
		sess := fmt.Sprintf("s%d", i%3)
		ack, err := cl.Publish(ctx, client.Turn{Session: sess, User: "u" + sess, Role: "user", Content: fmt.Sprintf("fact number %d about zebras", i)})
		if err != nil {
			t.Fatal(err)
		}
		last[sess] = ack.ID
	}
	before := map[string]events.RetrieveReply{}
	for sess, id := range last {
		r, err := cl.Retrieve(ctx, events.RetrieveRequest{Query: "zebras", Session: sess, Limit: intp(50), After: id, WaitMS: 5000})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Entries) != 10 {
			t.Fatalf("%s holds %d entries before the restart, want 10", sess, len(r.Entries))
		}
		before[sess] = r
	}
	nc.Close()
	if err := d.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}

	d2, err := daemon.Start(ctx, cfg, zerolog.Nop())
	if err != nil {
		t.Fatalf("restart on the same data: %v", err)
	}
	t.Cleanup(func() { _ = d2.Stop() })
	nc2, err := nats.Connect(d2.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc2.Close()
	cl2, _ := client.New(nc2, client.Options{Tenant: "acme"})
	for sess, want := range before {
		got, err := cl2.Retrieve(ctx, events.RetrieveRequest{Query: "zebras", Session: sess, Limit: intp(50)})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Entries) != len(want.Entries) {
			t.Fatalf("%s: %d entries after the restart, %d before", sess, len(got.Entries), len(want.Entries))
		}
		for i := range got.Entries {
			if got.Entries[i].ID != want.Entries[i].ID || got.Entries[i].Content != want.Entries[i].Content {
				t.Fatalf("%s: entry %d changed across the restart: %+v vs %+v", sess, i, got.Entries[i], want.Entries[i])
			}
		}
	}
	// The restarted service keeps applying new turns to the same sessions.
	ack, err := cl2.Publish(ctx, client.Turn{Session: "s0", User: "us0", Role: "user", Content: "one more about zebras"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := cl2.Retrieve(ctx, events.RetrieveRequest{Query: "zebras", Session: "s0", Limit: intp(50), After: ack.ID, WaitMS: 5000})
	if err != nil || len(r.Entries) != 11 {
		t.Fatalf("after the restart: %d entries, %v", len(r.Entries), err)
	}
}

func intp(i int) *int { return &i }
