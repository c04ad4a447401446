//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

// build compiles nats-server (at go.mod's version) and the worker commands into dir.
func build(t *testing.T, dir string) {
	t.Helper()
	for _, pkg := range []string{"github.com/nats-io/nats-server/v2", "github.com/agentmem/agentmem/cmd/ingest",
		"github.com/agentmem/agentmem/cmd/retriever", "github.com/agentmem/agentmem/cmd/compressor", "github.com/agentmem/agentmem/cmd/extractor"} {
		name := filepath.Base(pkg)
		if name == "v2" {
			name = "nats-server"
		}
		out, err := exec.Command("go", "build", "-o", filepath.Join(dir, name), pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("building %s: %v\n%s", pkg, err, out)
		}
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// proc is a process the test starts, kills and restarts.
type proc struct {
	name string
	args []string
	log  *os.File
	cmd  *exec.Cmd
}

func (p *proc) start(t *testing.T) {
	t.Helper()
	p.cmd = exec.Command(p.args[0], p.args[1:]...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", p.name, err)
	}
}

func (p *proc) kill() {
	if p.cmd != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		_, _ = p.cmd.Process.Wait()
	}
}

type cluster struct {
	t      *testing.T
	dir    string
	nodes  map[string]*proc
	mon    map[string]int
	urls   []string
	procs  []*proc
	killed string
}

func (c *cluster) add(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	f, err := os.Create(filepath.Join(c.dir, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{name: name, args: args, log: f}
	p.start(t)
	c.procs = append(c.procs, p)
	t.Cleanup(func() { p.kill(); f.Close() })
	return p
}

func startCluster(t *testing.T, dir string) *cluster {
	t.Helper()
	c := &cluster{t: t, dir: dir, nodes: map[string]*proc{}, mon: map[string]int{}}
	names := []string{"n1", "n2", "n3"}
	client, route := map[string]int{}, map[string]int{}
	for _, n := range names {
		client[n], route[n], c.mon[n] = freePort(t), freePort(t), freePort(t)
		c.urls = append(c.urls, fmt.Sprintf("nats://127.0.0.1:%d", client[n]))
	}
	for _, n := range names {
		var routes []string
		for _, o := range names {
			if o != n {
				routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", route[o]))
			}
		}
		c.nodes[n] = c.add(t, n, filepath.Join(dir, "nats-server"), "-n", n, "-a", "127.0.0.1", "-p", fmt.Sprint(client[n]),
			"-m", fmt.Sprint(c.mon[n]), "-js", "-sd", filepath.Join(dir, n), "--cluster_name", "agentmem",
			"--cluster", fmt.Sprintf("nats://127.0.0.1:%d", route[n]), "--routes", strings.Join(routes, ","))
	}
	for _, n := range names {
		c.waitNode(n)
	}
	return c
}

// waitNode waits until node n answers its JetStream health check.
func (c *cluster) waitNode(n string) {
	c.t.Helper()
	brokertest.CheckFor(c.t, 60*time.Second, 100*time.Millisecond, func() error {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz?js-enabled-only=true", c.mon[n]))
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("%s: healthz %d", n, resp.StatusCode)
		}
		return nil
	})
}

// dumpLogs prints the end of every process's log when the test failed.
func (c *cluster) dumpLogs() {
	if !c.t.Failed() {
		return
	}
	for _, p := range c.procs {
		data, _ := os.ReadFile(p.log.Name())
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		c.t.Logf("--- %s (last %d lines)\n%s", p.name, min(40, len(lines)), strings.Join(lines[max(0, len(lines)-40):], "\n"))
	}
}

func TestFaults(t *testing.T) {
	dir := t.TempDir()
	build(t, dir)
	c := startCluster(t, dir)
	t.Cleanup(c.dumpLogs)
	urls := strings.Join(c.urls, ",")
	common := []string{"--nats", urls, "--replicas", "3", "--log-level", "warn", "--log-format", "json"}
	var ingests []*proc
	for i := range 2 {
		// Ingest logs at info: its partition hand-overs are what a failure here is about.
		ingests = append(ingests, c.add(t, fmt.Sprintf("ingest-%d", i), append([]string{filepath.Join(dir, "ingest"), "--idle-timeout=-1s", "--member-ttl", "3s"},
			append(common[:len(common):len(common)], "--log-level", "info")...)...))
		c.add(t, fmt.Sprintf("retriever-%d", i), append([]string{filepath.Join(dir, "retriever")}, common...)...)
		c.add(t, fmt.Sprintf("compressor-%d", i), append([]string{filepath.Join(dir, "compressor")}, common...)...)
		c.add(t, fmt.Sprintf("extractor-%d", i), append([]string{filepath.Join(dir, "extractor")}, common...)...)
	}
	nc, err := nats.Connect(urls, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	topo := events.DefaultTopology()
	ctx := context.Background()
	// The workers provision the topology themselves, all at once.
	brokertest.CheckFor(t, 90*time.Second, 200*time.Millisecond, func() error {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err := js.Stream(cctx, topo.TurnsStream())
		return err
	})
	agent, err := client.New(nc, client.Options{Tenant: "chaos", Timeout: 3 * time.Second, PublishRetry: 60 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	const turns, sessions = 600, 10
	last := map[string]string{}
	var slowest time.Duration
	for i := range turns {
		switch i {
		case turns / 3:
			st, err := js.Stream(ctx, topo.TurnsStream())
			if err != nil {
				t.Fatal(err)
			}
			leader := st.CachedInfo().Cluster.Leader
			c.nodes[leader].kill()
			t.Logf("kill -9 %s, the turns stream's leader, after %d turns", leader, i)
			c.killed = leader
		case turns / 2:
			ingests[0].kill()
			t.Logf("kill -9 ingest-0 after %d turns", i)
		case 2 * turns / 3:
			c.nodes[c.killed].start(t)
			t.Logf("restarted %s after %d turns", c.killed, i)
		}
		sess := fmt.Sprintf("s%d", i%sessions)
		id := fmt.Sprintf("t%05d", i)
		start := time.Now()
		if _, err := agent.Publish(ctx, client.Turn{ID: id, Session: sess, User: "u-" + sess, Role: "user", Content: fmt.Sprintf("turn %d of the fault run", i)}); err != nil {
			t.Fatalf("turn %d: the agent saw an error: %v", i, err)
		}
		slowest = max(slowest, time.Since(start))
		last[sess] = id
	}
	t.Logf("slowest publish: %s", slowest)
	// Every turn is applied (read-your-writes on its session's last turn) ...
	for sess, id := range last {
		brokertest.CheckFor(t, 120*time.Second, 500*time.Millisecond, func() error {
			_, err := agent.Retrieve(ctx, events.RetrieveRequest{Query: "fault run", Session: sess, After: id, WaitMS: 2000})
			return err
		})
	}
	// ... and stored exactly once.
	st, err := js.Stream(ctx, topo.TurnsStream())
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx, jetstream.WithSubjectFilter("*.memory.turns.chaos.>"))
	if err != nil {
		t.Fatal(err)
	}
	var stored uint64
	for _, n := range info.State.Subjects {
		stored += n
	}
	if stored != turns {
		t.Fatalf("the turns stream holds %d turns of the run, want %d (each once)", stored, turns)
	}
}
