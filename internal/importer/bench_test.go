package importer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/importer"
	"github.com/agentmem/agentmem/pkg/events"
)

// history20k is 20,000 turns of 400 sessions of two tenants, English and Chinese.
func history20k(b *testing.B, round int) []byte {
	b.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	texts := []string{"我喜欢用 Go 写代码", "今天北京天气很好", "I like hiking on weekends", "My cat is called Miso"}
	for i := range 20000 {
		k := (i / 2) % 200
		line := map[string]any{"tenant": []string{"acme", "beta"}[i%2], "session": fmt.Sprintf("r%d-s%d", round, k),
			"user": fmt.Sprintf("u%d", k%50), "role": []string{"user", "assistant"}[(i/400)%2],
			"content": fmt.Sprintf("%s #%d", texts[i%len(texts)], i)}
		if err := enc.Encode(line); err != nil {
			b.Fatal(err)
		}
	}
	return buf.Bytes()
}

// BenchmarkImportRawJetStream imports 20,000 turns into the turns stream with no worker
// consuming it: the importer's own ceiling on this machine.
func BenchmarkImportRawJetStream(b *testing.B) {
	for _, window := range []int{64, 512, 4096} {
		b.Run(fmt.Sprintf("window=%d", window), func(b *testing.B) {
			env := brokertest.Start(b)
			if err := events.DefaultTopology().Ensure(context.Background(), env.JS); err != nil {
				b.Fatal(err)
			}
			im, err := importer.New(importer.Config{Window: window}, env.NC, nil, zerolog.Nop())
			if err != nil {
				b.Fatal(err)
			}
			var turns int
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				data := history20k(b, i)
				b.StartTimer()
				rep, err := im.Import(context.Background(), bytes.NewReader(data))
				if err != nil || rep.Imported != 20000 {
					b.Fatalf("%+v, %v", rep.Counts, err)
				}
				turns += rep.Imported
			}
			b.ReportMetric(float64(turns)/b.Elapsed().Seconds(), "turns/s")
		})
	}
}

// BenchmarkImportDaemon imports 20,000 turns into an all-in-one service in process: the stream
// stores them while ingest, the extractor and the retriever run on the same machine.
func BenchmarkImportDaemon(b *testing.B) {
	e := start(b, events.Topology{})
	im, err := importer.New(importer.Config{}, e.nc, e.store, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	var turns int
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		data := history20k(b, i)
		b.StartTimer()
		rep, err := im.Import(context.Background(), bytes.NewReader(data))
		if err != nil || rep.Imported != 20000 {
			b.Fatalf("%+v, %v", rep.Counts, err)
		}
		turns += rep.Imported
	}
	b.ReportMetric(float64(turns)/b.Elapsed().Seconds(), "turns/s")
}
