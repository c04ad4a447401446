package mcpserver_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmem/agentmem/internal/mcpserver"
)

// syncBuffer is a bytes.Buffer safe for the writer goroutine of exec and the test.
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

// cleanEnv is the environment without AGENTMEM_* variables, so that only the flags configure
// the command under test.
func cleanEnv() []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "AGENTMEM_") })
}

// buildMemctl builds ./cmd/memctl into a temporary directory.
func buildMemctl(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "memctl")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/agentmem/agentmem/cmd/memctl")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building memctl: %v\n%s", err, out)
	}
	help := exec.Command(bin, "mcp", "--help")
	help.Env = cleanEnv()
	out, _ := help.CombinedOutput()
	if !strings.Contains(string(out), "-session") {
		t.Skip("memctl has no mcp subcommand yet: add mcpCommand(out) to the subcommands in cmd/memctl/main.go")
	}
	return bin
}

// TestMemctlMCPOverStdio runs the real `memctl mcp` binary against an in-process agentmem and
// talks to it through the SDK's command transport (stdin/stdout).
func TestMemctlMCPOverStdio(t *testing.T) {
	if testing.Short() {
		t.Skip("builds memctl")
	}
	bin := buildMemctl(t)
	d, _ := startDaemon(t)

	cmd := exec.Command(bin, "mcp", "--nats", d.URL(), "--tenant", "acme", "--user", "alice", "--session", "s1", "--log-level", "debug")
	cmd.Env = cleanEnv()
	var stderr syncBuffer
	cmd.Stderr = &stderr
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connecting to memctl mcp: %v\nstderr:\n%s", err, stderr.String())
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = cs.Close()
		}
	})

	checkToolList(t, cs)
	rem := callOK[mcpserver.RememberOutput](t, cs, "remember", map[string]any{"content": "My favourite editor is Helix"})
	got := callOK[mcpserver.RecallOutput](t, cs, "recall", map[string]any{"query": "favourite editor"})
	if !slices.Contains(ids(got), rem.ID) {
		t.Fatalf("recall %+v does not find %s", got.Entries, rem.ID)
	}
	if msg := callErr(t, cs, "forget_user", map[string]any{"confirm": true, "user": "bob"}); !strings.Contains(msg, "validating") {
		t.Fatalf("forget_user naming a user: %s", msg)
	}

	// Closing stdin ends the server cleanly; its logs went to stderr, never into the protocol.
	closed = true
	if err := cs.Close(); err != nil {
		t.Fatalf("memctl mcp did not exit cleanly: %v\nstderr:\n%s", err, stderr.String())
	}
	if logs := stderr.String(); !strings.Contains(logs, "serving MCP") {
		t.Fatalf("stderr lacks the start-up log:\n%s", logs)
	}
}
