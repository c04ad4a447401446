package brokertest

import (
	"fmt"
	"net"
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

func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ls []net.Listener
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		_ = l.Close()
	}
	return ports
}

// StartCluster starts an n-node cluster (servers n1…nN) and waits until it has a meta leader.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	// Client ports are chosen by the servers (-1); route ports must be known up front for the
	// route list, so they are picked free just before.
	routePorts := freePorts(t, n)
	var routes []string
	for _, p := range routePorts {
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", p))
	}
	c := &Cluster{}
	for i := range n {
		opts := &server.Options{
			ServerName: fmt.Sprintf("n%d", i+1), Host: "127.0.0.1", Port: server.RANDOM_PORT,
			JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true,
			Cluster: server.ClusterOpts{Name: "agentmem-test", Host: "127.0.0.1", Port: routePorts[i]},
			Routes:  server.RoutesFromStr(strings.Join(routes, ",")),
		}
		s, err := server.NewServer(opts)
		if err != nil {
			t.Fatal(err)
		}
		go s.Start()
		c.Servers = append(c.Servers, s)
	}
	t.Cleanup(c.Stop)
	for _, s := range c.Servers {
		// Generous: several clusters start at once when the whole suite runs on 2 cores.
		if !s.ReadyForConnections(60 * time.Second) {
			t.Fatalf("%s not ready", s.Name())
		}
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
	return c
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
