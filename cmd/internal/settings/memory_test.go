package settings

import (
	"flag"
	"runtime/debug"
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
