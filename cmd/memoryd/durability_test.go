package main

import (
	"bufio"
	"context"
	"fmt"
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
)

// TestAcknowledgedTurnIsOnDisk runs the memoryd binary as a user starts it, under strace, and
// publishes turns one at a time with a plain nats.go JetStream publisher: with the default
// durability every acknowledgement comes after a disk sync of the turns stream's file (at
// least one fsync or fdatasync of it per turn while the turns were published); with
// --durability interval none is synced then. It needs strace (apt-get install strace; .ci/run
// installs it).
func TestAcknowledgedTurnIsOnDisk(t *testing.T) {
	if testing.Short() {
		t.Skip("builds memoryd and runs it under strace: not in -short")
	}
	if _, err := exec.LookPath("strace"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("strace is required under CI (.ci/run installs it)")
		}
		t.Skip("strace is not installed (apt-get install strace)")
	}
	bin := filepath.Join(t.TempDir(), "memoryd")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	const n = 40
	for _, mode := range []struct {
		args    []string
		atLeast int
		atMost  int
	}{
		{nil, n, 1 << 30},
		{[]string{"--durability", "interval"}, 0, 0},
	} {
		name := "default"
		if len(mode.args) > 0 {
			name = strings.Join(mode.args, " ")
		}
		t.Run(name, func(t *testing.T) {
			syncs := syncsWhilePublishing(t, bin, n, mode.args...)
			t.Logf("%s: %d syncs of the turns stream for %d turns published one at a time", name, syncs, n)
			if syncs < mode.atLeast || syncs > mode.atMost {
				t.Fatalf("%d syncs of the turns stream while %d turns were published one at a time; want %d to %d", syncs, n, mode.atLeast, mode.atMost)
			}
		})
	}
}

// syncsWhilePublishing starts bin, attaches strace to it, publishes n turns one at a time (each
// waits for its acknowledgement) and counts the fsync and fdatasync calls on the turns stream's
// files between the first publish and the last acknowledgement.
func syncsWhilePublishing(t *testing.T, bin string, n int, args ...string) int {
	dir := t.TempDir()
	listen, health := freeAddr(t), freeAddr(t)
	md := exec.Command(bin, append([]string{"--listen", listen, "--data", filepath.Join(dir, "data"), "--embed", "off", "--log-level", "error",
		"--health-listen", health}, args...)...)
	md.Stderr = os.Stderr
	if err := md.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- md.Wait() }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		_ = md.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = md.Process.Kill()
			<-exited
			t.Error("memoryd did not stop on SIGTERM within 30s")
		}
	}
	t.Cleanup(stop)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var nc *nats.Conn
	for nc == nil {
		c, err := nats.Connect("nats://" + listen)
		if err == nil {
			nc = c
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("memoryd stopped: %v", err)
		case <-ctx.Done():
			t.Fatalf("memoryd did not accept connections: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	// Ready when /readyz says so (streams, buckets and workers up).
	for {
		if resp, err := http.Get("http://" + health + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-ctx.Done():
			t.Fatal("memoryd not ready within 60s")
		case <-time.After(100 * time.Millisecond):
		}
	}

	trace := filepath.Join(dir, "strace.txt")
	st := exec.Command("strace", "-f", "-y", "-tt", "-e", "trace=fsync,fdatasync", "-o", trace, "-p", fmt.Sprint(md.Process.Pid))
	errs, err := st.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Start(); err != nil {
		t.Fatal(err)
	}
	attached := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(errs)
		once := false
		for sc.Scan() {
			if !once && strings.Contains(sc.Text(), "attached") {
				once = true
				close(attached)
			}
		}
	}()
	select {
	case <-attached:
	case <-ctx.Done():
		t.Fatal("strace did not attach to memoryd")
	}
	start := time.Now()
	for i := range n {
		m := nats.NewMsg("memory.turns.dur.s1")
		id := fmt.Sprintf("t%d", i)
		m.Header.Set("ce-specversion", "1.0")
		m.Header.Set("ce-id", id)
		m.Header.Set("ce-source", "durability-test")
		m.Header.Set("ce-type", "agentmem.turn.v1")
		m.Header.Set("content-type", "application/json")
		m.Header.Set(jetstream.MsgIDHeader, "dur.s1."+id)
		m.Data = fmt.Appendf(nil, `{"role":"user","content":"turn %d","user":"u1"}`, i)
		if _, err := js.PublishMsg(ctx, m); err != nil {
			t.Fatalf("publishing turn %d: %v", i, err)
		}
	}
	end := time.Now()
	_ = st.Process.Signal(syscall.SIGINT) // strace detaches
	_ = st.Wait()
	stop()
	return countSyncs(t, trace, "/AGENTMEM_TURNS/", start, end)
}

// countSyncs counts the completed fsync and fdatasync calls of an strace -tt -y log on a file
// whose path contains pathPart, started between from and to (wall clock, today).
func countSyncs(t *testing.T, trace, pathPart string, from, to time.Time) int {
	f, err := os.Open(trace)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	day := from.Format("2006-01-02 ")
	count := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text() // "1234 10:11:12.123456 fsync(9</…/1.blk>) = 0" or "<... fsync resumed>) = 0"
		fields := strings.Fields(line)
		if len(fields) < 3 || !strings.Contains(line, pathPart) || strings.Contains(line, "resumed") {
			continue
		}
		if !strings.HasPrefix(fields[2], "fsync(") && !strings.HasPrefix(fields[2], "fdatasync(") {
			continue
		}
		at, err := time.ParseInLocation("2006-01-02 15:04:05.000000", day+fields[1], time.Local)
		if err != nil {
			t.Fatalf("strace line %q: %v", line, err)
		}
		if !at.Before(from) && !at.After(to) {
			count++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return count
}
