package broker_test

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker"
	"github.com/agentmem/agentmem/internal/datadir"
)

// A taken client address fails Start at once with an error naming it, not after ReadyTimeout
// with "not ready"; the data directory is free again afterwards.
func TestStartOnATakenAddressSaysSo(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	addr := l.Addr().String()
	dir := t.TempDir()
	b, err := broker.Start(broker.Config{Listen: addr, DataDir: dir}, zerolog.Nop())
	if err == nil {
		b.Shutdown()
		t.Fatalf("Start on %s, which another listener holds, succeeded", addr)
	}
	if !errors.Is(err, broker.ErrAddrInUse) || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("Start on a taken address: %q, want ErrAddrInUse naming %s", err, addr)
	}
	b, err = broker.Start(broker.Config{Listen: "127.0.0.1:-1", DataDir: dir}, zerolog.Nop())
	if err != nil {
		t.Fatalf("Start on the same data after the failure: %v", err)
	}
	b.Shutdown()
}

// One server per data directory: a second one fails at once naming the holder; after Shutdown
// the directory is free.
func TestOneServerPerDataDirectory(t *testing.T) {
	dir := t.TempDir()
	first, err := broker.Start(broker.Config{Listen: "127.0.0.1:-1", DataDir: dir}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	second, err := broker.Start(broker.Config{Listen: "127.0.0.1:-1", DataDir: dir}, zerolog.Nop())
	if err == nil {
		second.Shutdown()
		first.Shutdown()
		t.Fatal("a second server started on the same data directory")
	}
	if !errors.Is(err, datadir.ErrLocked) || !strings.Contains(err.Error(), "process "+strconv.Itoa(os.Getpid())) {
		first.Shutdown()
		t.Fatalf("second server: %v, want datadir.ErrLocked naming pid %d", err, os.Getpid())
	}
	first.Shutdown()
	second, err = broker.Start(broker.Config{Listen: "127.0.0.1:-1", DataDir: dir}, zerolog.Nop())
	if err != nil {
		t.Fatalf("Start after the first server shut down: %v", err)
	}
	second.Shutdown()
}

// A fatal error of the server while it starts (here JetStream cannot create its directory) fails
// Start with the server's message, instead of a server without JetStream.
func TestStartFailsOnAFatalServerError(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "jetstream"), []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := broker.Start(broker.Config{Listen: "127.0.0.1:-1", DataDir: dir}, zerolog.Nop())
	if err == nil {
		b.Shutdown()
		t.Fatal("Start succeeded with an unusable JetStream directory")
	}
	if !strings.Contains(err.Error(), "JetStream") {
		t.Fatalf("Start: %q, want the server's JetStream error", err)
	}
}
