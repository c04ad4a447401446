package footprint

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"github.com/rs/zerolog"
)

// freeOSMemory is debug.FreeOSMemory (a test counts its calls).
var freeOSMemory = debug.FreeOSMemory

// MinRelease is the free heap below which Release leaves the heap alone: returning a few
// megabytes is not worth a garbage collection.
const MinRelease = 4 << 20

// Release gives memory back to the operating system while the process is at rest, until ctx
// ends: every interval it looks whether a garbage collection ran since its last look, and when
// none did (the process allocated less than the heap's growth target since: it is at rest; Go
// forces one every two minutes, which it ignores) and the heap holds more than MinRelease bytes
// that are free or garbage, it calls debug.FreeOSMemory: a collection, then every free span
// returned. The runtime's scavenger alone returns free spans slowly and keeps the garbage of
// the last load; the embedded NATS server's block buffers, pooled, go at the second collection,
// so a process at rest settles within two intervals. interval ≤ 0 releases nothing.
func Release(ctx context.Context, interval time.Duration, log zerolog.Logger) {
	if interval <= 0 {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	release(ctx, t.C, log)
}

// release is Release, looking at each tick.
func release(ctx context.Context, ticks <-chan time.Time, log zerolog.Logger) {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/memory/classes/heap/free:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}}
	read := func() (cycles, spare uint64) {
		metrics.Read(s)
		cycles = s[0].Value.Uint64()
		free, objects, live := s[1].Value.Uint64(), s[2].Value.Uint64(), s[3].Value.Uint64()
		return cycles, free + objects - min(objects, live)
	}
	last, _ := read()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticks:
		}
		cycles, spare := read()
		if cycles-last <= 1 && spare > MinRelease {
			start := time.Now()
			freeOSMemory()
			log.Debug().Uint64("spare_bytes", spare).Dur("took", time.Since(start)).Msg("at rest: memory returned to the system")
			cycles, _ = read()
		}
		last = cycles
	}
}
