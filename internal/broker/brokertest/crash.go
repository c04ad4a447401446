package brokertest

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
)

// CrashCluster is a Cluster whose nodes can crash as a kill -9 crashes them. A node that shuts
// down (Server.Shutdown) first hands the leadership of its streams and consumers to a follower,
// so the others never go without a leader; a node killed with -9 hands nothing over: its
// followers notice the silence and elect a new leader after Raft's election timeout (4-9 s in
// nats-server). To stage that in one process, every route runs through a loopback relay: Crash
// cuts a node's routes first, so that the shutdown that follows reaches no one.
type CrashCluster struct {
	*Cluster
	mu      sync.Mutex
	relays  map[string]*relay // by the name of the node they lead to
	crashed map[string]bool   // names and server ids of the crashed nodes
}

// relay forwards the route connections made to one node.
type relay struct {
	ln     net.Listener
	target string // the node's real route address, once it listens (under CrashCluster.mu)
	name   string
	links  map[*link]bool
}

// link is one relayed connection; dialer is the server id of the node that made it, once its
// CONNECT was seen.
type link struct {
	in, out net.Conn
	dialer  string
}

func (l *link) close() {
	_ = l.in.Close()
	_ = l.out.Close()
}

// StartCrashCluster starts an n-node cluster (servers n1…nN) whose routes run through relays,
// and waits until it has a meta leader.
func StartCrashCluster(t testing.TB, n int) *CrashCluster {
	t.Helper()
	c := &CrashCluster{Cluster: &Cluster{}, relays: map[string]*relay{}, crashed: map[string]bool{}}
	// The store directories first: cleanups run last registered first, so the directories are
	// removed after the nodes stop (removed while a node ran, a file it wrote meanwhile failed
	// the test with "directory not empty").
	dirs := make([]string, n)
	for i := range dirs {
		dirs[i] = t.TempDir()
	}
	// The relays listen first, so their addresses are the route list; each node's own route port
	// is chosen by the node (-1) and becomes its relay's target once the node listens (a route
	// dialled to a relay before then is closed, and the dialling node tries again).
	var routes []string
	for i := range n {
		name := fmt.Sprintf("n%d", i+1)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		r := &relay{ln: ln, name: name, links: map[*link]bool{}}
		c.relays[name] = r
		routes = append(routes, "nats://"+ln.Addr().String())
		go c.accept(r)
	}
	t.Cleanup(func() {
		c.Stop()
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, r := range c.relays {
			_ = r.ln.Close()
			for l := range r.links {
				l.close()
			}
		}
	})
	for i := range n {
		name := fmt.Sprintf("n%d", i+1)
		var others []string
		for j, r := range routes {
			if j != i {
				others = append(others, r)
			}
		}
		// Every route, the ones a node learns of from the others included, leads to a relay:
		// the node advertises its relay's address as its route address.
		opts := &server.Options{
			ServerName: name, Host: "127.0.0.1", Port: server.RANDOM_PORT,
			JetStream: true, StoreDir: dirs[i], NoSigs: true, NoLog: true,
			Cluster: server.ClusterOpts{Name: "agentmem-crash", Host: "127.0.0.1", Port: server.RANDOM_PORT,
				Advertise: strings.TrimPrefix(routes[i], "nats://")},
			Routes: server.RoutesFromStr(strings.Join(others, ",")),
		}
		s := startNode(t, opts)
		c.mu.Lock()
		c.relays[name].target = s.ClusterAddr().String()
		c.mu.Unlock()
		c.Servers = append(c.Servers, s)
	}
	c.waitLeader(t)
	return c
}

// accept relays the connections made to r until its listener closes.
func (c *CrashCluster) accept(r *relay) {
	for {
		in, err := r.ln.Accept()
		if err != nil {
			return
		}
		c.mu.Lock()
		down, target := c.crashed[r.name], r.target
		c.mu.Unlock()
		if down || target == "" {
			_ = in.Close()
			continue
		}
		out, err := net.Dial("tcp", target)
		if err != nil {
			_ = in.Close()
			continue
		}
		l := &link{in: in, out: out}
		c.mu.Lock()
		r.links[l] = true
		c.mu.Unlock()
		go func() {
			_, _ = io.Copy(in, out)
			l.close()
		}()
		go func() {
			c.forward(l)
			l.close()
			c.mu.Lock()
			delete(r.links, l)
			c.mu.Unlock()
		}()
	}
}

// forward copies what the dialing node sends, reading its server id from its CONNECT
// ({"name":"<server id>"}) on the way; a link from a crashed node is cut there.
func (c *CrashCluster) forward(l *link) {
	var seen []byte
	buf := make([]byte, 32<<10)
	for {
		n, err := l.in.Read(buf)
		if n > 0 {
			if l.dialer == "" && len(seen) < 64<<10 {
				seen = append(seen, buf[:n]...)
				if _, rest, ok := bytes.Cut(seen, []byte(`"name":"`)); ok {
					if id, _, ok := bytes.Cut(rest, []byte(`"`)); ok {
						c.mu.Lock()
						l.dialer = string(id)
						down := c.crashed[l.dialer]
						c.mu.Unlock()
						if down {
							return
						}
					}
				}
			}
			if _, werr := l.out.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// Crash stops node name as a kill -9 would: its routes are cut (no leadership is handed over,
// the others wait for Raft's election timeout), then it shuts down, which closes its clients'
// connections (they reconnect to the other nodes).
func (c *CrashCluster) Crash(name string) {
	s := c.Server(name)
	if s == nil {
		panic("brokertest: no node " + name)
	}
	c.mu.Lock()
	c.crashed[name], c.crashed[s.ID()] = true, true
	for _, r := range c.relays {
		for l := range r.links {
			if r.name == name || l.dialer == s.ID() {
				l.close()
			}
		}
	}
	c.mu.Unlock()
	s.Shutdown()
	s.WaitForShutdown()
}
