package footprint

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
)

var garbage [][]byte

// At rest, the heap a load left free, and its garbage, go back to the operating system; without
// Release they stay (the scavenger returns them slowly, over minutes).
func TestReleaseAtRest(t *testing.T) {
	// A load: 64 MiB allocated, then dropped, collected and left free in the heap.
	for range 1024 {
		garbage = append(garbage, make([]byte, 64<<10))
	}
	garbage = nil
	runtime.GC()
	before := ReadProcess()
	if before.HeapFree < 32<<20 {
		t.Skipf("the runtime returned the free heap by itself (%d bytes free): nothing to measure", before.HeapFree)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Release(ctx, 20*time.Millisecond, zerolog.Nop())
	}()
	defer func() { cancel(); <-done }()
	brokertest.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		if p := ReadProcess(); p.HeapFree >= 8<<20 || p.HeapReleased < before.HeapReleased+32<<20 {
			return fmt.Errorf("at rest: free %d bytes, released %d (before: free %d, released %d)", p.HeapFree, p.HeapReleased, before.HeapFree, before.HeapReleased)
		}
		return nil
	})
}

// A process that collected more than once since the last look is not at rest: nothing is
// forced on it; once it stops collecting, its spare memory goes back.
func TestReleaseLeavesABusyProcess(t *testing.T) {
	calls := make(chan struct{}, 16)
	freeOSMemory = func() { calls <- struct{}{}; debug.FreeOSMemory() }
	t.Cleanup(func() { freeOSMemory = debug.FreeOSMemory })
	ticks := make(chan time.Time)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		release(ctx, ticks, zerolog.Nop())
	}()
	defer func() { cancel(); <-done }()
	spare := func() {
		for range 256 {
			garbage = append(garbage, make([]byte, 64<<10)) // 16 MiB to give back, at rest
		}
		garbage = nil
	}
	for range 3 {
		spare()
		runtime.GC()
		runtime.GC() // busy: two collections since the last look
		ticks <- time.Now()
	}
	// At rest: no collection since the last look (none can start: collections are off until
	// the release forces one), 16 MiB of garbage to give back.
	old := debug.SetGCPercent(-1)
	spare()
	ticks <- time.Now()
	ticks <- time.Now() // the look after the release (a tick is taken once the last look is done)
	debug.SetGCPercent(old)
	cancel()
	<-done
	if n := len(calls); n != 1 {
		t.Fatalf("memory was released %d times, want once: at rest, not while busy", n)
	}
}
