package settings

import (
	"flag"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

func TestSize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Size
	}{
		{"0", 0}, {"1073741824", 1 << 30}, {"512MiB", 512 << 20}, {"1GiB", 1 << 30}, {"1.5 GiB", 3 << 29},
		{"800MB", 800e6}, {"2gb", 2e9}, {"64KiB", 64 << 10}, {"100b", 100},
	} {
		var z Size
		if err := z.Set(c.in); err != nil || z != c.want {
			t.Errorf("%q: %d, %v; want %d", c.in, z, err, c.want)
		}
	}
	for _, bad := range []string{"", "lots", "-1GiB", "1XB", "GiB", "1e30GiB"} {
		var z Size
		if err := z.Set(bad); err == nil || !strings.Contains(err.Error(), "is not a size") {
			t.Errorf("%q: %v, want an error saying it is not a size", bad, err)
		}
	}
	if s := Size(512 << 20).String(); s != "512MiB" {
		t.Errorf("512 MiB prints %q", s)
	}
}

// --memory-limit sets the runtime's soft limit; one too small is refused with the minimum.
func TestMemoryLimit(t *testing.T) {
	old := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(old) })
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	m := BindMemory(fs)
	if err := Parse(fs, []string{"--memory-limit", "768MiB"}); err != nil {
		t.Fatal(err)
	}
	if err := m.Apply(zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
	if m.unpace != nil {
		t.Cleanup(m.unpace)
	}
	if got := debug.SetMemoryLimit(-1); got != 768<<20 {
		t.Fatalf("runtime limit %d, want 768 MiB", got)
	}
	fs = flag.NewFlagSet("x", flag.ContinueOnError)
	m = BindMemory(fs)
	if err := Parse(fs, []string{"--memory-limit", "100MiB"}); err != nil {
		t.Fatal(err)
	}
	if err := m.Apply(zerolog.Nop()); err == nil || !strings.Contains(err.Error(), "--memory-limit 100MiB: at least 256MiB") {
		t.Fatalf("a 100 MiB limit: %v", err)
	}
}

func gcPercent() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}

// --gc-headroom paces the collector (a headroom of one byte: the floor at once); 0, or GOGC in
// the environment, leaves Go's own pace.
func TestGCHeadroom(t *testing.T) {
	prior := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(prior) })
	apply := func(args ...string) *Memory {
		t.Helper()
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		m := BindMemory(fs)
		if err := Parse(fs, args); err != nil {
			t.Fatal(err)
		}
		if err := m.Apply(zerolog.Nop()); err != nil {
			t.Fatal(err)
		}
		return m
	}
	t.Setenv("GOGC", "")
	if m := apply(); m.Headroom != DefaultHeadroom || m.unpace == nil {
		t.Fatalf("default: headroom %s, paced %t", m.Headroom, m.unpace != nil)
	} else {
		m.unpace()
	}
	m := apply("--gc-headroom", "1")
	if m.unpace == nil {
		t.Fatal("--gc-headroom 1: not paced")
	}
	if got := gcPercent(); got != PaceFloor {
		t.Fatalf("--gc-headroom 1: GOGC %d, want the floor %d", got, PaceFloor)
	}
	m.unpace()
	if got := gcPercent(); got != 100 {
		t.Fatalf("GOGC %d once the pacer stopped, want 100", got)
	}
	if m := apply("--gc-headroom", "0"); m.unpace != nil {
		t.Fatal("--gc-headroom 0: paced")
	}
	t.Setenv("GOGC", "100")
	if m := apply("--gc-headroom", "1"); m.unpace != nil || gcPercent() != 100 {
		t.Fatalf("GOGC set: paced %t, GOGC %d", m.unpace != nil, gcPercent())
	}
}
