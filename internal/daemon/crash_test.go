package daemon_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/pkg/events"
	"github.com/agentmem/agentmem/pkg/memory"
)

func buildMemoryd(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	bin := filepath.Join(t.TempDir(), "memoryd")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/memoryd")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/memoryd: %v\n%s", err, out)
	}
	return bin
}

func startMemoryd(t *testing.T, bin, listen, dir string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, "--listen", listen, "--data", dir, "--context-window", "4300", "--idle-timeout", "-1s",
		"--log-level", "warn", "--log-format", "json")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	brokertest.CheckFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		c, err := net.Dial("tcp", listen)
		if err != nil {
			return err
		}
		return c.Close()
	})
	return cmd
}

// TestSIGKILLDuringIngestAndCompression kills memoryd with SIGKILL twice while turns are being
// ingested and sessions compressed (a 1,000-token budget), restarts it on the same data each
// time, and checks the invariants: every acknowledged turn applied once, in order; one summary
// event per pressure event; every named range eventually summarised.
func TestSIGKILLDuringIngestAndCompression(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills memoryd; skipped with -short")
	}
	bin := buildMemoryd(t)
	dir := t.TempDir()
	listen := freePort(t)
	url := "nats://" + listen
	svc := startMemoryd(t, bin, listen, dir)
	t.Cleanup(func() {
		_ = svc.Process.Signal(syscall.SIGTERM)
		_, _ = svc.Process.Wait()
	})
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	const sessions, turns = 6, 1200
	ids := map[string][]string{}
	ctx := context.Background()
	publish := func(i int) {
		sess := fmt.Sprintf("k%d", i%sessions)
		id := fmt.Sprintf("%s-%04d", sess, i)
		role := []string{"user", "assistant"}[(i/sessions)%2]
		ev, _ := events.NewEvent(id, events.TypeTurn, "test", time.Date(2026, 11, 30, 8, 0, 0, i, time.UTC),
			events.Turn{Role: role, Content: fmt.Sprintf("turn %d: the deploy of service %d needs a rollback plan and an on-call owner", i, i%13), User: "u" + sess})
		m, _ := events.BinaryMsg("memory.turns.acme."+sess, ev)
		m.Header.Set(events.HeaderMsgID, events.MsgID("acme", sess, id))
		brokertest.CheckFor(t, 60*time.Second, 50*time.Millisecond, func() error {
			pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			_, err := js.PublishMsg(pctx, m)
			return err
		})
		ids[sess] = append(ids[sess], id)
	}
	for round := range 2 {
		for i := round * turns / 3; i < (round+1)*turns/3; i++ {
			publish(i)
		}
		if err := svc.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_, _ = svc.Process.Wait()
		svc = startMemoryd(t, bin, listen, dir)
	}
	for i := 2 * turns / 3; i < turns; i++ {
		publish(i)
	}
	topo := events.DefaultTopology()
	store, err := session.NewStore(ctx, js, topo)
	if err != nil {
		t.Fatal(err)
	}
	var states map[string]*session.State
	brokertest.CheckFor(t, 120*time.Second, 200*time.Millisecond, func() error {
		states = map[string]*session.State{}
		for s := range sessions {
			sess := fmt.Sprintf("k%d", s)
			st, err := store.Load(ctx, session.Key{Tenant: "acme", Session: sess}, 0)
			if err != nil {
				return err
			}
			if st.Header.Turns < len(ids[sess]) {
				return fmt.Errorf("%s: %d of %d turns applied", sess, st.Header.Turns, len(ids[sess]))
			}
			if !st.Header.AwaitingSince.IsZero() {
				return fmt.Errorf("%s: summary %s still awaited", sess, st.Header.SummaryID)
			}
			states[sess] = st
		}
		return nil
	})
	pressures := 0
	for sess, st := range states {
		var got []string
		var walk func(e memory.Entry)
		walk = func(e memory.Entry) {
			if e.Type == memory.Summary && e.Content == "" {
				for _, p := range st.Covered(e.ID) {
					walk(p)
				}
				return
			}
			if e.Type == memory.Summary {
				got = append(got, e.Provenance...)
				return
			}
			got = append(got, e.ID)
		}
		for _, e := range st.Short.Pending() {
			walk(e)
		}
		for _, e := range st.Short.Entries() {
			walk(e)
		}
		if !slices.Equal(got, ids[sess]) {
			t.Fatalf("%s: turns lost, doubled or reordered across the kills:\n got %d %v\nwant %d", sess, len(got), got[:min(10, len(got))], len(ids[sess]))
		}
		if st.Header.Pressures == 0 {
			t.Fatalf("%s was never compressed: the scenario is too small", sess)
		}
		pressures += st.Header.Pressures
	}
	// One summary event per named range, however often the compressor was killed.
	sums, err := js.Stream(ctx, topo.SummaryStream())
	if err != nil {
		t.Fatal(err)
	}
	info, err := sums.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if int(info.State.Msgs) != pressures {
		t.Fatalf("%d summary events for %d named ranges", info.State.Msgs, pressures)
	}
}
