//go:build chaos

package chaos

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/compress"
	"github.com/agentmem/agentmem/internal/llm/llmtest"
	"github.com/agentmem/agentmem/internal/session"
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

// proc is a process the test starts, kills, freezes and restarts.
type proc struct {
	name string
	args []string
	log  *os.File
	cmd  *exec.Cmd
	done chan struct{} // closed when the current process exited
}

func (p *proc) start(t *testing.T) {
	t.Helper()
	p.cmd = exec.Command(p.args[0], p.args[1:]...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", p.name, err)
	}
	done, cmd := make(chan struct{}), p.cmd
	p.done = done
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
}

func (p *proc) kill() {
	if p.cmd != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Signal(syscall.SIGCONT) // a frozen process dies too
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.done
	}
}

func (p *proc) signal(sig syscall.Signal) {
	if p.cmd != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Signal(sig)
	}
}

// exited reports whether the current process has exited.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
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

// fakeLLM is an OpenAI-compatible chat endpoint that answers every call after a delay. It knows
// which compressor (by API key) has which call in flight, and how often each distinct request
// was answered, to count the calls a compression repeated.
type fakeLLM struct {
	mu       sync.Mutex
	inflight map[string]map[string]int // api key → request hash → calls in flight
	answered map[string]int            // request hash → answers written
	lastFrom map[string]time.Time      // "<api key> <request hash>" → when it was last answered
}

func newFakeLLM(t *testing.T, delay time.Duration) (*fakeLLM, *llmtest.Server) {
	f := &fakeLLM{inflight: map[string]map[string]int{}, answered: map[string]int{}, lastFrom: map[string]time.Time{}}
	srv := llmtest.NewServer(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		body, _ := io.ReadAll(r.Body)
		req, err := llmtest.DecodeChat(body)
		if err != nil {
			llmtest.WriteError(w, 400, "invalid_request_error", "", err.Error())
			return
		}
		h := sha256.New()
		for _, m := range req.Messages {
			fmt.Fprintf(h, "%s\x00%s\x00", m.Role, m.Content)
		}
		hash := hex.EncodeToString(h.Sum(nil))
		key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		f.mu.Lock()
		if f.inflight[key] == nil {
			f.inflight[key] = map[string]int{}
		}
		f.inflight[key][hash]++
		f.mu.Unlock()
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
		}
		f.mu.Lock()
		f.inflight[key][hash]--
		if r.Context().Err() == nil {
			f.answered[hash]++
			f.lastFrom[key+" "+hash] = time.Now()
		}
		f.mu.Unlock()
		// The answer names its request, so two reduce calls over different partials differ.
		llmtest.WriteCompletion(w, "chaos-model", "Summary "+hash[:8]+": the user discussed deployments, rollbacks, on-call rotas and the billing budget.", 200, 20)
	})
	return f, srv
}

// busy lists the requests key has in flight, and those answered to it within the last window
// (an answer the process may have received but not yet remembered when it died).
func (f *fakeLLM) busy(key string, window time.Duration) map[string]bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]bool{}
	for h, n := range f.inflight[key] {
		if n > 0 {
			out[h] = true
		}
	}
	for k, at := range f.lastFrom {
		if h, ok := strings.CutPrefix(k, key+" "); ok && time.Since(at) < window {
			out[h] = true
		}
	}
	return out
}

// scrape reads the value of an unlabelled metric from a Prometheus text endpoint.
func scrape(addr, metric string) (float64, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, metric+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, fmt.Errorf("%s: no %s", addr, metric)
}

// TestFaults runs the issue-13 fault run on a fresh 3-node cluster with two processes of each
// worker: kill -9 of the node leading the turns stream, of an ingest process and of a retriever
// (each restarted as a restart policy would), an ingest process frozen (SIGSTOP) for 20 s, and
// kill -9 of a compressor with LLM calls in flight, while an agent publishes turns and asks
// questions throughout.
func TestFaults(t *testing.T) {
	dir := t.TempDir()
	build(t, dir)
	c := startCluster(t, dir)
	t.Cleanup(c.dumpLogs)
	llm, srv := newFakeLLM(t, 150*time.Millisecond)
	urls := strings.Join(c.urls, ",")
	common := []string{"--nats", urls, "--replicas", "3", "--log-level", "warn", "--log-format", "json"}
	health := map[*proc]string{}
	worker := func(name string, args ...string) *proc {
		addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		p := c.add(t, name, append(append([]string{filepath.Join(dir, strings.Split(name, "-")[0])}, args...), "--health-listen", addr)...)
		health[p] = addr
		return p
	}
	var ingests, retrievers, compressors []*proc
	for i := range 2 {
		// Ingest logs at info: its partition hand-overs are what a failure here is about. A small
		// context window makes pressure, so the compressors call the LLM throughout.
		ingests = append(ingests, worker(fmt.Sprintf("ingest-%d", i), append([]string{"--idle-timeout=-1s", "--member-ttl", "3s", "--context-window", "4100"},
			append(common[:len(common):len(common)], "--log-level", "info")...)...))
		retrievers = append(retrievers, worker(fmt.Sprintf("retriever-%d", i), common...))
		compressors = append(compressors, worker(fmt.Sprintf("compressor-%d", i), append([]string{"--llm-base-url", srv.URL,
			"--llm-model", "chaos-model", "--llm-api-key", fmt.Sprintf("k%d", i)}, common...)...))
		worker(fmt.Sprintf("extractor-%d", i), common...)
	}
	// Set-up: every worker provisions the topology it needs, all at once, and becomes ready
	// without a restart.
	setup := time.Now()
	for p, addr := range health {
		brokertest.CheckFor(t, 90*time.Second, 200*time.Millisecond, func() error {
			if p.exited() {
				t.Fatalf("%s exited during set-up", p.name)
			}
			resp, err := http.Get("http://" + addr + "/readyz")
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				return fmt.Errorf("%s: readyz %d", p.name, resp.StatusCode)
			}
			return nil
		})
	}
	t.Logf("all %d workers ready %s after start, none restarted", len(health), time.Since(setup).Round(time.Millisecond))
	// The two ingest processes split the 16 partitions evenly.
	split := func() error {
		var owned []float64
		for _, p := range ingests {
			n, err := scrape(health[p], "agentmem_ingest_partitions_owned")
			if err != nil {
				return err
			}
			owned = append(owned, n)
		}
		if owned[0]+owned[1] != 16 || owned[0] < 7 || owned[1] < 7 {
			return fmt.Errorf("partitions owned %v, want 8 ± 1 each", owned)
		}
		return nil
	}
	brokertest.CheckFor(t, 30*time.Second, 200*time.Millisecond, split)

	nc, err := nats.Connect(urls, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	topo := events.DefaultTopology()
	ctx := context.Background()
	// The agent runs with the client's defaults: they ride through a leader change.
	agent, err := client.New(nc, client.Options{Tenant: "chaos"})
	if err != nil {
		t.Fatal(err)
	}
	// A plain nats.go publisher with the settings docs/protocol.md gives (publish,
	// plain_test.go) publishes turns of tenant plain throughout, on its own connection.
	pnc, err := nats.Connect(urls, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer pnc.Close()
	pjs, _ := jetstream.New(pnc)
	const plainSessions = 5
	plainStop, plainDone := make(chan struct{}), make(chan struct{})
	plainPublished := map[string][]string{}
	var plainFailed []error
	var plainSlowest time.Duration
	go func() {
		defer close(plainDone)
		tick := time.NewTicker(20 * time.Millisecond) // a plain agent's pace, not a wait for a condition
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-plainStop:
				return
			case <-tick.C:
			}
			sess := fmt.Sprintf("p%d", i%plainSessions)
			msg, id, err := plainTurn(sess, i)
			start := time.Now()
			if err == nil {
				_, err = publish(ctx, pjs, msg)
			}
			if err != nil {
				plainFailed = append(plainFailed, fmt.Errorf("plain turn %s: %w", id, err))
				continue
			}
			plainSlowest = max(plainSlowest, time.Since(start))
			plainPublished[sess] = append(plainPublished[sess], id)
		}
	}()
	// 50 sessions at a turn every ~10 ms: each session gets a turn about every half second and a
	// pressure event about every 8 s, an agent's pace rather than a flood.
	const minTurns, sessions = 1200, 50
	published := map[string][]string{}
	var slowest time.Duration
	var retrieves, retrieveErrors int
	var frozenAt, thawedAt time.Time
	var thawed atomic.Bool
	lost := map[string]bool{} // LLM requests the killed compressor had in flight
	killedComp, killedAt := -1, 0
	for i := 0; ; i++ {
		switch i {
		case 200:
			st, err := js.Stream(ctx, topo.TurnsStream())
			if err != nil {
				t.Fatal(err)
			}
			leader := st.CachedInfo().Cluster.Leader
			c.nodes[leader].kill()
			t.Logf("kill -9 %s, the turns stream's leader, after %d turns", leader, i)
			c.killed = leader
		case 350:
			ingests[0].kill()
			t.Logf("kill -9 ingest-0 after %d turns", i)
		case 450:
			ingests[0].start(t)
			t.Logf("restarted ingest-0 after %d turns", i)
		case 500:
			c.nodes[c.killed].start(t)
			t.Logf("restarted %s after %d turns", c.killed, i)
		case 550:
			retrievers[0].kill()
			t.Logf("kill -9 retriever-0 after %d turns", i)
		case 650:
			retrievers[0].start(t)
			t.Logf("restarted retriever-0 after %d turns", i)
		case 700:
			ingests[1].signal(syscall.SIGSTOP)
			frozenAt = time.Now()
			t.Logf("SIGSTOP ingest-1 after %d turns", i)
			time.AfterFunc(20*time.Second, func() {
				ingests[1].signal(syscall.SIGCONT)
				thawed.Store(true)
			})
		}
		if killedComp < 0 && i >= 800 {
			for n := range compressors {
				key := fmt.Sprintf("k%d", n)
				if busy := llm.busy(key, 0); len(busy) > 0 {
					// What the compressor may have asked without remembering the answer: the
					// calls in flight, and answers of the last moment.
					lost = llm.busy(key, 200*time.Millisecond)
					compressors[n].kill()
					killedComp, killedAt = n, i
					t.Logf("kill -9 compressor-%d with %d LLM calls in flight after %d turns", n, len(busy), i)
					break
				}
			}
		}
		if killedComp >= 0 && i == killedAt+100 {
			compressors[killedComp].start(t)
			t.Logf("restarted compressor-%d after %d turns", killedComp, i)
		}
		if thawed.Load() && thawedAt.IsZero() {
			thawedAt = time.Now()
			t.Logf("SIGCONT ingest-1 after %d turns (frozen %s)", i, thawedAt.Sub(frozenAt).Round(time.Millisecond))
		}
		if i >= minTurns && !thawedAt.IsZero() && time.Since(thawedAt) > 10*time.Second && killedComp >= 0 && i > killedAt+100 {
			break
		}
		sess := fmt.Sprintf("s%d", i%sessions)
		id := fmt.Sprintf("t%05d", i)
		start := time.Now()
		content := fmt.Sprintf("turn %d of the fault run: we went through the deployment of the billing service, the rollback plan, "+
			"who is on call next week and how much of the quarterly budget is left for the migration", i)
		if _, err := agent.Publish(ctx, client.Turn{ID: id, Session: sess, User: "u-" + sess, Role: []string{"user", "assistant"}[i/sessions%2], Content: content}); err != nil {
			t.Fatalf("turn %d: the agent saw an error: %v", i, err)
		}
		slowest = max(slowest, time.Since(start))
		published[sess] = append(published[sess], id)
		if i%25 == 0 {
			retrieves++
			if _, err := agent.Retrieve(ctx, events.RetrieveRequest{Query: "rollback plan", Session: sess}); err != nil {
				retrieveErrors++
				t.Logf("turn %d: retrieve: %v", i, err)
			}
		}
		time.Sleep(10 * time.Millisecond) // an agent's pace, not a wait for a condition
	}
	close(plainStop)
	<-plainDone
	t.Logf("slowest publish: %s; %d of %d retrieves failed", slowest, retrieveErrors, retrieves)
	if retrieveErrors > 0 {
		t.Errorf("%d of %d retrieves failed", retrieveErrors, retrieves)
	}
	plainTotal := 0
	for _, ids := range plainPublished {
		plainTotal += len(ids)
	}
	t.Logf("plain nats.go publisher (documented settings): %d turns acknowledged, %d failed, slowest %s",
		plainTotal, len(plainFailed), plainSlowest)
	for _, err := range plainFailed {
		t.Error(err)
	}
	// Every turn is applied (read-your-writes on its session's last turn) ...
	total := 0
	for sess, ids := range published {
		total += len(ids)
		brokertest.CheckFor(t, 120*time.Second, 500*time.Millisecond, func() error {
			_, err := agent.Retrieve(ctx, events.RetrieveRequest{Query: "fault run", Session: sess, After: ids[len(ids)-1], WaitMS: 2000})
			return err
		})
	}
	// ... applied once: each session's header counts exactly its turns ...
	store, err := session.NewStore(ctx, js, topo)
	if err != nil {
		t.Fatal(err)
	}
	for sess, ids := range published {
		h, _, err := store.Header(ctx, session.Key{Tenant: "chaos", Session: sess})
		if err != nil {
			t.Fatal(err)
		}
		if h.Turns != len(ids) {
			t.Errorf("session %s: %d turns applied, %d published", sess, h.Turns, len(ids))
		}
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
	if stored != uint64(total) {
		t.Fatalf("the turns stream holds %d turns of the run, want %d (each once)", stored, total)
	}
	t.Logf("%d turns published, applied and stored once", total)
	// The plain publisher's turns too: each stored once (no duplicate, none missing) and applied.
	info, err = st.Info(ctx, jetstream.WithSubjectFilter("*.memory.turns.plain.>"))
	if err != nil {
		t.Fatal(err)
	}
	stored = 0
	for _, n := range info.State.Subjects {
		stored += n
	}
	if stored != uint64(plainTotal) {
		t.Fatalf("the turns stream holds %d turns of the plain publisher, want %d (each once)", stored, plainTotal)
	}
	for sess, ids := range plainPublished {
		brokertest.CheckFor(t, 120*time.Second, 500*time.Millisecond, func() error {
			h, _, err := store.Header(ctx, session.Key{Tenant: "plain", Session: sess})
			if err != nil {
				return err
			}
			if h.Turns != len(ids) {
				return fmt.Errorf("plain session %s: %d turns applied, %d published", sess, h.Turns, len(ids))
			}
			return nil
		})
	}
	t.Logf("plain publisher: %d turns stored once and applied, 0 failed", plainTotal)
	// The compressions finish, and none asked the model again what an earlier attempt got an
	// answer to: each distinct request is answered once, twice only when the killed compressor
	// died with it in flight.
	cons, err := js.Consumer(ctx, topo.PressureStream(), compress.ConsumerName(topo))
	if err != nil {
		t.Fatal(err)
	}
	brokertest.CheckFor(t, 120*time.Second, 500*time.Millisecond, func() error {
		ci, err := cons.Info(ctx)
		if err != nil {
			return err
		}
		if ci.NumPending > 0 || ci.NumAckPending > 0 {
			return fmt.Errorf("compressor: %d pending, %d unacknowledged", ci.NumPending, ci.NumAckPending)
		}
		return nil
	})
	llm.mu.Lock()
	calls, repeats := 0, 0
	for h, n := range llm.answered {
		calls += n
		allowed := 1
		if lost[h] {
			allowed = 2
		}
		if n > allowed {
			repeats += n - allowed
		}
	}
	llm.mu.Unlock()
	t.Logf("LLM: %d answers for %d distinct requests, %d lost with the killed compressor, %d repeated", calls, len(llm.answered), len(lost), repeats)
	if repeats > 0 {
		t.Errorf("%d LLM calls repeated work an earlier attempt had an answer for", repeats)
	}
	if len(llm.answered) == 0 {
		t.Error("no LLM call was made: the run made no pressure")
	}
	// After the hand-backs, the partitions are split evenly again and the gauges count each open
	// session once, on the member that owns it.
	brokertest.CheckFor(t, 30*time.Second, 200*time.Millisecond, split)
	brokertest.CheckFor(t, 30*time.Second, 200*time.Millisecond, func() error {
		var open float64
		for _, p := range ingests {
			n, err := scrape(health[p], "agentmem_sessions_open")
			if err != nil {
				return err
			}
			open += n
		}
		if open != sessions+plainSessions {
			return fmt.Errorf("sessions_open over both ingest processes: %v, want %d (the agent's and the plain publisher's)", open, sessions+plainSessions)
		}
		return nil
	})
}
