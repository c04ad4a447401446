package metrics

import (
	"os"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// FilesCollector reports how many regular files of dir end in suffix and their bytes, read at
// each scrape, as agentmem_<name>_files and agentmem_<name>_bytes (what names them in the help).
// memoryd reports the directory of its stored views with it (agentmem_stored_view_files,
// agentmem_stored_view_bytes), which no stream's size counts. A directory that cannot be read
// reports nothing.
func FilesCollector(dir, suffix, name, what string) prometheus.Collector {
	return &filesCollector{dir: dir, suffix: suffix,
		files: prometheus.NewDesc(Namespace+"_"+name+"_files", "Files of "+what+".", nil, nil),
		bytes: prometheus.NewDesc(Namespace+"_"+name+"_bytes", "Bytes of the files of "+what+".", nil, nil),
	}
}

type filesCollector struct {
	dir, suffix  string
	files, bytes *prometheus.Desc
}

func (c *filesCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.files
	ch <- c.bytes
}

func (c *filesCollector) Collect(ch chan<- prometheus.Metric) {
	entries, err := os.ReadDir(c.dir)
	if err != nil {
		return
	}
	var n, size int64
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), c.suffix) {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // removed since the listing
		}
		n++
		size += info.Size()
	}
	ch <- prometheus.MustNewConstMetric(c.files, prometheus.GaugeValue, float64(n))
	ch <- prometheus.MustNewConstMetric(c.bytes, prometheus.GaugeValue, float64(size))
}
