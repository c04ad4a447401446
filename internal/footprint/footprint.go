// Package footprint says where a process's memory sits: the structures that report what they
// hold (the retriever's views of users and sessions, ingest's session states: each an estimate
// kept by its owner), the Go heap attributed to the components that allocated it (from the
// runtime's sampled heap profile: the embedded NATS server's block caches, the retriever, ingest,
// the NATS client's buffers), the Go runtime's own view (live heap, free and released spans) and
// the resident set the kernel counts (/proc/self/status on Linux).
//
// Pace (pace.go) sets the garbage collector's pace by a fixed headroom over the live heap, so
// that what a process keeps costs it about its own size rather than twice it.
//
// A process makes one Registry; the owners of structures add a source to it; /metrics
// (internal/metrics) and the inspector's overview (internal/inspector) read its Report.
// docs/operations.md ("Memory") says how to read the figures.
package footprint

import (
	"bufio"
	"os"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Usage is what a structure holds: an estimate of its bytes and a count of its items (views,
// turns, sessions; 0 when it has no natural unit).
type Usage struct {
	Bytes int64
	Items int64
}

// Structure is one structure's usage in a Report.
type Structure struct {
	Name  string `json:"name"`
	Help  string `json:"help"`
	Bytes int64  `json:"bytes"`
	Items int64  `json:"items"`
	// Unit names what Items counts ("views", "turns").
	Unit string `json:"unit,omitempty"`
}

// Registry holds the sources of a process. The zero value is ready; a nil *Registry accepts
// sources and reports nothing of them, so a worker built without one pays a nil check.
type Registry struct {
	mu      sync.Mutex
	sources []source

	heapMu  sync.Mutex
	heapAt  time.Time
	heap    []Component
	frameOf map[uintptr]string // a program counter's component, "" for none
}

type source struct {
	name, help, unit string
	f                func() Usage
}

// New returns an empty registry.
func New() *Registry { return &Registry{} }

// Add adds a source: f is called at each report (it must be safe to call from any goroutine,
// and cheap: it runs on every scrape). Sources of the same name are added up (one per worker
// of a kind). unit names what the usage's Items count.
func (r *Registry) Add(name, help, unit string, f func() Usage) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sources = append(r.sources, source{name: name, help: help, unit: unit, f: f})
}

// Structures returns the usage of every structure, sources of one name added up, by name.
func (r *Registry) Structures() []Structure {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	srcs := slices.Clone(r.sources)
	r.mu.Unlock()
	var out []Structure
	at := map[string]int{}
	for _, s := range srcs {
		u := s.f()
		i, ok := at[s.name]
		if !ok {
			i = len(out)
			at[s.name] = i
			out = append(out, Structure{Name: s.name, Help: s.help, Unit: s.unit})
		}
		out[i].Bytes += u.Bytes
		out[i].Items += u.Items
	}
	slices.SortFunc(out, func(a, b Structure) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Report is where the process's memory sits, at one moment.
type Report struct {
	// Structures are the owners' estimates (see Registry.Add).
	Structures []Structure `json:"structures"`
	// Heap is the Go heap in use attributed to the components that allocated it, largest first
	// (see Registry.Heap).
	Heap []Component `json:"heap"`
	// Process is the runtime's and the kernel's view of the whole process.
	Process Process `json:"process"`
}

// Report returns the registry's report. The heap's attribution is computed at most every 10
// seconds (it walks the runtime's heap profile).
func (r *Registry) Report() Report {
	return Report{Structures: r.Structures(), Heap: r.Heap(), Process: ReadProcess()}
}

// Process is the Go runtime's and the kernel's account of a process's memory, in bytes.
type Process struct {
	// Resident is the resident set (VmRSS), Anon its anonymous part (RssAnon: the Go heap,
	// stacks and the runtime's own), File its file-backed part (RssFile: the binary's pages).
	// 0 where /proc/self/status cannot be read (not Linux).
	Resident int64 `json:"resident"`
	Anon     int64 `json:"anon"`
	File     int64 `json:"file"`
	// HeapLive is the heap the last garbage collection found reachable; HeapObjects the heap
	// occupied by objects now (live ones and garbage not yet collected); HeapFree the heap
	// spans held free and not returned to the operating system (resident until the scavenger,
	// or debug.FreeOSMemory, returns them); HeapReleased the spans returned (not resident).
	HeapLive     int64 `json:"heap_live"`
	HeapObjects  int64 `json:"heap_objects"`
	HeapFree     int64 `json:"heap_free"`
	HeapReleased int64 `json:"heap_released"`
	// Stacks is the goroutine stacks; Runtime the runtime's own structures (its metadata,
	// profiling buckets, GC bookkeeping); Mapped all the memory the runtime mapped
	// (released spans included).
	Stacks  int64 `json:"stacks"`
	Runtime int64 `json:"runtime"`
	Mapped  int64 `json:"mapped"`
	// Limit is the Go runtime's soft memory limit (debug.SetMemoryLimit; math.MaxInt64 when
	// none is set); GOGC its garbage collection target percentage.
	Limit int64 `json:"limit"`
	GOGC  int   `json:"gogc"`
}

var runtimeSamples = []string{
	"/gc/heap/live:bytes",
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/free:bytes",
	"/memory/classes/heap/released:bytes",
	"/memory/classes/heap/stacks:bytes",
	"/memory/classes/os-stacks:bytes",
	"/memory/classes/metadata/other:bytes",
	"/memory/classes/metadata/mcache/inuse:bytes",
	"/memory/classes/metadata/mcache/free:bytes",
	"/memory/classes/metadata/mspan/inuse:bytes",
	"/memory/classes/metadata/mspan/free:bytes",
	"/memory/classes/profiling/buckets:bytes",
	"/memory/classes/other:bytes",
	"/memory/classes/heap/unused:bytes",
	"/memory/classes/total:bytes",
	"/gc/gogc:percent",
	"/gc/gomemlimit:bytes",
}

// ReadProcess reads the process's memory now.
func ReadProcess() Process {
	s := make([]metrics.Sample, len(runtimeSamples))
	for i, n := range runtimeSamples {
		s[i].Name = n
	}
	metrics.Read(s)
	v := map[string]int64{}
	for _, x := range s {
		if x.Value.Kind() == metrics.KindUint64 {
			v[x.Name] = int64(x.Value.Uint64())
		}
	}
	p := Process{
		HeapLive:     v["/gc/heap/live:bytes"],
		HeapObjects:  v["/memory/classes/heap/objects:bytes"] + v["/memory/classes/heap/unused:bytes"],
		HeapFree:     v["/memory/classes/heap/free:bytes"],
		HeapReleased: v["/memory/classes/heap/released:bytes"],
		Stacks:       v["/memory/classes/heap/stacks:bytes"] + v["/memory/classes/os-stacks:bytes"],
		Runtime: v["/memory/classes/metadata/other:bytes"] + v["/memory/classes/metadata/mcache/inuse:bytes"] +
			v["/memory/classes/metadata/mcache/free:bytes"] + v["/memory/classes/metadata/mspan/inuse:bytes"] +
			v["/memory/classes/metadata/mspan/free:bytes"] + v["/memory/classes/profiling/buckets:bytes"] +
			v["/memory/classes/other:bytes"],
		Mapped: v["/memory/classes/total:bytes"],
		Limit:  v["/gc/gomemlimit:bytes"],
		GOGC:   int(v["/gc/gogc:percent"]),
	}
	p.Resident, p.Anon, p.File = readStatus("/proc/self/status")
	return p
}

// readStatus returns VmRSS, RssAnon and RssFile of a /proc/<pid>/status file, in bytes (zeros
// when it cannot be read).
func readStatus(path string) (rss, anon, file int64) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		var dst *int64
		switch name {
		case "VmRSS":
			dst = &rss
		case "RssAnon":
			dst = &anon
		case "RssFile":
			dst = &file
		default:
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(val), " kB"), 10, 64)
		if err == nil {
			*dst = kb << 10
		}
	}
	return rss, anon, file
}
