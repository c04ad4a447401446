package python_test

import (
	"bytes"
	"cmp"
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
	base, rejected := startAgentmem(t)

	env := []string{
		"AGENTMEM_URL=" + base, "AGENTMEM_TENANT=" + tenant, "AGENTMEM_TOKEN=" + token,
		"AGENTMEM_OTHER_TENANT=" + otherTenant, "AGENTMEM_OTHER_TOKEN=" + otherToken,
		"AGENTMEM_REJECTED_SESSION=" + rejectedSession, "AGENTMEM_REJECTED_ID=" + rejected,
		"PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1", "NO_PROXY=127.0.0.1,localhost",
	}
	unittest(t, dir, env, python, "discover", "-v", "-s", "tests", "-t", ".")

	// The README's install recipe works offline with every python3 a newcomer may have first
	// on PATH, and the README's script runs on the installed copy.
	for _, py := range interpreters(t, python, "/usr/bin/python3") {
		t.Run("install with "+py, func(t *testing.T) {
			venv := installAsReadme(t, dir, py)
			unittest(t, dir, append(env, "AGENTMEM_INSTALLED=1"), venv, "-v", "tests.test_readme")

			// pip install -e: the package is imported from the checkout, and only it.
			pipEnv := []string{"PIP_NO_INDEX=1", "PIP_CONFIG_FILE=" + os.DevNull, "PIP_DISABLE_PIP_VERSION_CHECK=1", "PIP_NO_INPUT=1", "PYTHONDONTWRITEBYTECODE=1"}
			run(t, filepath.Dir(venv), 2*time.Minute, pipEnv, venv, "-m", "pip", "install", "-e", dir)
			got := strings.TrimSpace(string(run(t, t.TempDir(), time.Minute, nil, venv, "-c",
				"import os, agentmem, importlib.util as u; print(os.path.realpath(agentmem.__file__), u.find_spec('tests') is None)")))
			want, err := filepath.EvalSymlinks(filepath.Join(dir, "agentmem", "__init__.py"))
			if err != nil {
				t.Fatal(err)
			}
			if got != want+" True" {
				t.Errorf("after pip install -e, agentmem's file and whether tests is not importable: %q, want %q", got, want+" True")
			}
		})
	}
}

// unittest runs python -m unittest with args in dir and fails the test when a Python test
// fails or is skipped (a service test skips without AGENTMEM_URL).
func unittest(t *testing.T, dir string, env []string, python string, args ...string) {
	t.Helper()
	start := time.Now()
	out := run(t, dir, 4*time.Minute, env, python, append([]string{"-m", "unittest"}, args...)...)
	t.Logf("%s -m unittest %s (%s):\n%s", python, strings.Join(args, " "), time.Since(start).Round(time.Millisecond), out)
	summary := regexp.MustCompile(`(?m)^Ran (\d+) tests? in .*$`).Find(out)
	if summary == nil || bytes.Contains(out, []byte("skipped=")) || !bytes.Contains(out, []byte("\nOK")) {
		t.Fatalf("the Python tests did not all run and pass (%s); see the output above", summary)
	}
}

// readmeInstall returns the shell block of the README's install section.
func readmeInstall(t *testing.T, dir string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "<!-- python_test.go runs the next block -->\n```sh\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("README.md has no sh block after <!-- python_test.go runs the next block -->")
	}
	return block
}

// installAsReadme runs the README's install block, with python first on PATH as python3, in a
// temporary directory that holds clients/python (a link to dir) as the repository's root does,
// with pip's index off: offline, nothing can come from PyPI. It returns the venv's python.
func installAsReadme(t *testing.T, dir, python string) string {
	t.Helper()
	if err := exec.Command(python, "-c", "import ensurepip, venv").Run(); err != nil {
		msg := python + " has no ensurepip: python3 -m venv cannot make a venv with pip (apt-get install python3-venv)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg + "; CI installs it (.ci/run), so this is a missing install step")
		}
		t.Skip(msg)
	}
	root, bin := t.TempDir(), t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "clients"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dir, filepath.Join(root, "clients", "python")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(python, filepath.Join(bin, "python3")); err != nil {
		t.Fatal(err)
	}
	block := readmeInstall(t, dir)
	env := []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"),
		"PIP_NO_INDEX=1", "PIP_CONFIG_FILE=" + os.DevNull, "PIP_DISABLE_PIP_VERSION_CHECK=1",
		"PIP_ROOT_USER_ACTION=ignore", "PIP_NO_INPUT=1", "PYTHONDONTWRITEBYTECODE=1"}
	start := time.Now()
	out := run(t, root, 3*time.Minute, env, "sh", "-ec", block)
	t.Logf("%s with %s (%s):\n%s", strings.TrimSpace(block), python, time.Since(start).Round(time.Millisecond), out)
	return filepath.Join(root, ".venv", "bin", "python")
}

// interpreters returns the real executables of candidates that exist, each once: python3 on
// PATH may be another interpreter (pyenv's, say) than Debian's /usr/bin/python3.
func interpreters(t *testing.T, candidates ...string) []string {
	t.Helper()
	var found []string
	seen := map[string]bool{}
	for _, c := range candidates {
		out, err := exec.Command(c, "-c", "import os, sys; print(os.path.realpath(sys.executable))").Output()
		if err != nil {
			continue
		}
		real := strings.TrimSpace(string(out))
		if !seen[real] {
			seen[real] = true
			found = append(found, real)
		}
	}
	return found
}

// startAgentmem starts memoryd's workers on an embedded NATS server and the HTTP gateway, with
// bearer tokens, on a free loopback port, and returns the gateway's base URL. Cleanup stops the
// HTTP server, then the workers and the server.
// rejectedSession is the session of the turn startAgentmem has ingest reject.
const rejectedSession = "py-rejected"

// startAgentmem also publishes, over NATS as an agent may, a first turn without a user into
// rejectedSession of the tenant, which ingest rejects (the gateway would refuse it before
// storing it), and returns its event id: tests/test_status.py reads what became of it.
func startAgentmem(t *testing.T) (string, string) {
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
	const rejectedID = "py-rejected-turn"
	ev, err := events.NewEvent(rejectedID, events.TypeTurn, "python_test", time.Now(), events.Turn{Role: "user", Content: "who am I?"})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := events.EventMsg(tenant, rejectedSession, ev)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.PublishMsg(ctx, msg); err != nil {
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
	return "http://" + l.Addr().String(), rejectedID
}

// requirePython returns the path of python3 ($AGENTMEM_TEST_PYTHON when set, to try another
// interpreter). It skips the test when python3 is missing, except in CI, whose script installs
// it: there a skip would hide the only check of the Python client.
func requirePython(t *testing.T) string {
	t.Helper()
	name := cmp.Or(os.Getenv("AGENTMEM_TEST_PYTHON"), "python3")
	path, err := exec.LookPath(name)
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

// docs/clients.md shows the README's script, which TestPythonClient runs, as it is.
func TestDocsShowTheReadmeScript(t *testing.T) {
	block := func(path, after string) string {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		_, rest, ok := strings.Cut(string(data), after)
		_, rest, ok2 := strings.Cut(rest, "```python\n")
		script, _, ok3 := strings.Cut(rest, "```")
		if !ok || !ok2 || !ok3 {
			t.Fatalf("%s has no python block after %q", path, after)
		}
		return script
	}
	readme := block("README.md", "<!-- tests/test_readme.py runs the next block -->")
	if docs := block("../../docs/clients.md", "## Python"); docs != readme {
		t.Errorf("docs/clients.md's script differs from the README's:\n%s", docs)
	}
}
