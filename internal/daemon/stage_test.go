package daemon_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker"
	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/daemon"
	"github.com/agentmem/agentmem/internal/daemon/daemontest"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/internal/metrics"
	"github.com/agentmem/agentmem/internal/metrics/metricstest"
	"github.com/agentmem/agentmem/internal/stage"
	"github.com/agentmem/agentmem/internal/stages"
	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

// turnCounter is a small example stage: it counts the turns of the turns stream on a consumer
// of its own. It is added to the daemon through the stage API only (no change to package
// daemon).
type turnCounter struct {
	cons jetstream.Consumer
	n    atomic.Int64
	want int64
	done chan struct{} // closed when n reaches want
}

func (c *turnCounter) Run(ctx context.Context) error {
	cc, err := c.cons.Consume(func(m jetstream.Msg) {
		_ = m.Ack()
		if c.n.Add(1) == c.want {
			close(c.done)
		}
	})
	if err != nil {
		return err
	}
	<-ctx.Done()
	cc.Drain()
	<-cc.Closed()
	return nil
}

func turnCountStage(counter **turnCounter, want int64) stage.Stage {
	consumers := func(t events.Topology) []stage.Consumer {
		return []stage.Consumer{{Stream: t.TurnsStream(), Config: jetstream.ConsumerConfig{
			Durable: t.Prefix + "_turncount", FilterSubject: "*.memory.turns.*.*",
			AckPolicy: jetstream.AckExplicitPolicy, DeliverPolicy: jetstream.DeliverAllPolicy,
		}}}
	}
	var st stage.Stage
	st = stage.Stage{
		Name:      "turncount",
		Consumers: consumers,
		Build: func(ctx context.Context, sh *stage.Shared) (stage.Runner, error) {
			if err := st.EnsureConsumers(ctx, sh.JS, sh.Topology); err != nil {
				return nil, err
			}
			cs := consumers(sh.Topology)[0]
			cons, err := sh.JS.Consumer(ctx, cs.Stream, cs.Name())
			if err != nil {
				return nil, err
			}
			*counter = &turnCounter{cons: cons, want: want, done: make(chan struct{})}
			return *counter, nil
		},
	}
	return st
}

// TestExampleStage runs a stage the registry does not know beside every stage it does: the
// daemon builds and runs it, real turns drive it, and its consumer shows in the lag metrics
// and in the consumers the stage list names.
func TestExampleStage(t *testing.T) {
	const turns = 5
	var counter *turnCounter
	example := turnCountStage(&counter, turns)
	all := append(stages.All(stages.Configs{Ingest: ingest.Config{IdleTimeout: -1}}), example)
	m := metrics.New()
	_, nc, js := daemontest.Start(t, daemon.Config{Metrics: m, Stages: all})
	if counter == nil {
		t.Fatal("the example stage was not built")
	}
	cl, err := client.New(nc, client.Options{Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range turns {
		if _, err := cl.Publish(ctx, client.Turn{ID: fmt.Sprintf("t%d", i+1), Session: "s1", User: "u1", Role: "user", Content: "hello"}); err != nil {
			t.Fatal(err)
		}
	}
	topo := events.DefaultTopology()
	name := topo.Prefix + "_turncount"
	select {
	case <-counter.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("the example stage counted %d turns of %d within 20s", counter.n.Load(), turns)
	}

	// Its consumer is one of the lag filter's (stage.Keep) and drained.
	keep := stage.Keep(topo, all...)
	lags, err := metrics.ConsumerLag(ctx, js, topo, keep)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, l := range lags {
		if l.Consumer == name {
			found = true
		}
	}
	if !found {
		t.Fatalf("consumer %s not among the stages' consumers: %+v", name, lags)
	}
	web := httptest.NewServer(m.Handler())
	t.Cleanup(web.Close)
	brokertest.CheckFor(t, 20*time.Second, 20*time.Millisecond, func() error {
		got := metricstest.Scrape(t, web.URL)
		if hasSeries(got, "agentmem_consumer_pending_messages", "consumer", name) &&
			got.Value("agentmem_consumer_pending_messages", "stream", topo.TurnsStream(), "consumer", name) == 0 &&
			got.Value("agentmem_consumer_ack_pending_messages", "stream", topo.TurnsStream(), "consumer", name) == 0 {
			return nil
		}
		return fmt.Errorf("the lag metrics do not show %s drained", name)
	})
}

// hasSeries reports whether family name has a series with label = value.
func hasSeries(f metricstest.Families, name, label, value string) bool {
	for _, m := range f[name].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == label && l.GetValue() == value {
				return true
			}
		}
	}
	return false
}

// TestStagesAreChecked: a stage without Build, or one listed twice, stops the daemon at start.
func TestStagesAreChecked(t *testing.T) {
	var counter *turnCounter
	example := turnCountStage(&counter, 1)
	for name, list := range map[string][]stage.Stage{
		"twice":    {example, example},
		"no build": {{Name: "nothing"}},
	} {
		t.Run(name, func(t *testing.T) {
			d, err := daemon.Start(context.Background(), daemon.Config{
				Broker: broker.Config{Listen: freePort(t), DataDir: t.TempDir()}, Stages: list}, zerolog.Nop())
			if err == nil {
				_ = d.Stop()
				t.Fatal("the daemon started")
			}
		})
	}
}
