package archive_test

import (
	"context"
	"errors"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/internal/archive"
	"github.com/agentmem/agentmem/internal/broker/brokertest"
)

func TestPurgeKV(t *testing.T) {
	env := brokertest.Start(t)
	ctx := context.Background()
	kv, err := env.JS.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "B", History: 5})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"acme.s1.a", "acme.s1.a", "acme.s1.b", "acme.s2.a"} {
		if _, err := kv.PutString(ctx, k, "v"); err != nil {
			t.Fatal(err)
		}
	}
	n, err := archive.PurgeKV(ctx, env.JS, "B", "acme.s1.>")
	if err != nil || n != 3 {
		t.Fatalf("PurgeKV = %d, %v; want the 3 messages of acme.s1, history included", n, err)
	}
	for _, k := range []string{"acme.s1.a", "acme.s1.b"} {
		if _, err := kv.Get(ctx, k); !errors.Is(err, jetstream.ErrKeyNotFound) {
			t.Errorf("Get(%s) after the purge: %v, want ErrKeyNotFound", k, err)
		}
	}
	if _, err := kv.Get(ctx, "acme.s2.a"); err != nil {
		t.Errorf("another session's key went too: %v", err)
	}
	if n, err := archive.PurgeKV(ctx, env.JS, "B", "acme.s1.>"); err != nil || n != 0 {
		t.Errorf("second PurgeKV = %d, %v; want 0, nil", n, err)
	}
	if _, err := archive.Purge(ctx, env.JS, "NOPE", ">"); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Errorf("Purge of a missing stream: %v, want ErrStreamNotFound", err)
	}
}
