package ingest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/pkg/events"
)

// Eight processes provisioning the same replicated topology (streams, buckets, durable consumers)
// at once on a fresh 3-node cluster all succeed (with CreateOrUpdateStream and
// CreateOrUpdateConsumer they hung until their deadline), and the cluster ends with each stream
// and bucket once, at R3.
func TestEnsureRacesOnAFreshCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 3-node cluster; skipped with -short")
	}
	cl := brokertest.StartCluster(t, 3)
	topo := events.DefaultTopology()
	topo.Replicas = 3
	start := make(chan struct{})
	errs := make(chan error, 8)
	var js jetstream.JetStream
	for i := range 8 {
		nc, err := nats.Connect(cl.URLs())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		js, _ = jetstream.New(nc)
		go func(js jetstream.JetStream) {
			<-start
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			err := topo.Ensure(ctx, js)
			if err == nil {
				_, err = events.EnsureBucket(ctx, js, jetstream.KeyValueConfig{Bucket: "AGENTMEM_INGEST_MEMBERS", TTL: 6 * time.Second, Replicas: 3})
			}
			if err == nil { // the durable consumers every ingest process creates
				ccs := []jetstream.ConsumerConfig{ingest.MalformedConsumerConfig(topo)}
				for p := range topo.Partitions {
					ccs = append(ccs, ingest.TurnsConsumerConfig(topo, p))
				}
				err = events.EnsureConsumers(ctx, js, topo.TurnsStream(), ccs...)
			}
			if err != nil {
				err = fmt.Errorf("process %d: %w", i, err)
			}
			errs <- err
		}(js)
	}
	close(start)
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	for _, sc := range topo.StreamConfigs() {
		s, err := js.Stream(ctx, sc.Name)
		if err != nil {
			t.Fatal(err)
		}
		if r := s.CachedInfo().Config.Replicas; r != 3 {
			t.Errorf("stream %s has %d replicas", sc.Name, r)
		}
	}
	// A second round on the existing topology changes nothing and does not hang either.
	before, _ := js.Stream(ctx, topo.TurnsStream())
	if err := topo.Ensure(ctx, js); err != nil {
		t.Fatal(err)
	}
	after, _ := js.Stream(ctx, topo.TurnsStream())
	if !after.CachedInfo().Created.Equal(before.CachedInfo().Created) {
		t.Error("the turns stream was created again")
	}
}
