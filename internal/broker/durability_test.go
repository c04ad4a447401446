package broker

import (
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// The default durability syncs every write of a stream in the default persist mode (nats-server's
// sync_interval: always), as sync-all does; interval keeps the server's periodic sync; anything
// else is refused with the values it takes.
func TestDurability(t *testing.T) {
	for _, tc := range []struct {
		in     Durability
		always bool
	}{
		{"", true},
		{DurabilitySync, true},
		{"SYNC-ALL", true},
		{DurabilityInterval, false},
	} {
		opts, err := options(Config{DataDir: t.TempDir(), Durability: tc.in})
		if err != nil {
			t.Fatal(err)
		}
		if opts.SyncAlways != tc.always {
			t.Fatalf("durability %q: SyncAlways %v, want %v", tc.in, opts.SyncAlways, tc.always)
		}
	}
	opts, err := options(Config{DataDir: t.TempDir(), Durability: DurabilityInterval, SyncInterval: 5 * time.Second})
	if err != nil || opts.SyncInterval != 5*time.Second {
		t.Fatalf("interval of 5s: %v, %v", opts.SyncInterval, err)
	}
	if _, err := options(Config{DataDir: t.TempDir(), Durability: "fast"}); err == nil || !strings.Contains(err.Error(), "want sync") {
		t.Fatalf("durability fast: %v", err)
	}
}

// A start after ShutdownClean finds the directory stopped cleanly, and that start counts as
// unclean until its own ShutdownClean: a start after a plain Shutdown (or a crash) does not.
func TestStartedClean(t *testing.T) {
	dir := t.TempDir()
	start := func() *Broker {
		t.Helper()
		b, err := Start(Config{Listen: "127.0.0.1:-1", DataDir: dir}, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	b := start()
	if b.StartedClean() {
		t.Fatal("a new data directory counts as stopped cleanly")
	}
	if err := b.ShutdownClean(); err != nil {
		t.Fatal(err)
	}
	b = start()
	if !b.StartedClean() {
		t.Fatal("the start after ShutdownClean did not find the clean-stop mark")
	}
	b.Shutdown()
	b = start()
	defer b.Shutdown()
	if b.StartedClean() {
		t.Fatal("the start after a plain Shutdown counts as clean: the mark outlived the start that took it")
	}
}
