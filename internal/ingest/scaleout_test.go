package ingest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/pkg/events"
)

// buildIngest builds cmd/ingest once per test binary.
var buildIngest = sync.OnceValues(func() (string, error) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	dir, err := os.MkdirTemp("", "agentmem-ingest-bin")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "ingest")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/ingest")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/ingest: %v\n%s", err, out)
	}
	return bin, nil
})

// member is one ingest OS process.
type member struct {
	cmd *exec.Cmd
	out *syncBuffer
}

// syncBuffer collects a process's output; the process writes while the test reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// partitions is what the member's last rebalance log line says it owns.
func (m *member) partitions() []int {
	var owned []int
	for _, line := range strings.Split(m.out.String(), "\n") {
		if !strings.Contains(line, "partitions rebalanced") {
			continue
		}
		var rec struct {
			Partitions []int `json:"partitions"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil {
			owned = rec.Partitions
		}
	}
	return owned
}

func startMember(t testing.TB, bin, url, name string) *member {
	t.Helper()
	out := &syncBuffer{}
	cmd := exec.Command(bin, "--nats", url, "--member", name, "--member-ttl", "3s", "--idle-timeout", "-1s",
		"--log-level", "info", "--log-format", "json")
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(os.Environ(), "AGENTMEM_PARTITIONS=16")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	m := &member{cmd: cmd, out: out}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	return m
}

func TestThreeIngestProcessesOneKilledHalfWay(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs three ingest processes; skipped with -short")
	}
	bin, err := buildIngest()
	if err != nil {
		t.Fatal(err)
	}
	env := brokertest.Start(t)
	topo := events.DefaultTopology()
	ctx := context.Background()
	if err := topo.Ensure(ctx, env.JS); err != nil {
		t.Fatal(err)
	}
	members := []*member{
		startMember(t, bin, env.URL, "m1"),
		startMember(t, bin, env.URL, "m2"),
		startMember(t, bin, env.URL, "m3"),
	}
	const sessions, turns = 100, 10000
	js, err := jetstream.New(env.NC, jetstream.WithPublishAsyncMaxPending(512))
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string][]string{}
	publish := func(from, to int) {
		for i := from; i < to; i++ {
			sess := fmt.Sprintf("s%03d", i%sessions)
			id := fmt.Sprintf("%s-%05d", sess, i)
			role := []string{"user", "assistant"}[(i/sessions)%2]
			ev, _ := events.NewEvent(id, events.TypeTurn, "test", time.Date(2026, 11, 30, 8, 0, 0, i, time.UTC),
				events.Turn{Role: role, Content: fmt.Sprintf("turn %d of the scale-out test", i), User: "u" + sess})
			m, _ := events.BinaryMsg("memory.turns.acme."+sess, ev)
			m.Header.Set(events.HeaderMsgID, events.MsgID("acme", sess, id))
			if _, err := js.PublishMsgAsync(m, jetstream.WithStallWait(30*time.Second)); err != nil {
				t.Fatal(err)
			}
			ids[sess] = append(ids[sess], id)
		}
		select {
		case <-js.PublishAsyncComplete():
		case <-time.After(60 * time.Second):
			t.Fatal("publish acks missing")
		}
	}
	publish(0, turns/2)
	store, err := session.NewStore(ctx, env.JS, topo)
	if err != nil {
		t.Fatal(err)
	}
	applied := func() int {
		n := 0
		for s := range sessions {
			h, _, err := store.Header(ctx, session.Key{Tenant: "acme", Session: fmt.Sprintf("s%03d", s)})
			if err == nil {
				n += h.Turns
			}
		}
		return n
	}
	// Kill one member half-way, while it is applying.
	brokertest.CheckFor(t, 60*time.Second, 20*time.Millisecond, func() error {
		if n := applied(); n < turns/4 {
			return fmt.Errorf("%d applied", n)
		}
		return nil
	})
	killed := time.Now()
	if err := members[1].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	publish(turns/2, turns)
	brokertest.CheckFor(t, 120*time.Second, 50*time.Millisecond, func() error {
		if n := applied(); n < turns {
			return fmt.Errorf("%d of %d turns applied", n, turns)
		}
		return nil
	})
	t.Logf("all %d turns applied %s after the kill", turns, time.Since(killed).Round(time.Millisecond))
	// Zero order violations, zero lost, zero duplicates: every session's state lists exactly its
	// turns in publish order; the stream holds each once.
	for s := range sessions {
		sess := fmt.Sprintf("s%03d", s)
		st, err := store.Load(ctx, session.Key{Tenant: "acme", Session: sess}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := turnIDs(st); !slices.Equal(got, ids[sess]) {
			t.Fatalf("%s: %d turns applied, want %d in publish order\n got %v\nwant %v", sess, len(got), len(ids[sess]), head(got), head(ids[sess]))
		}
	}
	stream, err := env.JS.Stream(ctx, topo.TurnsStream())
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(ctx, jetstream.WithSubjectFilter("*.memory.turns.>"))
	if err != nil {
		t.Fatal(err)
	}
	if storedTurns(info) != turns {
		t.Fatalf("the turns stream holds %d turns, want %d", storedTurns(info), turns)
	}
	// The survivors took over the dead member's partitions: together they own all of them.
	brokertest.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		owned := append(members[0].partitions(), members[2].partitions()...)
		slices.Sort(owned)
		if distinct := slices.Compact(slices.Clone(owned)); len(distinct) != topo.Partitions {
			return fmt.Errorf("survivors own %v", owned)
		}
		return nil
	})
}

func head(s []string) []string {
	if len(s) > 8 {
		return s[:8]
	}
	return s
}
