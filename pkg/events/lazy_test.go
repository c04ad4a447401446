package events

import (
	"context"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// A lazy topology creates what is derived from the turns stream in the asynchronous persist
// mode, the turns stream and the recovery bucket in the default one; its buckets work as KV
// buckets, the lazily persisted ones without atomic batches, and ensuring it again changes
// nothing (a changed description too keeps the mode). A bucket that existed before keeps its mode.
func TestLazyTopology(t *testing.T) {
	js, err := jetstream.New(runJetStream(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	synced := DefaultTopology()
	synced.Prefix = "PRE"
	if err := synced.EnsureBuckets(ctx, js); err != nil {
		t.Fatal(err)
	}
	topo := DefaultTopology()
	topo.Lazy = true
	for range 2 {
		if err := topo.Ensure(ctx, js); err != nil {
			t.Fatal(err)
		}
	}
	info := func(name string) jetstream.StreamConfig {
		t.Helper()
		s, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return s.CachedInfo().Config
	}
	for _, name := range []string{topo.TurnsStream(), "KV_" + topo.RecoveryBucket()} {
		if info(name).PersistMode != jetstream.DefaultPersistMode {
			t.Fatalf("%s is persisted asynchronously", name)
		}
	}
	if !info(topo.TurnsStream()).AllowAtomicPublish {
		t.Fatal("the turns stream lost atomic batches")
	}
	for _, sc := range topo.StreamConfigs()[1:] {
		if info(sc.Name).PersistMode != jetstream.AsyncPersistMode {
			t.Fatalf("%s is not persisted asynchronously", sc.Name)
		}
	}
	for _, kc := range topo.BucketConfigs() {
		cfg := info("KV_" + kc.Bucket)
		if cfg.PersistMode != jetstream.AsyncPersistMode || cfg.AllowAtomicPublish {
			t.Fatalf("bucket %s: persist mode %s, atomic batches %t", kc.Bucket, cfg.PersistMode, cfg.AllowAtomicPublish)
		}
		kv, err := js.KeyValue(ctx, kc.Bucket)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kv.Put(ctx, "k", []byte("v")); err != nil {
			t.Fatalf("bucket %s: %v", kc.Bucket, err)
		}
		if e, err := kv.Get(ctx, "k"); err != nil || string(e.Value()) != "v" {
			t.Fatalf("bucket %s: %v", kc.Bucket, err)
		}
	}
	kc := topo.BucketConfigs()[0]
	kc.Description = "changed"
	if _, err := EnsureBucketPersist(ctx, js, kc, jetstream.AsyncPersistMode); err != nil {
		t.Fatalf("updating a lazily persisted bucket: %v", err)
	}
	if cfg := info("KV_" + kc.Bucket); cfg.Description != "changed" || cfg.PersistMode != jetstream.AsyncPersistMode {
		t.Fatalf("after an update: %q, %s", cfg.Description, cfg.PersistMode)
	}
	lazyAfter := synced
	lazyAfter.Lazy = true
	if err := lazyAfter.EnsureBuckets(ctx, js); err != nil {
		t.Fatal(err)
	}
	if cfg := info("KV_" + synced.SessionBucket()); cfg.PersistMode != jetstream.DefaultPersistMode || !cfg.AllowAtomicPublish {
		t.Fatalf("a bucket created synced, ensured lazily: %s, atomic batches %t", cfg.PersistMode, cfg.AllowAtomicPublish)
	}
	three := topo
	three.Replicas = 3
	if err := three.Validate(); err == nil || !strings.Contains(err.Error(), "one replica") {
		t.Fatalf("a lazy topology of 3 replicas: %v", err)
	}
}

// A consumer created at a sequence (memoryd's recovery does) is what one that wants every message
// becomes: ensuring it does not try to change where it starts, which the server refuses.
func TestPositionedConsumerIsNotChanged(t *testing.T) {
	want := jetstream.ConsumerConfig{Durable: "c", DeliverPolicy: jetstream.DeliverAllPolicy, AckPolicy: jetstream.AckExplicitPolicy}
	have := want
	have.DeliverPolicy, have.OptStartSeq, have.MemoryStorage = jetstream.DeliverByStartSequencePolicy, 42, true
	if consumerDiffers(have, want) {
		t.Fatal("a consumer created at a sequence differs from one that wants every message")
	}
	want.DeliverPolicy = jetstream.DeliverNewPolicy
	if !consumerDiffers(have, want) {
		t.Fatal("a consumer created at a sequence equals one that wants new messages")
	}
}
