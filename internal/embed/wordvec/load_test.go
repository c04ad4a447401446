package wordvec

import (
	"bytes"
	"testing"
)

// BenchmarkLoad reads the vendored table (what New does once per process) and reports its size
// compressed and in memory.
func BenchmarkLoad(b *testing.B) {
	var m *Model
	for b.Loop() {
		var err error
		if m, err = Read(bytes.NewReader(vendored)); err != nil {
			b.Fatal(err)
		}
	}
	e := FromModel(m, Name)
	b.ReportMetric(float64(len(vendored)), "file-bytes")
	b.ReportMetric(float64(len(e.q)+4*len(e.weights)), "table-bytes")
}
