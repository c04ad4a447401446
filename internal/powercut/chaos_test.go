//go:build chaos

package powercut

import (
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/lazyfs"
)

// TestPowerCutChaos is make chaos's staged power-cut run: a baseline with no fault, 20 cuts with the default durability
// on a journaling filesystem's model (nothing acknowledged lost or duplicated), cuts with
// --durability interval (acknowledged turns lost, counted), kill -9 alone with each durability
// (nothing lost: the page cache survives a process), and cuts on a filesystem that makes a new
// name durable only when its directory is fsynced (POSIX's letter), measured and logged.
func TestPowerCutChaos(t *testing.T) {
	// The baseline: the same clients for 20 s with no fault. The differences from the replay in
	// counters and fact history it logs are those the live pipeline makes by itself (rarely: a
	// restated fact's provenance); the cut runs make many more.
	t.Run("baseline", func(t *testing.T) {
		out := run(t, config{durability: "sync", entries: lazyfs.AnySync, publishFor: 20 * time.Second, seed: 10})
		report(t, out)
		assertNothingLost(t, out)
	})
	t.Run("sync", func(t *testing.T) {
		out := run(t, config{durability: "sync", entries: lazyfs.AnySync, cuts: 20, seed: 11})
		report(t, out)
		assertNothingLost(t, out)
	})
	t.Run("interval", func(t *testing.T) {
		out := run(t, config{durability: "interval", entries: lazyfs.AnySync, cuts: 5, seed: 12})
		report(t, out)
		assertLoses(t, out)
	})
	for _, d := range []string{"sync", "interval"} {
		t.Run("kill/"+d, func(t *testing.T) {
			out := run(t, config{durability: d, entries: lazyfs.AnySync, cuts: 5, seed: 13, killOnly: true})
			report(t, out)
			assertNothingLost(t, out)
		})
	}
	// Measured, not asserted: nats-server fsyncs a stream's directory when it writes the
	// stream's metadata and a consumer's directory when it replaces its state, but never the
	// directories above them nor a stream's msgs directory when it creates a message block.
	t.Run("posix/fresh", func(t *testing.T) {
		out := run(t, config{durability: "sync", entries: lazyfs.DirSync, cuts: 3, seed: 14, measureOnly: true})
		report(t, out)
	})
	t.Run("posix/synced-start", func(t *testing.T) {
		out := run(t, config{durability: "sync", entries: lazyfs.DirSync, cuts: 5, seed: 15, syncedStart: true, measureOnly: true})
		report(t, out)
	})
}
