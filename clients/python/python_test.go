package python_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker"
	"github.com/agentmem/agentmem/internal/daemon"
	"github.com/agentmem/agentmem/internal/gateway"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/pkg/events"
)

// The tenant and bearer token the Python tests use; a second tenant's token checks 403.
const (
	tenant      = "acme"
	token       = "tok-acme-python"
	otherTenant = "globex"
	otherToken  = "tok-globex-python"
)

// TestPythonClient runs the Python client's own unittest suite (clients/python/tests) with
// python3 against a real agentmem: memoryd's workers in process and the HTTP gateway, with
// bearer tokens, on a free loopback port. The suite publishes and retrieves, recalls a fact in
// a new session, publishes batches with duplicate ids, checks problem details and retries, and
// runs the README's script. The test fails when a Python test fails or is skipped.
func TestPythonClient(t *testing.T) {
	python := requirePython(t)
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	base := startAgentmem(t)

	start := time.Now()
	out := run(t, dir, 4*time.Minute, []string{
		"AGENTMEM_URL=" + base, "AGENTMEM_TENANT=" + tenant, "AGENTMEM_TOKEN=" + token,
		"AGENTMEM_OTHER_TENANT=" + otherTenant, "AGENTMEM_OTHER_TOKEN=" + otherToken,
		"PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1", "NO_PROXY=127.0.0.1,localhost",
	}, python, "-m", "unittest", "discover", "-v", "-s", "tests", "-t", ".")
	t.Logf("python3 -m unittest (%s):\n%s", time.Since(start).Round(time.Millisecond), out)
	summary := regexp.MustCompile(`(?m)^Ran (\d+) tests? in .*$`).Find(out)
	if summary == nil || bytes.Contains(out, []byte("skipped=")) || !bytes.Contains(out, []byte("\nOK")) {
		t.Fatalf("the Python suite did not run every test and pass (%s); see the output above", summary)
	}
}

// startAgentmem starts memoryd's workers on an embedded NATS server and the HTTP gateway, with
// bearer tokens, on a free loopback port, and returns the gateway's base URL. Cleanup stops the
// HTTP server, then the workers and the server.
func startAgentmem(t *testing.T) string {
	t.Helper()
	// The workers run under ctx until the test ends: Start's context is theirs.
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	d, err := daemon.Start(ctx, daemon.Config{
		Broker: broker.Config{Listen: "127.0.0.1:-1", DataDir: t.TempDir()},
		Ingest: ingest.Config{IdleTimeout: -1},
	}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Stop(); err != nil {
			t.Errorf("stopping agentmem: %v", err)
		}
	})
	js, err := jetstream.New(d.Conn())
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.New(gateway.Config{Tokens: map[string]string{token: tenant, otherToken: otherTenant}},
		d.Conn(), js, events.DefaultTopology(), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := gw.Server()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	t.Cleanup(func() {
		shut, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(shut); err != nil {
			t.Errorf("shutting the HTTP server down: %v", err)
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serving HTTP: %v", err)
		}
	})
	return "http://" + l.Addr().String()
}

// requirePython returns the path of python3. It skips the test when python3 is missing, except
// in CI, whose script installs it: there a skip would hide the only check of the Python client.
func requirePython(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("python3 is not installed; .ci/run installs Debian's python3 before the tests")
		}
		t.Skip("python3 is not installed: the Python client is not tested (apt-get install python3)")
	}
	return path
}

// run runs name with args in dir, with env added to the environment, bounded by timeout, and
// returns its combined output. It fails the test with the output when the command fails.
func run(t *testing.T, dir string, timeout time.Duration, env []string, name string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("%s %s did not finish within %s\n%s", name, strings.Join(args, " "), timeout, out.Bytes())
	}
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out.Bytes())
	}
	return out.Bytes()
}
