package powercut

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/daemon"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/internal/lazyfs"
	"github.com/agentmem/agentmem/internal/longterm"
	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
	"github.com/agentmem/agentmem/pkg/memory"
)

const (
	tenant = "pc"
	// contextWindow makes a conversation budget of 1,000 tokens (the default reserves 3,300),
	// so that sessions are compressed, and facts extracted from what is compressed away, while
	// the run goes on.
	contextWindow = 4300
	// catchUp bounds the wait, after the last cut, for memoryd to apply, compress and extract
	// everything: a message in flight at a kill is redelivered after its consumer's AckWait.
	catchUp = 3 * time.Minute
)

var (
	buildOnce sync.Once
	binDir    string
	binPath   string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// memorydBinary builds memoryd once for the test binary.
func memorydBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if binDir, buildErr = os.MkdirTemp("", "powercut-bin-"); buildErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "memoryd")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/agentmem/agentmem/cmd/memoryd").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build memoryd: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// needFUSE skips the test, saying why, where a lazyfs cannot be mounted.
func needFUSE(t *testing.T) {
	t.Helper()
	if err := lazyfs.Available(); err != nil {
		t.Skipf("a staged power cut needs a FUSE mount: %v", err)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// config is one power-cut run.
type config struct {
	durability string         // memoryd's --durability
	entries    lazyfs.Entries // when directory entries are durable
	cuts       int
	seed       uint64
	killOnly   bool // kill -9 memoryd without cutting the power
	// publishFor, with no cuts, is how long the clients publish to a memoryd that is never
	// stopped: the baseline.
	publishFor time.Duration
	// minAcked is how many turns the clients have had acknowledged in a cycle before its cut
	// may come (default 20).
	minAcked int
	// syncedStart makes everything durable once memoryd first started (lazyfs.FS.Sync), as if
	// the box had run a while: the cuts then find the streams' files and directories on disk.
	syncedStart bool
	// measureOnly: a catch-up that stalls is reported (outcome.stalled), not fatal.
	measureOnly bool
}

// outcome is what a run measured.
type outcome struct {
	acked      int // turns acknowledged to the clients
	lost       int // acknowledged turns missing from the turns stream after a cut
	duplicated int // turns stored more than once in the turns stream
	cutsLosing int // cuts after which at least one acknowledged turn was missing
	// After the last cut, once memoryd caught up:
	shortMissing   int // acknowledged turns (still in the stream) in no entry of short-term memory
	shortDuplicate int // turns in more than one entry, or twice in one session
	shortPhantom   int // turns in short-term memory that the turns stream does not hold
	unretrieved    int // sampled acknowledged turns that retrieve did not return exactly once
	sampled        int
	// A replay of the turns stream into separate buckets, compared with the live memory:
	replayDiffers int // sessions and users whose short-term entries, summaries or live facts differ
	replayDetail  int // sessions and users that differ only in counters, or in the history of facts (superseded versions, ids, valid_from, provenance)
	replayErr     error
	facts         int
	summaries     int
	syncs         map[string]lazyfs.Syncs
	startup       []time.Duration
	stalled       error // memoryd did not catch up after the last cut (measureOnly)
}

// key identifies a turn.
type key struct{ session, id string }

// turn is one turn a client publishes.
type turn struct {
	session, user, id, role, content, marker string
	at                                       time.Time
}

// ledger records what the clients sent and what was acknowledged.
type ledger struct {
	mu      sync.Mutex
	acked   map[key]turn
	unknown map[string][]turn // per client: sent, neither acknowledged nor refused
	cycle   int               // acknowledged in the current cycle
	last    map[string]turn   // per client: the last turn acknowledged in the current cycle
	samples []turn            // the last turns acknowledged before each cut
}

func (l *ledger) ack(client string, ts []turn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, t := range ts {
		l.acked[key{t.session, t.id}] = t
	}
	l.cycle += len(ts)
	l.last[client] = ts[len(ts)-1]
}

func (l *ledger) ackedN() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cycle
}

// publisher sends turns and returns nil when every one was acknowledged.
type publisher interface {
	send(ctx context.Context, ts []turn) error
	close()
}

// facts are user turns the offline extractor reads as facts, changes included.
var facts = []string{
	"I live in Paris.",
	"My favourite programming language is Go.",
	"I prefer tea over coffee.",
	"I work at Acme on the billing service.",
	"I live in Lyon.",
	"My favourite programming language is Rust.",
}

// generator makes a client's turns: four sessions (so that no session gets more than a quarter
// of a client's turns), each of its own user. (A user whose facts change in several sessions
// at once gets a history of changes that depends on the order the sessions are extracted in,
// which a replay, reading the stream in order, does not reproduce: seen with three users
// shared by every session, with no fault.)
type generator struct {
	client string
	index  int
	n      int
	base   time.Time
}

// letters spells n with letters only, so that it is one search term.
func letters(n int) string {
	return strings.Map(func(r rune) rune { return 'a' + (r - '0') }, fmt.Sprint(n))
}

func (g *generator) sessions() []string {
	return []string{g.client + "-a", g.client + "-b", g.client + "-c", g.client + "-d"}
}

func (g *generator) user(s int) string { return fmt.Sprintf("u-%s-%d", g.client, s) }

func (g *generator) next() turn {
	n := g.n
	g.n++
	s := n % len(g.sessions())
	t := turn{
		session: g.sessions()[s], user: g.user(s), id: fmt.Sprintf("%s-%05d", g.client, n),
		role: "user", at: g.base.Add(time.Duration(n) * time.Second),
		marker: "mark" + g.client + letters(n),
	}
	switch {
	case n%7 == 3:
		t.content = facts[(n/7+g.index)%len(facts)]
		t.marker = ""
	case n%3 == 2:
		t.role = "assistant"
		t.content = fmt.Sprintf("Noted %s: build %d is rolled out and the dashboards stayed green.", t.marker, n)
	default:
		t.content = fmt.Sprintf("Note %s: the deploy of build %d went fine, the on-call rota is unchanged.", t.marker, n)
	}
	return t
}

// harness runs memoryd on a lazyfs and cuts its power.
type harness struct {
	t        *testing.T
	cfg      config
	rng      *rand.Rand
	dir      string
	fs       *lazyfs.FS
	data     string
	listen   string
	httpAddr string
	md       *exec.Cmd
	mdDone   chan struct{}
	mdLog    *os.File
	ledger   *ledger
	gens     map[string]*generator
	names    []string
	kills    int
	startup  []time.Duration // how long each start took to be ready
}

func newHarness(t *testing.T, cfg config) *harness {
	t.Helper()
	dir := t.TempDir()
	mp := filepath.Join(dir, "mnt")
	if err := os.Mkdir(mp, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := lazyfs.Mount(filepath.Join(dir, "lazyfs"), mp, lazyfs.Options{Entries: cfg.entries})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{
		t: t, cfg: cfg, rng: rand.New(rand.NewPCG(cfg.seed, 37)), dir: dir, fs: f,
		data: filepath.Join(mp, "data"), listen: freeAddr(t), httpAddr: freeAddr(t),
		ledger: &ledger{acked: map[key]turn{}, unknown: map[string][]turn{}, last: map[string]turn{}},
		gens:   map[string]*generator{},
		names:  []string{"plain", "http", "client"},
	}
	base := time.Now().Add(-48 * time.Hour).Truncate(time.Second)
	for i, n := range h.names {
		h.gens[n] = &generator{client: n, index: i, base: base.Add(time.Duration(i) * time.Millisecond)}
	}
	logf, err := os.Create(filepath.Join(dir, "memoryd.log"))
	if err != nil {
		t.Fatal(err)
	}
	h.mdLog = logf
	t.Cleanup(func() {
		h.kill()
		if err := f.Unmount(); err != nil {
			t.Error(err)
		}
		logf.Close()
		if keep := os.Getenv("POWERCUT_LOGS"); keep != "" {
			// memoryd's whole log, kept past the test's temporary directory.
			name := strings.NewReplacer("/", "_").Replace(t.Name()) + time.Now().Format("-150405") + ".memoryd.log"
			if b, err := os.ReadFile(logf.Name()); err == nil {
				_ = os.WriteFile(filepath.Join(keep, name), b, 0o644)
			}
		}
	})
	return h
}

// start starts memoryd and waits until it is ready.
func (h *harness) start() {
	h.t.Helper()
	fmt.Fprintf(h.mdLog, "---- start (cut %d)\n", h.fs.Cuts())
	h.md = exec.Command(memorydBinary(h.t), "--listen", h.listen, "--http", h.httpAddr, "--data", h.data,
		"--durability", h.cfg.durability, "--embed", "off", "--log-level", "warn", "--idle-timeout=-1s",
		"--context-window", fmt.Sprint(contextWindow))
	h.md.Stdout, h.md.Stderr = h.mdLog, h.mdLog
	if err := h.md.Start(); err != nil {
		h.t.Fatal(err)
	}
	done := make(chan struct{})
	h.mdDone = done
	cmd := h.md
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	began := time.Now()
	deadline := time.After(90 * time.Second)
	for {
		if resp, err := http.Get("http://" + h.httpAddr + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				h.startup = append(h.startup, time.Since(began))
				return
			}
		}
		select {
		case <-done:
			h.t.Fatalf("memoryd exited while starting (after %d cuts): %s\n%s", h.fs.Cuts(), cmd.ProcessState, h.logTail())
		case <-deadline:
			h.t.Fatalf("memoryd not ready within 90s (after %d cuts)\n%s", h.fs.Cuts(), h.logTail())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// kill kills memoryd with SIGKILL, if it runs, and waits for it to exit.
func (h *harness) kill() {
	if h.md == nil {
		return
	}
	_ = h.md.Process.Kill()
	<-h.mdDone
	h.md = nil
}

func (h *harness) logTail() string {
	b, _ := os.ReadFile(h.mdLog.Name())
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

func (h *harness) connect() *nats.Conn {
	h.t.Helper()
	nc, err := nats.Connect("nats://"+h.listen, nats.NoReconnect())
	if err != nil {
		h.t.Fatal(err)
	}
	return nc
}

func (h *harness) publisher(name string) publisher {
	h.t.Helper()
	switch name {
	case "plain":
		nc := h.connect()
		js, err := jetstream.New(nc)
		if err != nil {
			h.t.Fatal(err)
		}
		return &plain{nc: nc, js: js}
	case "http":
		return &batches{url: "http://" + h.httpAddr + "/v1/tenants/" + tenant + "/events", hc: &http.Client{Timeout: 15 * time.Second}}
	default:
		nc := h.connect()
		cl, err := client.New(nc, client.Options{Tenant: tenant, Source: "powercut"})
		if err != nil {
			h.t.Fatal(err)
		}
		return &clientPub{nc: nc, cl: cl}
	}
}

// drive publishes a client's turns until ctx ends or a publish fails: first the turns it sent
// before and never heard back of (the same ids, as a client retries), then new ones. With
// onlyUnknown it stops when those are sent.
func (h *harness) drive(ctx context.Context, name string, p publisher, onlyUnknown bool) error {
	size := 1
	if name == "http" {
		size = 10
	}
	g := h.gens[name]
	for ctx.Err() == nil {
		h.ledger.mu.Lock()
		ts := h.ledger.unknown[name]
		if len(ts) > size {
			ts = ts[:size]
		}
		h.ledger.mu.Unlock()
		if len(ts) == 0 {
			if onlyUnknown {
				return nil
			}
			for range size {
				ts = append(ts, g.next())
			}
			h.ledger.mu.Lock()
			h.ledger.unknown[name] = append(h.ledger.unknown[name], ts...)
			h.ledger.mu.Unlock()
		}
		if err := p.send(ctx, ts); err != nil {
			return err
		}
		h.ledger.mu.Lock()
		h.ledger.unknown[name] = h.ledger.unknown[name][len(ts):]
		h.ledger.mu.Unlock()
		h.ledger.ack(name, ts)
	}
	return ctx.Err()
}

// cycle runs the clients, kills memoryd at a random moment after minAcked acknowledgements,
// cuts the power and restarts memoryd.
func (h *harness) cycle() {
	h.t.Helper()
	h.ledger.mu.Lock()
	h.ledger.cycle = 0
	clear(h.ledger.last)
	h.ledger.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	errs := make(chan error, len(h.names))
	for _, name := range h.names {
		p := h.publisher(name)
		wg.Go(func() {
			defer p.close()
			errs <- h.drive(ctx, name, p, false)
		})
	}
	// The cut comes at a random moment once the clients have had minAcked turns acknowledged.
	deadline := time.After(60 * time.Second)
	minAcked := cmp.Or(h.cfg.minAcked, 20)
	for h.ledger.ackedN() < minAcked {
		select {
		case err := <-errs:
			cancel()
			wg.Wait()
			h.t.Fatalf("a client failed before the cut: %v\n%s", err, h.logTail())
		case <-deadline:
			cancel()
			wg.Wait()
			h.t.Fatalf("fewer than %d turns acknowledged in 60s\n%s", minAcked, h.logTail())
		case <-time.After(10 * time.Millisecond):
		}
	}
	<-time.After(time.Duration(h.rng.Int64N(int64(800 * time.Millisecond))))
	h.kill()
	cancel()
	wg.Wait()
	h.sample()
	if !h.cfg.killOnly {
		if err := h.fs.Cut(); err != nil {
			h.t.Fatal(err)
		}
	}
	h.kills++
	h.start()
}

// sample keeps the last turn each client had acknowledged in this cycle, for retrieval.
func (h *harness) sample() {
	h.ledger.mu.Lock()
	defer h.ledger.mu.Unlock()
	for _, name := range h.names {
		if t, ok := h.ledger.last[name]; ok && t.marker != "" {
			h.ledger.samples = append(h.ledger.samples, t)
		}
	}
}

// publish runs the clients for d with no fault.
func (h *harness) publish(d time.Duration) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, len(h.names))
	for _, name := range h.names {
		p := h.publisher(name)
		wg.Go(func() {
			defer p.close()
			if err := h.drive(ctx, name, p, false); err != nil && !errors.Is(err, context.DeadlineExceeded) {
				errs <- fmt.Errorf("%s: %w", name, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		h.t.Errorf("with no fault: %v", err)
	}
	h.sample()
}

// storedTurns reads the turns of the tenant in the turns stream: how often each is stored.
func (h *harness) storedTurns(ctx context.Context, js jetstream.JetStream) map[key]int {
	h.t.Helper()
	filter := "*.memory.turns." + tenant + ".*" // stored subjects lead with the partition
	s, err := js.Stream(ctx, events.DefaultTopology().TurnsStream())
	if err != nil {
		h.t.Fatal(err)
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		h.t.Fatal(err)
	}
	var total uint64
	for _, n := range info.State.Subjects {
		total += n
	}
	out := map[key]int{}
	if total == 0 {
		return out
	}
	c, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}})
	if err != nil {
		h.t.Fatal(err)
	}
	it, err := c.Messages()
	if err != nil {
		h.t.Fatal(err)
	}
	defer func() {
		// A temporary consumer is removed when done: the catch-up waits on every consumer.
		it.Stop()
		if ci := c.CachedInfo(); ci != nil {
			_ = s.DeleteConsumer(ctx, ci.Name)
		}
	}()
	for {
		m, err := it.Next()
		if err != nil {
			h.t.Fatal(err)
		}
		if m.Headers().Get("ce-type") == events.TypeTurn {
			sess := m.Subject()[strings.LastIndexByte(m.Subject(), '.')+1:]
			out[key{sess, m.Headers().Get("ce-id")}]++
		}
		md, err := m.Metadata()
		if err != nil {
			h.t.Fatal(err)
		}
		if md.NumPending == 0 {
			return out
		}
	}
}

// checkStream compares the turns stream with the acknowledged turns after a cut; lostBefore
// holds the turns found missing at earlier cuts.
func (h *harness) checkStream(out *outcome, lostBefore map[key]bool) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	nc := h.connect()
	defer nc.Close()
	js, _ := jetstream.New(nc)
	stored := h.storedTurns(ctx, js)
	lost, dup := 0, 0
	h.ledger.mu.Lock()
	for k := range h.ledger.acked {
		if stored[k] == 0 && !lostBefore[k] {
			lostBefore[k] = true
			lost++
		}
	}
	h.ledger.mu.Unlock()
	for _, n := range stored {
		if n > 1 {
			dup += n - 1
		}
	}
	out.lost += lost
	out.duplicated = dup // the stream as it is now
	if lost > 0 {
		out.cutsLosing++
	}
	h.t.Logf("%s %d (%s, %s): %d acknowledged so far, %d lost at this cut, %d stored twice", h.what(), h.kills, h.cfg.durability, h.cfg.entries, len(h.ledger.acked), lost, dup)
}

func (h *harness) what() string {
	if h.cfg.killOnly {
		return "kill -9"
	}
	return "power cut"
}

// run makes cfg.cuts cuts and then checks the memory memoryd rebuilt.
func run(t *testing.T, cfg config) outcome {
	needFUSE(t)
	h := newHarness(t, cfg)
	h.start()
	if cfg.syncedStart {
		if err := h.fs.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	var out outcome
	lost := map[key]bool{}
	began := time.Now()
	for range cfg.cuts {
		h.cycle()
		h.checkStream(&out, lost)
	}
	if cfg.cuts == 0 {
		h.publish(cfg.publishFor)
	}
	cycles := time.Since(began)
	// The syncs of the cycles: clients publishing, memoryd applying, compressing, extracting.
	out.syncs = h.fs.Syncs()
	if err := h.settle(); err != nil {
		if !cfg.measureOnly {
			t.Fatal(err)
		}
		out.stalled = err
		t.Log(err)
		h.ledger.mu.Lock()
		out.acked = len(h.ledger.acked)
		h.ledger.mu.Unlock()
		return out
	}
	settled := time.Since(began)
	h.ledger.mu.Lock()
	out.acked = len(h.ledger.acked)
	h.ledger.mu.Unlock()
	h.checkMemory(&out)
	t.Logf("%d cuts in %v, caught up after %v, checked after %v", cfg.cuts, cycles.Round(time.Millisecond), settled.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
	out.startup = h.startup
	return out
}

// settle sends what is still unacknowledged, ends every session and waits until memoryd has
// applied, compressed and extracted everything. It fails the test when a client fails, and
// returns an error saying what memoryd still waits for when it has not caught up in time.
func (h *harness) settle() error {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), catchUp)
	defer cancel()
	for _, name := range h.names {
		p := h.publisher(name)
		err := h.drive(ctx, name, p, true)
		p.close()
		if err != nil {
			h.t.Fatalf("%s: resending after the last cut: %v", name, err)
		}
	}
	nc := h.connect()
	defer nc.Close()
	cl, _ := client.New(nc, client.Options{Tenant: tenant, Source: "powercut"})
	for _, name := range h.names {
		g := h.gens[name]
		for i, s := range g.sessions() {
			if _, err := cl.EndSession(ctx, s, g.user(i)); err != nil {
				h.t.Fatalf("ending %s: %v", s, err)
			}
		}
	}
	js, _ := jetstream.New(nc)
	store, err := session.NewStore(ctx, js, events.DefaultTopology())
	if err != nil {
		h.t.Fatal(err)
	}
	quiet := func() error {
		for _, name := range h.names {
			for _, s := range h.gens[name].sessions() {
				hd, _, err := store.Header(ctx, session.Key{Tenant: tenant, Session: s})
				if err != nil {
					return fmt.Errorf("%s: %w", s, err)
				}
				if !hd.Ended || !hd.AwaitingSince.IsZero() {
					return fmt.Errorf("%s: ended=%t awaiting a summary=%t", s, hd.Ended, !hd.AwaitingSince.IsZero())
				}
			}
		}
		for sn := range js.StreamNames(ctx).Name() {
			s, err := js.Stream(ctx, sn)
			if err != nil {
				return err
			}
			for ci := range s.ListConsumers(ctx).Info() {
				if ci.NumPending > 0 || ci.NumAckPending > 0 {
					return fmt.Errorf("consumer %s of %s: %d pending, %d unacknowledged", ci.Name, sn, ci.NumPending, ci.NumAckPending)
				}
			}
		}
		return nil
	}
	for err := quiet(); err != nil; err = quiet() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("memoryd did not catch up within %v: %w\n%s\nmemoryd's log ends:\n%s", catchUp, err, h.pressures(js, store), h.logTail())
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

// pressures describes, for every session still waiting for a summary, its pressure events and
// whether the summaries they name exist in the long-term store: what a stalled catch-up waits
// for.
func (h *harness) pressures(js jetstream.JetStream, store *session.Store) string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lt, err := longterm.Open(ctx, js, events.DefaultTopology())
	if err != nil {
		return err.Error()
	}
	ps, err := js.Stream(ctx, events.DefaultTopology().PressureStream())
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, name := range h.names {
		for _, s := range h.gens[name].sessions() {
			hd, _, err := store.Header(ctx, session.Key{Tenant: tenant, Session: s})
			if err != nil || hd.AwaitingSince.IsZero() {
				continue
			}
			fmt.Fprintf(&b, "session %s waits since %s for %s (pressures %d, summaries %d):\n", s, hd.AwaitingSince.Format(time.RFC3339), hd.SummaryID, hd.Pressures, hd.Summaries)
			info, err := ps.Info(ctx)
			if err != nil {
				return err.Error()
			}
			for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
				m, err := ps.GetMsg(ctx, seq)
				if err != nil || !strings.HasSuffix(m.Subject, "."+tenant+"."+s) {
					continue
				}
				var p events.Pressure
				if err := json.Unmarshal(m.Data, &p); err != nil {
					continue
				}
				has := func(id string) string {
					if _, err := lt.Summary(ctx, tenant, p.User, id); err != nil {
						return "missing"
					}
					return "stored"
				}
				prev := "none"
				if len(p.EntryIDs) > 0 && strings.HasPrefix(p.EntryIDs[0], "sum_") {
					prev = p.EntryIDs[0] + " " + has(p.EntryIDs[0])
				}
				fmt.Fprintf(&b, "  seq %d: pressure %d asks for %s (%s), previous %s, turns seq %d-%d\n", seq, p.Number, p.SummaryID, has(p.SummaryID), prev, p.FirstSeq, p.LastSeq)
			}
		}
	}
	return b.String()
}

// checkMemory checks short-term memory, retrieval and the long-term store against the turns
// stream and a replay of it.
func (h *harness) checkMemory(out *outcome) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	nc := h.connect()
	defer nc.Close()
	js, _ := jetstream.New(nc)
	stored := h.storedTurns(ctx, js)
	topo := events.DefaultTopology()
	live, err := session.NewStore(ctx, js, topo)
	if err != nil {
		h.t.Fatal(err)
	}
	var sessions []string
	users := map[string]bool{}
	for _, name := range h.names {
		g := h.gens[name]
		sessions = append(sessions, g.sessions()...)
		for i := range g.sessions() {
			users[g.user(i)] = true
		}
	}
	// Short-term memory: each stored turn once, in its own entry or one summary's provenance.
	covered := map[key]int{}
	states := map[string]*session.State{}
	for _, s := range sessions {
		st, err := live.Load(ctx, session.Key{Tenant: tenant, Session: s}, 0)
		if err != nil {
			h.t.Fatalf("loading session %s: %v", s, err)
		}
		states[s] = st
		for _, e := range append(st.Short.Pending(), st.Short.Entries()...) {
			if e.Type == memory.Summary {
				for _, p := range e.Provenance {
					covered[key{s, p}]++
				}
				continue
			}
			covered[key{s, e.ID}]++
		}
	}
	h.ledger.mu.Lock()
	acked := maps(h.ledger.acked)
	samples := slices.Clone(h.ledger.samples)
	h.ledger.mu.Unlock()
	for k := range acked {
		if stored[k] > 0 && covered[k] == 0 {
			out.shortMissing++
			if out.shortMissing <= 5 {
				h.t.Logf("acknowledged turn %s/%s is stored but in no entry of short-term memory", k.session, k.id)
			}
		}
	}
	for k, n := range covered {
		if n > 1 {
			out.shortDuplicate++
			h.t.Logf("turn %s/%s is in %d entries of short-term memory", k.session, k.id, n)
		}
		if stored[k] == 0 {
			out.shortPhantom++
			if out.shortPhantom <= 5 {
				h.t.Logf("short-term memory holds turn %s/%s, which the turns stream does not", k.session, k.id)
			}
		}
	}
	// Retrieval: the last turns acknowledged before each cut, found by their marker, once.
	for _, tr := range samples {
		if stored[key{tr.session, tr.id}] == 0 {
			continue // lost with the stream; counted there
		}
		out.sampled++
		n, err := h.retrieveCount(ctx, tr)
		if err != nil {
			h.t.Fatal(err)
		}
		if n != 1 {
			out.unretrieved++
			h.t.Logf("retrieve %q in %s returned turn %s %d times; want once", tr.marker, tr.session, tr.id, n)
		}
	}
	// A replay of the turns stream into separate buckets must rebuild the same memory.
	b := memory.DefaultBudget()
	b.ContextWindow = contextWindow
	rp, err := daemon.NewReplayer(ctx, daemon.Config{Topology: topo, Ingest: ingest.Config{Budget: b, IdleTimeout: -1}}, "POWERCUT", js, zerolog.Nop())
	if err == nil {
		_, err = rp.Replay(ctx, tenant, 0, time.Time{}, nil)
	}
	if err != nil {
		out.replayErr = err
		return
	}
	rtopo := ingest.ReplayTopology(topo, "POWERCUT")
	replayed, err := session.NewStore(ctx, js, rtopo)
	if err != nil {
		h.t.Fatal(err)
	}
	for _, s := range sessions {
		r, err := replayed.Load(ctx, session.Key{Tenant: tenant, Session: s}, 0)
		if err != nil {
			h.t.Fatal(err)
		}
		if got, want := describeEntries(r), describeEntries(states[s]); got != want {
			out.replayDiffers++
			h.t.Logf("session %s: live short-term entries differ from the replay's (- live, + replay):\n%s", s, diff(want, got))
		} else if got, want := describeHeader(r), describeHeader(states[s]); got != want {
			out.replayDetail++
			h.t.Logf("session %s: live counters differ from the replay's (- live, + replay):\n%s", s, diff(want, got))
		}
	}
	liveLT, err := longterm.Open(ctx, js, topo)
	if err != nil {
		h.t.Fatal(err)
	}
	replayLT, err := longterm.Open(ctx, js, rtopo)
	if err != nil {
		h.t.Fatal(err)
	}
	for u := range users {
		a, err := liveLT.User(ctx, tenant, u)
		if err != nil {
			h.t.Fatal(err)
		}
		r, err := replayLT.User(ctx, tenant, u)
		if err != nil {
			h.t.Fatal(err)
		}
		out.facts += len(a.Facts)
		out.summaries += len(a.Summaries)
		switch {
		case describeLT(r, current) != describeLT(a, current):
			out.replayDiffers++
			h.t.Logf("user %s: live facts or summaries differ from the replay's (- live, + replay):\n%s", u, diff(describeLT(a, current), describeLT(r, current)))
		case describeLT(r, versions) != describeLT(a, versions):
			out.replayDetail++
			h.t.Logf("user %s: the history of changed facts differs from the replay's (- live, + replay):\n%s", u, diff(describeLT(a, versions), describeLT(r, versions)))
		case describeLT(r, details) != describeLT(a, details):
			out.replayDetail++
			h.t.Logf("user %s: facts' valid_from or provenance differ from the replay's (- live, + replay):\n%s", u, diff(describeLT(a, details), describeLT(r, details)))
		}
	}
}

func maps(m map[key]turn) map[key]turn {
	out := make(map[key]turn, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// retrieveCount asks memoryd's HTTP API for the turn's marker in its session and counts the
// entries that are the turn.
func (h *harness) retrieveCount(ctx context.Context, tr turn) (int, error) {
	body, _ := json.Marshal(map[string]any{"query": tr.marker, "session": tr.session, "limit": 50, "context_tokens": 0})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+h.httpAddr+"/v1/tenants/"+tenant+"/retrieve", bytes.NewReader(body))
	req.Header.Set("content-type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("retrieve %q: %s: %s", tr.marker, resp.Status, b)
	}
	var reply events.RetrieveReply
	if err := json.Unmarshal(b, &reply); err != nil {
		return 0, fmt.Errorf("retrieve %q: %w", tr.marker, err)
	}
	n := 0
	for _, e := range reply.Entries {
		if e.ID == tr.id {
			n++
		}
	}
	return n, nil
}

// describeEntries renders a session's short-term entries (pending, then kept), for comparison
// with a replay.
func describeEntries(st *session.State) string {
	var b strings.Builder
	for _, e := range append(st.Short.Pending(), st.Short.Entries()...) {
		fmt.Fprintf(&b, "%s %s %d %s %q %v\n", e.ID, e.Type, e.Tokens, e.Timestamp.Format(time.RFC3339), e.Content, e.Provenance)
	}
	return b.String()
}

// describeHeader renders a session's counters.
func describeHeader(st *session.State) string {
	hd := st.Header
	return fmt.Sprintf("user=%s turns=%d rejected=%d pressures=%d summaries=%d tokens=%d kept=%d pending=%d ended=%t",
		hd.User, hd.Turns, hd.Rejected, hd.Pressures, hd.Summaries, hd.Tokens, hd.Kept, hd.Pending, hd.Ended)
}

// Levels of describeLT.
const (
	current  = iota // the live facts (key and content) and the summaries
	versions        // every version of every fact: id, content, key, live or not
	details         // versions with their valid_from and provenance
)

// describeLT renders a user's long-term memory at a level of detail, for comparison with a
// replay.
func describeLT(r longterm.UserRecords, level int) string {
	var lines []string
	for _, f := range r.Facts {
		switch level {
		case current:
			if f.Live() {
				lines = append(lines, fmt.Sprintf("fact key=%s %q", f.Key, f.Content))
			}
			continue
		}
		line := fmt.Sprintf("fact %s %q key=%s live=%t", f.ID, f.Content, f.Key, f.Live())
		if level == details {
			prov := slices.Clone(f.Provenance)
			slices.Sort(prov)
			line += fmt.Sprint(" valid_from=", f.ValidFrom.Format(time.RFC3339), " ", prov)
		}
		lines = append(lines, line)
	}
	for _, s := range r.Summaries {
		lines = append(lines, fmt.Sprintf("summary %s %q", s.ID, s.Content))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// diff lists the lines only in want (-) and only in got (+), at most 20.
func diff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var out []string
	for _, l := range w {
		if !slices.Contains(g, l) {
			out = append(out, "- "+l)
		}
	}
	for _, l := range g {
		if !slices.Contains(w, l) {
			out = append(out, "+ "+l)
		}
	}
	if len(out) > 20 {
		out = append(out[:20], fmt.Sprintf("… %d more", len(out)-20))
	}
	return strings.Join(out, "\n")
}

// plain is a plain nats.go JetStream publisher: binary-mode CloudEvents with Nats-Msg-Id.
type plain struct {
	nc *nats.Conn
	js jetstream.JetStream
}

func (p *plain) send(ctx context.Context, ts []turn) error {
	t := ts[0]
	m := nats.NewMsg("memory.turns." + tenant + "." + t.session)
	m.Header.Set("ce-specversion", "1.0")
	m.Header.Set("ce-id", t.id)
	m.Header.Set("ce-source", "powercut/plain")
	m.Header.Set("ce-type", events.TypeTurn)
	m.Header.Set("ce-time", t.at.Format(time.RFC3339Nano))
	m.Header.Set("content-type", "application/json")
	m.Header.Set(jetstream.MsgIDHeader, tenant+"."+t.session+"."+t.id)
	m.Data, _ = json.Marshal(events.Turn{Role: t.role, Content: t.content, User: t.user})
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := p.js.PublishMsg(ctx, m)
	return err
}

func (p *plain) close() { p.nc.Close() }

// batches posts turns to memoryd's HTTP API as CloudEvents batches.
type batches struct {
	url string
	hc  *http.Client
}

func (p *batches) send(ctx context.Context, ts []turn) error {
	evs := make([]map[string]any, len(ts))
	for i, t := range ts {
		evs[i] = map[string]any{"specversion": "1.0", "id": t.id, "type": events.TypeTurn, "source": "powercut/http",
			"subject": t.session, "time": t.at.Format(time.RFC3339Nano), "datacontenttype": "application/json",
			"data": map[string]any{"role": t.role, "content": t.content, "user": t.user}}
	}
	body, _ := json.Marshal(evs)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("content-type", "application/cloudevents-batch+json")
	resp, err := p.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("batch: %s: %s", resp.Status, b)
	}
	var reply struct {
		Results []struct {
			ID      string `json:"id"`
			Session string `json:"session"`
		} `json:"results"`
	}
	if err := json.Unmarshal(b, &reply); err != nil {
		return fmt.Errorf("batch reply: %w", err)
	}
	if len(reply.Results) != len(ts) {
		return fmt.Errorf("batch of %d: %d results", len(ts), len(reply.Results))
	}
	for i, r := range reply.Results {
		if r.ID != ts[i].id || r.Session != ts[i].session {
			return fmt.Errorf("batch result %d is %s/%s; want %s/%s", i, r.Session, r.ID, ts[i].session, ts[i].id)
		}
	}
	return nil
}

func (p *batches) close() { p.hc.CloseIdleConnections() }

// clientPub publishes with pkg/client.
type clientPub struct {
	nc *nats.Conn
	cl *client.Client
}

func (p *clientPub) send(ctx context.Context, ts []turn) error {
	t := ts[0]
	_, err := p.cl.Publish(ctx, client.Turn{ID: t.id, Session: t.session, User: t.user, Role: t.role, Content: t.content, Time: t.at})
	return err
}

func (p *clientPub) close() { p.nc.Close() }

var (
	blockFile  = regexp.MustCompile(`/[0-9]+\.(blk|idx|key)$`)
	batchDir   = regexp.MustCompile(`/batches/[^/]+`)
	streamPath = regexp.MustCompile(`^data/jetstream/\$G/streams/([^/]+)(?:/(msgs|obs|batches)(?:/|$))?`)
)

// syncReport summarises the syncs of a run: per stream, the syncs of its message blocks, of
// its consumers' state (each state write is an fsync of o.dat.tmp and one of its directory
// after the rename), of the stores nats-server stages atomic batches in, and of the rest
// (meta.inf, index.db, the stream's directory); then the files synced most (block numbers and
// batch ids folded).
func syncReport(syncs map[string]lazyfs.Syncs, acked int) string {
	type row struct{ blocks, consumers, batches, other int }
	streams := map[string]*row{}
	folded := map[string]lazyfs.Syncs{}
	total := 0
	for p, s := range syncs {
		total += s.Total()
		name, kind := "(other)", ""
		if m := streamPath.FindStringSubmatch(p); m != nil {
			name, kind = m[1], m[2]
		}
		r := streams[name]
		if r == nil {
			r = &row{}
			streams[name] = r
		}
		switch kind {
		case "msgs":
			r.blocks += s.Total()
		case "obs":
			r.consumers += s.Total()
		case "batches":
			r.batches += s.Total()
		default:
			r.other += s.Total()
		}
		p = blockFile.ReplaceAllString(p, "/N.$1")
		p = batchDir.ReplaceAllString(p, "/batches/*")
		p = strings.TrimPrefix(p, "data/jetstream/$G/streams/")
		f := folded[p]
		f.Fsync += s.Fsync
		f.Fdatasync += s.Fdatasync
		f.Dir += s.Dir
		folded[p] = f
	}
	names := make([]string, 0, len(streams))
	for n := range streams {
		names = append(names, n)
	}
	sum := func(r *row) int { return r.blocks + r.consumers + r.batches + r.other }
	sort.Slice(names, func(i, j int) bool { return sum(streams[names[i]]) > sum(streams[names[j]]) })
	var b strings.Builder
	fmt.Fprintf(&b, "%d syncs while %d turns were acknowledged (%.2f per turn). Per stream: blocks, consumer state, atomic batches, other:\n", total, acked, float64(total)/float64(max(acked, 1)))
	for _, n := range names {
		r := streams[n]
		fmt.Fprintf(&b, "  %6d %6d %6d %6d  %s\n", r.blocks, r.consumers, r.batches, r.other, n)
	}
	paths := make([]string, 0, len(folded))
	for p := range folded {
		paths = append(paths, p)
	}
	sort.Slice(paths, func(i, j int) bool {
		a, b := folded[paths[i]].Total(), folded[paths[j]].Total()
		if a != b {
			return a > b
		}
		return paths[i] < paths[j]
	})
	fmt.Fprintf(&b, "The files synced most (fsync, fdatasync, directory fsync):\n")
	for i, p := range paths {
		if i == 15 {
			fmt.Fprintf(&b, "  … %d more files\n", len(paths)-15)
			break
		}
		s := folded[p]
		fmt.Fprintf(&b, "  %6d %6d %6d  %s\n", s.Fsync, s.Fdatasync, s.Dir, p)
	}
	return b.String()
}
