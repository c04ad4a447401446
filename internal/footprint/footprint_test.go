package footprint

import (
	"os"
	"runtime"
	"strings"
	"testing"
)

// Sources of one name add up, and a nil registry takes sources and reports none.
func TestStructuresAddUp(t *testing.T) {
	r := New()
	r.Add("views", "user views", "views", func() Usage { return Usage{Bytes: 100, Items: 1} })
	r.Add("views", "user views", "views", func() Usage { return Usage{Bytes: 50, Items: 2} })
	r.Add("a-first", "sorted first", "", func() Usage { return Usage{Bytes: 7} })
	got := r.Structures()
	if len(got) != 2 || got[0].Name != "a-first" || got[1].Name != "views" {
		t.Fatalf("structures %+v", got)
	}
	if got[1].Bytes != 150 || got[1].Items != 3 || got[1].Unit != "views" {
		t.Fatalf("views %+v, want 150 bytes and 3 views", got[1])
	}
	var none *Registry
	none.Add("x", "", "", func() Usage { return Usage{Bytes: 1} })
	if none.Structures() != nil || none.Heap() != nil {
		t.Fatal("a nil registry reported something")
	}
}

// The process's figures come from the runtime and, on Linux, the kernel.
func TestReadProcess(t *testing.T) {
	runtime.GC() // the live heap is the last collection's
	p := ReadProcess()
	if p.HeapLive <= 0 || p.HeapObjects <= 0 || p.Mapped < p.HeapObjects || p.Stacks <= 0 {
		t.Fatalf("runtime figures %+v", p)
	}
	if p.GOGC <= 0 || p.Limit <= 0 {
		t.Fatalf("GOGC %d, limit %d", p.GOGC, p.Limit)
	}
	if _, err := os.Stat("/proc/self/status"); err == nil {
		if p.Resident <= 0 || p.Anon <= 0 || p.Anon > p.Resident {
			t.Fatalf("resident %d, anon %d", p.Resident, p.Anon)
		}
	}
}

var held [][]byte

//go:noinline
func holdForTest(n int) {
	for range n {
		held = append(held, make([]byte, 64<<10))
	}
}

// The heap a function allocated and keeps is attributed to its component, and what no rule
// names to Other.
func TestHeapByComponent(t *testing.T) {
	old := runtime.MemProfileRate
	runtime.MemProfileRate = 1 // every allocation of the test is sampled
	t.Cleanup(func() { runtime.MemProfileRate = old; held = nil })
	holdForTest(128) // 8 MiB
	runtime.GC()
	runtime.GC() // the profile shows the heap of the cycle before the last
	rules := []Rule{{"github.com/agentmem/agentmem/internal/footprint.holdForTest", "holder"}}
	comps := attribute(rules, map[uintptr]string{})
	byName := map[string]int64{}
	for _, c := range comps {
		byName[c.Name] = c.Bytes
	}
	if got := byName["holder"]; got < 8<<20 || got > 9<<20 {
		t.Fatalf("holder: %d bytes, want 8 MiB (components %+v)", got, comps)
	}
	if byName[Other] <= 0 {
		t.Fatalf("nothing attributed to %q: %+v", Other, comps)
	}
	if comps[0].Name != "holder" && !strings.Contains(comps[0].Name, Other) {
		t.Fatalf("largest first: %+v", comps)
	}
}
