package settings

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/footprint"
)

// MinMemoryLimit is the smallest --memory-limit accepted: below it memoryd's base (the NATS
// server's buffers, ingest's sessions, the word tables: about 100 MiB of heap after a load) would
// leave nothing for the users' views.
const MinMemoryLimit = 256 << 20

// Memory holds the memory flags every long-running command shares.
type Memory struct {
	// Limit is --memory-limit in bytes (0: none).
	Limit Size
	// Release is --idle-release: how often a process looks whether it is at rest, and then gives
	// its free heap back (footprint.Release); 0 or negative: never.
	Release time.Duration
	// Headroom is --gc-headroom: how far the heap may grow over its live part between
	// collections (footprint.Pace); 0: Go's own pace (GOGC).
	Headroom Size

	unpace func() // stops the pacer Apply started (tests)
}

// BindMemory registers --memory-limit, --idle-release and --gc-headroom.
func BindMemory(fs *flag.FlagSet) *Memory {
	m := &Memory{}
	fs.Var(&m.Limit, "memory-limit", "soft limit of the process's memory, e.g. 1GiB or 800MB (0: none): the Go runtime's memory limit, and the cap of the retriever's users' views is derived from it (docs/operations.md, Memory)")
	fs.DurationVar(&m.Release, "idle-release", 30*time.Second, "how often the process looks whether it is at rest (no garbage collection since the last look) and then returns its free memory to the system (0: never)")
	m.Headroom = DefaultHeadroom
	fs.Var(&m.Headroom, "gc-headroom", "how far the Go heap may grow over its live part between collections, e.g. 32MiB (at least half the live heap, at most what GOGC=100 allows; 0: Go's own pace, GOGC): a loaded byte then costs one and a half bytes of memory at most, not two (docs/operations.md, Memory). Ignored when GOGC is set in the environment")
	return m
}

// DefaultHeadroom is --gc-headroom's default: with 20 users of 500 turns loaded after a
// restart, 3.4-3.9 KB of resident memory per loaded turn against 5.0-5.6 with Go's own pace, and
// their first queries about 3 ms slower (docs/benchmarks.md, "The collector's pace").
const DefaultHeadroom = 16 << 20

// PaceFloor is the least headroom the pacer leaves, in percent of the live heap: a heap of
// gigabytes is not collected for every 16 MiB allocated. At 25 % a million turns posted to a
// process near its limit went 25-35 % slower (collections four times as often as GOGC=100's);
// at 50 % as fast as with Go's pace, within the runs' spread.
const PaceFloor = 50

// Apply paces the garbage collector by --gc-headroom (footprint.Pace) unless it is 0 or GOGC is
// set in the environment, and sets the Go runtime's soft memory limit to --memory-limit, when
// one is given (the GOMEMLIMIT environment variable otherwise keeps its effect). It fails on a
// limit below MinMemoryLimit.
func (m *Memory) Apply(log zerolog.Logger) error {
	if m.Headroom > 0 && os.Getenv("GOGC") == "" {
		m.unpace = footprint.Pace(int64(m.Headroom), PaceFloor)
		log.Info().Str("headroom", m.Headroom.String()).Int("floor_percent", PaceFloor).Msg("garbage collector paced by a fixed headroom")
	}
	if m.Limit == 0 {
		return nil
	}
	if m.Limit < MinMemoryLimit {
		return fmt.Errorf("--memory-limit %s: at least %s: below it the process's base (the NATS server's buffers, ingest's sessions, the word tables) leaves nothing for the users' views", m.Limit, Size(MinMemoryLimit))
	}
	debug.SetMemoryLimit(int64(m.Limit))
	log.Info().Str("limit", m.Limit.String()).Msg("memory limit set")
	return nil
}

// Start returns memory to the system while the process is at rest (--idle-release), in the
// background until ctx ends.
func (m *Memory) Start(ctx context.Context, log zerolog.Logger) {
	go footprint.Release(ctx, m.Release, log.With().Str("component", "memory").Logger())
}

// Size is a number of bytes given as a flag: plain (1073741824) or with a unit, decimal (KB, MB,
// GB) or binary (KiB, MiB, GiB), case ignored.
type Size int64

var sizeUnits = []struct {
	suffix string
	mult   int64
}{
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
	{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12},
	{"b", 1},
}

// Set parses s.
func (z *Size) Set(s string) error {
	v := strings.ToLower(strings.TrimSpace(s))
	mult := int64(1)
	for _, u := range sizeUnits {
		if n, ok := strings.CutSuffix(v, u.suffix); ok {
			v, mult = strings.TrimSpace(n), u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 || math.IsInf(f, 0) || f*float64(mult) > math.MaxInt64/2 {
		return fmt.Errorf("%q is not a size: want bytes, or a number with KB, MB, GB, KiB, MiB or GiB", s)
	}
	*z = Size(f * float64(mult))
	return nil
}

// String writes the size in the largest binary unit that divides it, or in bytes.
func (z Size) String() string {
	for _, u := range []struct {
		name string
		mult int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if z != 0 && int64(z)%u.mult == 0 {
			return strconv.FormatInt(int64(z)/u.mult, 10) + u.name
		}
	}
	return strconv.FormatInt(int64(z), 10)
}
