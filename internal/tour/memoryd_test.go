package tour

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// repoRoot is the repository's root, from this package's directory (where go test runs it).
var repoRoot = func() string {
	p, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		panic(err)
	}
	return p
}()

// tourToken is the bearer token of tenant acme in the memoryd's tokens file: the $TOKEN of
// docs/http.md and the AGENTMEM_TOKEN of the Python README.
const tourToken = "tour-token-acme"

// memoryd is the one memoryd every step of the tour talks to.
type memoryd struct {
	bin   string // the directory with the built memctl and memoryd
	nats  string // nats://host:port
	http  string // http://host:port
	token string
}

// buildCommands builds memoryd and memctl into a temporary directory, as make build would into
// bin/.
func buildCommands(t *testing.T) string {
	t.Helper()
	bin := t.TempDir()
	out, err := runCmd(repoRoot, nil, 10*time.Minute, "go", "build", "-o", bin+string(filepath.Separator), "./cmd/memoryd", "./cmd/memctl")
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// startMemoryd runs the built memoryd as make run HTTP=… does (embedded NATS, every worker,
// the HTTP API) with a temporary data directory, free ports and a tokens file, and stops it
// (SIGINT, as Ctrl-C) when the test ends.
func startMemoryd(t *testing.T, bin string) *memoryd {
	t.Helper()
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.json")
	if err := os.WriteFile(tokens, []byte(`{"`+tourToken+`": "acme"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	natsAddr, httpAddr := freeAddr(t), freeAddr(t)
	cmd := exec.Command(filepath.Join(bin, "memoryd"), "--listen", natsAddr, "--data", filepath.Join(dir, "data"),
		"--http", httpAddr, "--http-tokens", tokens, "--log-level", "warn")
	var logs syncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		stop := time.NewTimer(30 * time.Second)
		defer stop.Stop()
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("memoryd exited with %v:\n%s", err, logs.String())
			}
		case <-stop.C:
			_ = cmd.Process.Kill()
			<-exited
			t.Errorf("memoryd did not stop within 30s of SIGINT:\n%s", logs.String())
		}
		if t.Failed() {
			t.Logf("memoryd's log:\n%s", logs.String())
		}
	})
	m := &memoryd{bin: bin, nats: "nats://" + natsAddr, http: "http://" + httpAddr, token: tourToken}
	deadline := time.Now().Add(time.Minute)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := http.Get(m.http + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return m
			}
		}
		select {
		case err := <-exited:
			exited <- err // for the cleanup
			t.Fatalf("memoryd exited before it was ready (%v):\n%s", err, logs.String())
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			t.Fatalf("memoryd not ready within a minute:\n%s", logs.String())
		}
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

// runCmd runs name with args in dir, with env added to the environment, bounded by timeout,
// and returns its standard output; on failure the error carries the standard error too.
func runCmd(dir string, env []string, timeout time.Duration, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("did not finish within %s", timeout)
	}
	if err != nil {
		return stdout.String(), fmt.Errorf("%s: %w\nstdout: %s\nstderr: %s", strings.Join(append([]string{name}, args...), " "),
			err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

// sh runs one command of a document with sh, as a reader pasting it into a terminal would.
func sh(dir string, env []string, timeout time.Duration, command string) (string, error) {
	return runCmd(dir, env, timeout, "sh", "-c", command)
}

// requireTool skips the test when a tool a step needs is missing, except in CI, whose script
// installs it: there a skip would hide a document nobody checked.
func requireTool(t *testing.T, why string, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not installed: %s is not checked (.ci/run installs it)", tool, why)
			}
			t.Skipf("%s is not installed: %s is not checked", tool, why)
		}
	}
}

// syncBuffer is a bytes.Buffer that a process writes while the test reads it.
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
