package broker

import (
	"strings"
	"testing"
	"time"
)

// The default durability syncs every write (nats-server's sync_interval: always); interval keeps
// the server's periodic sync; anything else is refused with the values it takes.
func TestDurability(t *testing.T) {
	for _, tc := range []struct {
		in     Durability
		always bool
	}{
		{"", true},
		{DurabilitySync, true},
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
