package rank

import (
	"runtime"
	"testing"
)

func TestScratchHeap(t *testing.T) {
	docs, _, _ := syntheticCorpus(10000)
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	ix := NewIndex(Config{})
	ix.Add(docs...)
	runtime.GC()
	runtime.ReadMemStats(&m1)
	t.Logf("heap %d bytes/doc, Bytes() %d bytes/doc", (m1.HeapAlloc-m0.HeapAlloc)/10000, ix.Bytes()/10000)
	runtime.KeepAlive(docs)
}
