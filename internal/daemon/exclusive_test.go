package daemon_test

import (
	"context"
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker"
	"github.com/agentmem/agentmem/internal/daemon"
	"github.com/agentmem/agentmem/internal/datadir"
	"github.com/agentmem/agentmem/internal/ingest"
)

// Two daemons on one data directory, even on two ports, would write the same JetStream files:
// the second fails at once, naming the first one's process and the directory.
func TestOneDaemonPerDataDirectory(t *testing.T) {
	dir := t.TempDir()
	cfg := func() daemon.Config {
		return daemon.Config{Broker: broker.Config{Listen: "127.0.0.1:-1", DataDir: dir}, Ingest: ingest.Config{IdleTimeout: -1}}
	}
	first, err := daemon.Start(context.Background(), cfg(), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	second, err := daemon.Start(context.Background(), cfg(), zerolog.Nop())
	if err == nil {
		_ = second.Stop()
		_ = first.Stop()
		t.Fatal("a second daemon started on the same data directory")
	}
	if !errors.Is(err, datadir.ErrLocked) || !strings.Contains(err.Error(), "process "+strconv.Itoa(os.Getpid())) || !strings.Contains(err.Error(), dir) {
		_ = first.Stop()
		t.Fatalf("second daemon: %q, want datadir.ErrLocked naming pid %d and %s", err, os.Getpid(), dir)
	}
	if err := first.Stop(); err != nil {
		t.Fatal(err)
	}
	again, err := daemon.Start(context.Background(), cfg(), zerolog.Nop())
	if err != nil {
		t.Fatalf("start after the first daemon stopped: %v", err)
	}
	if err := again.Stop(); err != nil {
		t.Fatal(err)
	}
}

// A taken --listen address is reported as such, at once.
func TestDaemonOnATakenAddress(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	d, err := daemon.Start(context.Background(), daemon.Config{Broker: broker.Config{Listen: l.Addr().String(), DataDir: t.TempDir()}}, zerolog.Nop())
	if err == nil {
		_ = d.Stop()
		t.Fatal("the daemon started on a taken address")
	}
	if !errors.Is(err, broker.ErrAddrInUse) || !strings.Contains(err.Error(), l.Addr().String()+" is taken") {
		t.Fatalf("start on a taken address: %q, want ErrAddrInUse naming %s", err, l.Addr())
	}
}
