package compress_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/llm/llmtest"
	"github.com/agentmem/agentmem/pkg/events"
)

// BenchmarkCompressionLatency measures a compression end to end with an LLM that answers every
// call in 200 ms: from the pressure event to the summary event, and the LLM calls it made.
func BenchmarkCompressionLatency(b *testing.B) {
	fake := &fakeLLM{}
	answer := fake.handler()
	srv := llmtest.NewServer(b, func(w http.ResponseWriter, r *http.Request, n int) {
		timer := time.NewTimer(200 * time.Millisecond) // the simulated model's thinking time
		<-timer.C
		answer(w, r, n)
	})
	var total time.Duration
	var calls, entries int
	for i := 0; i < b.N; i++ {
		p := newPipeline(b, smallBudget(1200), newClient(b, srv, 3))
		pres, err := p.env.NC.SubscribeSync("memory.pressure.acme.lat")
		if err != nil {
			b.Fatal(err)
		}
		sums, err := p.env.NC.SubscribeSync("memory.summaries.acme.lat")
		if err != nil {
			b.Fatal(err)
		}
		before := srv.Count()
		p.converse("lat", 0, 40, false)
		pm, err := pres.NextMsg(20 * time.Second)
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if _, err := sums.NextMsg(30 * time.Second); err != nil {
			b.Fatal(err)
		}
		total += time.Since(start)
		ev, _ := events.Decode(pm)
		pr, _ := events.DecodeData[events.Pressure](ev)
		entries += len(pr.EntryIDs)
		calls += srv.Count() - before
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/compression")
	b.ReportMetric(float64(calls)/float64(b.N), "llm_calls/compression")
	b.ReportMetric(float64(entries)/float64(b.N), "entries/compression")
}
