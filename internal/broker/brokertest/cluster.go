package brokertest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Cluster is an n-node JetStream cluster in one process, routed over loopback.
type Cluster struct {
	Servers []*server.Server
	urls    []string
}

// StartCluster starts an n-node cluster (servers n1…nN) and waits until it has a meta leader.
// Its routes run through loopback relays (StartCrashCluster), whose listeners are open before
// any node starts: every port is chosen by the system and held from then on, so no other
// process can take one between its choice and its use, and every node knows every route up
// front (nats-server sizes a new meta group by the routes it is given).
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	return StartCrashCluster(t, n).Cluster
}

// startNode starts a server and waits until it listens.
func startNode(t testing.TB, opts *server.Options) *server.Server {
	t.Helper()
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	// Generous: several clusters start at once when the whole suite runs on 2 cores.
	if !s.ReadyForConnections(60 * time.Second) {
		s.Shutdown() // not in the cluster's list yet: its cleanup would not stop it
		t.Fatalf("%s not ready", s.Name())
	}
	return s
}

// waitLeader records the nodes' client URLs and waits until the cluster has a meta leader.
func (c *Cluster) waitLeader(t testing.TB) {
	t.Helper()
	for _, s := range c.Servers {
		c.urls = append(c.urls, s.ClientURL())
	}
	CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		for _, s := range c.Servers {
			if s.JetStreamIsLeader() {
				return nil
			}
		}
		return fmt.Errorf("no JetStream meta leader yet")
	})
}

// URLs is every node's client URL, comma-separated, as nats.Connect takes them.
func (c *Cluster) URLs() string { return strings.Join(c.urls, ",") }

// Server returns the node with the given name.
func (c *Cluster) Server(name string) *server.Server {
	for _, s := range c.Servers {
		if s.Name() == name {
			return s
		}
	}
	return nil
}

// Stop shuts every node down.
func (c *Cluster) Stop() {
	for _, s := range c.Servers {
		if s.Running() {
			s.Shutdown()
			s.WaitForShutdown()
		}
	}
}
