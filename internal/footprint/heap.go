package footprint

import (
	"math"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Component is the part of the Go heap in use that one component allocated.
type Component struct {
	Name  string `json:"name"`
	Bytes int64  `json:"bytes"`
}

// Rule names the component of a function: the first rule whose Prefix the function's full name
// (package path, then name) starts with.
type Rule struct {
	Prefix, Component string
}

// Other is the component of the heap no rule names (the runtime's start-up, the metrics
// registry, the Go standard library's caches).
const Other = "other"

// Rules are the components of agentmem's processes. An allocation belongs to the innermost
// frame of its stack that a rule names: the keyword index (internal/rank) even when the
// retriever called it, the retriever for what it decoded through pkg/events or a session state
// it replayed (neither named), ingest for the session states it keeps.
var Rules = []Rule{
	{"github.com/nats-io/nats-server/", "nats-server"},
	{"github.com/nats-io/nats.go", "nats-client"},
	{"github.com/agentmem/agentmem/internal/rank.", "retriever-index"},
	{"github.com/agentmem/agentmem/internal/retrieve.", "retriever"},
	{"github.com/agentmem/agentmem/internal/ingest.", "ingest"},
	{"github.com/agentmem/agentmem/internal/compress.", "compressor"},
	{"github.com/agentmem/agentmem/internal/summarize.", "compressor"},
	{"github.com/agentmem/agentmem/internal/extract.", "extractor"},
	{"github.com/agentmem/agentmem/internal/embedder.", "embedder"},
	{"github.com/agentmem/agentmem/internal/gateway.", "http"},
	{"github.com/agentmem/agentmem/internal/inspector.", "http"},
	{"net/http.", "http"},
	{"github.com/agentmem/agentmem/internal/search.", "tables"},
	{"github.com/agentmem/agentmem/internal/thesaurus.", "tables"},
	{"github.com/agentmem/agentmem/internal/embed/", "tables"},
	{"github.com/agentmem/agentmem/pkg/memory.", "tables"},
}

// heapTTL is how long an attribution of the heap is reused.
const heapTTL = 10 * time.Second

// Heap returns the Go heap in use by component (Rules), largest first, from the runtime's heap
// profile: the heap as the last garbage collection found it, each allocation sampled once per
// runtime.MemProfileRate bytes (512 KiB by default) and scaled as pprof scales it, so small
// components are estimates. It is computed at most every 10 seconds.
func (r *Registry) Heap() []Component {
	if r == nil {
		return nil
	}
	r.heapMu.Lock()
	defer r.heapMu.Unlock()
	if r.heap != nil && time.Since(r.heapAt) < heapTTL {
		return r.heap
	}
	if r.frameOf == nil {
		r.frameOf = map[uintptr]string{}
	}
	r.heap, r.heapAt = attribute(Rules, r.frameOf), time.Now()
	return r.heap
}

// attribute reads the heap profile and sums its in-use bytes by the component of rules that
// each allocation's innermost named frame has; frameOf caches a program counter's component.
func attribute(rules []Rule, frameOf map[uintptr]string) []Component {
	var recs []runtime.MemProfileRecord
	n, _ := runtime.MemProfile(nil, true)
	for {
		recs = make([]runtime.MemProfileRecord, n+64)
		var ok bool
		if n, ok = runtime.MemProfile(recs, true); ok {
			recs = recs[:n]
			break
		}
	}
	rate := int64(runtime.MemProfileRate)
	sums := map[string]int64{}
	for i := range recs {
		rec := &recs[i]
		_, bytes := scaleHeapSample(rec.InUseObjects(), rec.InUseBytes(), rate)
		if bytes <= 0 {
			continue
		}
		name := Other
		for _, pc := range rec.Stack() {
			c, ok := frameOf[pc]
			if !ok {
				c = componentOf(rules, pc)
				frameOf[pc] = c
			}
			if c != "" {
				name = c
				break
			}
		}
		sums[name] += bytes
	}
	out := make([]Component, 0, len(sums))
	for name, b := range sums {
		out = append(out, Component{Name: name, Bytes: b})
	}
	slices.SortFunc(out, func(a, b Component) int {
		if a.Bytes != b.Bytes {
			if a.Bytes > b.Bytes {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// componentOf returns the component of the innermost function at pc (inlined calls first) that
// a rule names, or "".
func componentOf(rules []Rule, pc uintptr) string {
	frames := runtime.CallersFrames([]uintptr{pc})
	for {
		f, more := frames.Next()
		for _, r := range rules {
			if strings.HasPrefix(f.Function, r.Prefix) {
				return r.Component
			}
		}
		if !more {
			return ""
		}
	}
}

// scaleHeapSample undoes the sampling of a heap profile record, as runtime/pprof does: an
// allocation of size s is sampled with probability 1 - exp(-s/rate).
func scaleHeapSample(count, size, rate int64) (int64, int64) {
	if count == 0 || size == 0 {
		return 0, 0
	}
	if rate <= 1 {
		return count, size
	}
	avg := float64(size) / float64(count)
	scale := 1 / (1 - math.Exp(-avg/float64(rate)))
	return int64(float64(count) * scale), int64(float64(size) * scale)
}
