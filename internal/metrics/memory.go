package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentmem/agentmem/internal/footprint"
)

// Footprint is the registry of the structures that report the memory they hold (package
// footprint); its report is on /metrics (agentmem_memory_*) and in the inspector's overview. Nil
// on a nil Metrics: adding a source to it does nothing.
func (m *Metrics) Footprint() *footprint.Registry {
	if m == nil {
		return nil
	}
	return m.footprint
}

var (
	memBytesDesc = prometheus.NewDesc(Namespace+"_memory_bytes",
		"Memory a structure holds, by structure (its owner's estimate: retrieve_user_turns, retrieve_user_index, retrieve_user_vectors, retrieve_session_views, ingest_sessions, …).",
		[]string{"structure"}, nil)
	memItemsDesc = prometheus.NewDesc(Namespace+"_memory_items",
		"Items a structure holds (views, turns, vectors, sessions), by structure.",
		[]string{"structure"}, nil)
	memHeapDesc = prometheus.NewDesc(Namespace+"_memory_heap_bytes",
		"Go heap in use by the component that allocated it (nats-server, nats-client, retriever, retriever-index, ingest, http, tables, other), from the runtime's sampled heap profile as of the last garbage collection; refreshed at most every 10 s.",
		[]string{"component"}, nil)
	memProcessDesc = prometheus.NewDesc(Namespace+"_memory_process_bytes",
		"The process's memory by kind: resident, anon and file (the kernel's resident set and its parts), heap_live, heap_objects, heap_free (held, not returned to the OS), heap_released, stacks, runtime, mapped (the Go runtime's), limit (its soft memory limit).",
		[]string{"kind"}, nil)
)

// memoryCollector reports a footprint registry at each scrape.
type memoryCollector struct{ reg *footprint.Registry }

func (c memoryCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- memBytesDesc
	ch <- memItemsDesc
	ch <- memHeapDesc
	ch <- memProcessDesc
}

func (c memoryCollector) Collect(ch chan<- prometheus.Metric) {
	rep := c.reg.Report()
	for _, s := range rep.Structures {
		ch <- prometheus.MustNewConstMetric(memBytesDesc, prometheus.GaugeValue, float64(s.Bytes), s.Name)
		ch <- prometheus.MustNewConstMetric(memItemsDesc, prometheus.GaugeValue, float64(s.Items), s.Name)
	}
	for _, h := range rep.Heap {
		ch <- prometheus.MustNewConstMetric(memHeapDesc, prometheus.GaugeValue, float64(h.Bytes), h.Name)
	}
	p := rep.Process
	for _, k := range []struct {
		kind string
		v    int64
	}{
		{"resident", p.Resident}, {"anon", p.Anon}, {"file", p.File},
		{"heap_live", p.HeapLive}, {"heap_objects", p.HeapObjects}, {"heap_free", p.HeapFree},
		{"heap_released", p.HeapReleased}, {"stacks", p.Stacks}, {"runtime", p.Runtime},
		{"mapped", p.Mapped}, {"limit", p.Limit},
	} {
		ch <- prometheus.MustNewConstMetric(memProcessDesc, prometheus.GaugeValue, float64(k.v), k.kind)
	}
}
