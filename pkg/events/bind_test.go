package events

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

func TestBindBucket(t *testing.T) {
	js, err := jetstream.New(runJetStream(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, err = BindBucket(ctx, js, "MISSING")
	if !errors.Is(err, jetstream.ErrBucketNotFound) || !strings.Contains(err.Error(), `"MISSING"`) {
		t.Fatalf("BindBucket of a missing bucket = %v, want ErrBucketNotFound naming it", err)
	}
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "THERE"}); err != nil {
		t.Fatal(err)
	}
	kv, err := BindBucket(ctx, js, "THERE")
	if err != nil || kv.Bucket() != "THERE" {
		t.Fatalf("BindBucket = %v, %v", kv, err)
	}
}
