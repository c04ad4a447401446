package session_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/pkg/events"
)

// A connection with memoryd's short synchronous queue (SyncQueueLen, where nats.go's default
// allocates 512 KB per batched read) still reads a full batch of headers: 256 sessions, one
// request, every header back.
func TestHeadersReadAFullBatchThroughTheShortSyncQueue(t *testing.T) {
	st, env := newStore(t)
	ctx := context.Background()
	var keys []session.Key
	for i := range 256 {
		k := session.Key{Tenant: "acme", Session: fmt.Sprintf("q%03d", i)}
		keys = append(keys, k)
		seedSession(t, st, k)
	}
	js, err := jetstream.New(env.Connect(t, nats.SyncQueueLen(session.SyncQueueLen)))
	if err != nil {
		t.Fatal(err)
	}
	short, err := session.NewStore(ctx, js, events.DefaultTopology())
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		got, err := short.Headers(ctx, keys)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(keys) {
			t.Fatalf("%d headers of %d sessions", len(got), len(keys))
		}
	}
}
