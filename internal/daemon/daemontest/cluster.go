package daemontest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/internal/retrieve"
	"github.com/agentmem/agentmem/internal/stage"
	"github.com/agentmem/agentmem/pkg/events"
)

// Cluster is agentmem on a 3-node JetStream cluster in one process: every stream and bucket
// replicated on the three nodes (4 partitions), and ingest and the retriever running on a
// connection of their own, as worker processes would. Its nodes can crash as a kill -9 crashes
// them (brokertest.CrashCluster). Every connection it makes starts on the node that led the
// turns stream when the cluster started, so that a crash of that node moves them all.
type Cluster struct {
	*brokertest.CrashCluster
	Topology events.Topology
	// JS is the test's own JetStream context, on a connection to every node.
	JS    jetstream.JetStream
	first string // the URL connections try first
	logs  *ring  // the workers' last log lines, for Explain
}

// StartCluster starts the cluster, creates the topology and starts ingest (sessions never
// ended for idleness) and the retriever; all of it stops when the test ends.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	c := &Cluster{CrashCluster: brokertest.StartCrashCluster(t, 3), Topology: events.DefaultTopology(), logs: &ring{max: 300}}
	c.Topology.Partitions, c.Topology.Replicas = 4, 3
	c.JS = c.JetStream(t, c.Connect(t, "test"))
	setup, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := c.Topology.Ensure(setup, c.JS); err != nil {
		t.Fatalf("creating the topology: %v", err)
	}
	c.first = c.Server(c.TurnsLeader(t)).ClientURL()
	nc := c.Connect(t, "workers")
	sh := &stage.Shared{NC: nc, JS: c.JetStream(t, nc), Topology: c.Topology, Log: zerolog.New(c.logs).Level(zerolog.DebugLevel).With().Timestamp().Logger()}
	sh.Stages = []stage.Stage{ingest.Stage(ingest.Config{IdleTimeout: -1}), retrieve.Stage(retrieve.Config{})}
	var runners []stage.Runner
	for _, st := range sh.Stages {
		r, err := st.Build(setup, sh)
		if err != nil {
			t.Fatalf("building %s: %v", st.Name, err)
		}
		runners = append(runners, r)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, len(runners))
	for _, r := range runners {
		if s, ok := r.(stage.Starter); ok {
			if err := s.Start(ctx); err != nil {
				stop()
				t.Fatalf("starting a stage: %v", err)
			}
		}
		go func() { done <- r.Run(ctx) }()
	}
	// Registered after the connections' cleanups: it runs before they close.
	t.Cleanup(func() {
		stop()
		for range runners {
			if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("a stage stopped with %v", err)
			}
		}
	})
	return c
}

// ClientURLs is every node's client URL, comma-separated, the first leader of the turns stream
// first (once there is one): connect with them in this order (nats.DontRandomize).
func (c *Cluster) ClientURLs() string {
	if c.first == "" {
		return c.URLs()
	}
	return c.first + "," + c.URLs()
}

// Connect opens a connection to every node (ClientURLs, in order), reconnecting for ever, closed
// when the test ends.
func (c *Cluster) Connect(t testing.TB, name string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(c.ClientURLs(), nats.Name(name), nats.DontRandomize(), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// JetStream returns a JetStream context on nc.
func (c *Cluster) JetStream(t testing.TB, nc *nats.Conn) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// TurnsLeader is the name of the node leading the turns stream, as the running nodes say
// themselves (one of them, and only one, leads it).
func (c *Cluster) TurnsLeader(t testing.TB) string {
	t.Helper()
	var leader string
	brokertest.CheckFor(t, 60*time.Second, 50*time.Millisecond, func() error {
		var leaders []string
		for _, s := range c.Servers {
			if s.Running() && s.JetStreamIsStreamLeader(server.DEFAULT_GLOBAL_ACCOUNT, c.Topology.TurnsStream()) {
				leaders = append(leaders, s.Name())
			}
		}
		if len(leaders) != 1 {
			return fmt.Errorf("the turns stream is led by %v", leaders)
		}
		leader = leaders[0]
		return nil
	})
	return leader
}

// Stored counts the messages of the turns stream by Nats-Msg-Id. A read that fails (the
// stream's leader just changed) is made again from the start.
func (c *Cluster) Stored(t testing.TB) map[string]int {
	t.Helper()
	var out map[string]int
	brokertest.CheckFor(t, time.Minute, 500*time.Millisecond, func() (err error) {
		out, err = c.stored()
		return err
	})
	return out
}

// stored reads the turns stream message by message (no consumer: an ephemeral one may be placed
// on the crashed node).
func (c *Cluster) stored() (map[string]int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := c.JS.Stream(ctx, c.Topology.TurnsStream())
	if err != nil {
		return nil, err
	}
	info, err := st.Info(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if err != nil {
			return nil, fmt.Errorf("reading message %d of the turns stream: %w", seq, err)
		}
		out[m.Header.Get(events.HeaderMsgID)]++
	}
	return out, nil
}

// CrashTurnsLeaderUnder crashes the node leading the turns stream while a test's clients work:
// it waits until acked counts 200, crashes that node (Crash), then waits up to after for acked to
// count 400 more. The first error the clients send on errs fails the test at once. It returns the
// node crashed.
func (c *Cluster) CrashTurnsLeaderUnder(t testing.TB, acked *atomic.Int64, errs <-chan error, after time.Duration) string {
	t.Helper()
	running := func(want int64) func() error {
		return func() error {
			select {
			case err := <-errs:
				t.Fatal(err)
			default:
			}
			if n := acked.Load(); n < want {
				return fmt.Errorf("%d of %d acknowledged", n, want)
			}
			return nil
		}
	}
	brokertest.CheckFor(t, 60*time.Second, 10*time.Millisecond, running(200))
	leader := c.TurnsLeader(t)
	before := acked.Load()
	c.Crash(leader)
	t.Logf("crashed %s, the turns stream's leader, after %d acknowledged", leader, before)
	brokertest.CheckFor(t, after, 10*time.Millisecond, running(before+400))
	return leader
}

// Explain logs, for a test that found a turn not applied, the state of the ingest consumers of
// the turns stream (as their leaders report it) and the workers' last log lines.
func (c *Cluster) Explain(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, name := range c.Servers {
		t.Logf("node %s running %v", name.Name(), name.Running())
	}
	for p := range c.Topology.Partitions {
		for _, cc := range []struct{ stream, name string }{
			{c.Topology.TurnsStream(), ingest.TurnsConsumerName(c.Topology, p)},
			{c.Topology.SummaryStream(), ingest.SummaryConsumerName(c.Topology, p)},
		} {
			cons, err := c.JS.Consumer(ctx, cc.stream, cc.name)
			if err != nil {
				t.Logf("consumer %s: %v", cc.name, err)
				continue
			}
			i := cons.CachedInfo()
			leader := ""
			if i.Cluster != nil {
				leader = i.Cluster.Leader
			}
			t.Logf("consumer %s: leader %s, delivered %d/%d, ack floor %d/%d, pending %d, ack pending %d, redelivered %d, waiting %d, groups %+v",
				cc.name, leader, i.Delivered.Consumer, i.Delivered.Stream, i.AckFloor.Consumer, i.AckFloor.Stream,
				i.NumPending, i.NumAckPending, i.NumRedelivered, i.NumWaiting, i.PriorityGroups)
		}
	}
	for _, l := range c.logs.lines() {
		t.Log(l)
	}
}

// ring keeps the last max lines written to it.
type ring struct {
	mu  sync.Mutex
	max int
	buf []string
}

func (r *ring) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf = append(r.buf, strings.TrimRight(string(p), "\n"))
	if len(r.buf) > 2*r.max {
		r.buf = append(r.buf[:0], r.buf[len(r.buf)-r.max:]...)
	}
	return len(p), nil
}

func (r *ring) lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.buf[max(0, len(r.buf)-r.max):])
}
