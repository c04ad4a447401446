package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/embed/wordvec"
	"github.com/agentmem/agentmem/pkg/events"
)

// BenchmarkIdleRSSBlackBox measures what memoryd holds at rest, as issue 39 measured it: the real
// memoryd binary with its default flags (and --http) is given 40,000 turns in HTTP batches of 100
// (100 sessions, one user each, about 300-byte English sentences); once every consumer has
// drained and memoryd has been idle for AGENTMEM_BENCH_IDLE (default 150s) its VmRSS is read
// (rss_loaded_MB: nothing loaded by a query); then each user is asked once (which loads the
// user's view) and, after the same idle time, VmRSS is read again (rss_idle_MB).
//
// AGENTMEM_BENCH_USERS and AGENTMEM_BENCH_TURNS change the users and turns per user;
// AGENTMEM_BENCH_MEMORYD names another build's binary; AGENTMEM_BENCH_ARGS adds flags (split on
// spaces); AGENTMEM_BENCH_PROFILES names a folder where, with --pprof, the heap profiles after
// the load and after the idle time are written (heap-loaded.pb.gz, heap-idle.pb.gz), with
// memoryd's /metrics (metrics-*.txt).
func BenchmarkIdleRSSBlackBox(b *testing.B) {
	users, turns := envInt(b, "AGENTMEM_BENCH_USERS", 100), envInt(b, "AGENTMEM_BENCH_TURNS", 400)
	idle := 150 * time.Second
	if v := os.Getenv("AGENTMEM_BENCH_IDLE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.Fatalf("AGENTMEM_BENCH_IDLE: %v", err)
		}
		idle = d
	}
	profiles := os.Getenv("AGENTMEM_BENCH_PROFILES")
	pprofAddr := ""
	args := strings.Fields(os.Getenv("AGENTMEM_BENCH_ARGS"))
	httpAddr := freeAddr(b)
	args = append(args, "--http", httpAddr)
	if profiles != "" {
		pprofAddr = freeAddr(b)
		args = append(args, "--pprof", pprofAddr)
	}
	bin := buildMemoryd(b)
	words := vocabulary(b)
	for b.Loop() {
		dir := b.TempDir()
		m := startMemorydProcess(b, bin, dir, args...)
		nc := connect(b, m.listen)
		start := time.Now()
		postTurns(b, "http://"+httpAddr, words, users, turns)
		waitDrained(b, nc)
		b.Logf("%d turns posted and drained in %s", users*turns, time.Since(start).Round(time.Second))
		time.Sleep(idle) // what is measured is what an idle memoryd holds
		loaded := vmRSS(b, m.pid())
		snapshot(b, profiles, pprofAddr, httpAddr, "loaded")
		for u := range users {
			body, _ := json.Marshal(events.RetrieveRequest{Query: "what did I say about " + words[u+100], User: fmt.Sprintf("user%03d", u)})
			msg, err := nc.Request("memory.retrieve."+coldTenant, body, time.Minute)
			if err != nil {
				b.Fatalf("retrieve: %v", err)
			}
			if code := msg.Header.Get("Nats-Service-Error-Code"); code != "" {
				b.Fatalf("retrieve: %s %s", code, msg.Data)
			}
		}
		queried := vmRSS(b, m.pid())
		time.Sleep(idle)
		rest := vmRSS(b, m.pid())
		snapshot(b, profiles, pprofAddr, httpAddr, "idle")
		b.Logf("VmRSS: loaded %.1f MB, right after the queries %.1f MB, after %s idle %.1f MB", mb(loaded), mb(queried), idle, mb(rest))
		b.ReportMetric(mb(loaded), "rss_loaded_MB")
		b.ReportMetric(mb(queried), "rss_queried_MB")
		b.ReportMetric(mb(rest), "rss_idle_MB")
		nc.Close()
		m.stop(b)
	}
	b.ReportMetric(0, "ns/op")
}

func mb(n uint64) float64 { return float64(n) / (1 << 20) }

func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

// vocabulary returns the 20,000 most frequent words of the local embedder's vocabulary.
func vocabulary(b *testing.B) []string {
	f, err := os.Open(filepath.Join("..", "..", "internal", "embed", "wordvec", "glove-6b-100d.bin.gz"))
	if err != nil {
		b.Fatalf("the local embedder's vocabulary: %v", err)
	}
	defer f.Close()
	model, err := wordvec.Read(f)
	if err != nil {
		b.Fatalf("the local embedder's vocabulary: %v", err)
	}
	return model.Words[:20000]
}

// postTurns posts users × turns turns of about 300 bytes in HTTP batches of 100, one session per
// user (user%03d, session s-user%03d), over base's HTTP API, four clients at once.
func postTurns(b *testing.B, base string, words []string, users, turns int) {
	rng := rand.New(rand.NewPCG(39, 1))
	zipf := rand.NewZipf(rng, 1.07, 2, uint64(len(words)-1))
	sentence := func() string {
		var sb strings.Builder
		size := 220 + rng.IntN(160)
		for sb.Len() < size {
			if sb.Len() > 0 {
				sb.WriteByte(' ')
			}
			sb.WriteString(words[zipf.Uint64()])
		}
		return sb.String()
	}
	base0 := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	var batches [][]byte
	var batch []structuredTurn
	for u := range users {
		user := fmt.Sprintf("user%03d", u)
		for t := range turns {
			batch = append(batch, structuredTurn{SpecVersion: "1.0", ID: fmt.Sprintf("t%05d", t), Type: events.TypeTurn, Source: "bench",
				Subject: "s-" + user, Time: base0.Add(time.Duration(t) * time.Minute),
				Data: events.Turn{Role: []string{"user", "assistant"}[t%2], Content: sentence(), User: user}})
			if len(batch) == 100 {
				body, _ := json.Marshal(batch)
				batches, batch = append(batches, body), nil
			}
		}
	}
	if len(batch) > 0 {
		body, _ := json.Marshal(batch)
		batches = append(batches, body)
	}
	postConcurrently(b, base, slices.Values(batches))
}

// postConcurrently posts each batch over base's HTTP API, four clients at once.
func postConcurrently(b *testing.B, base string, batches iter.Seq[[]byte]) {
	work := make(chan []byte)
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			for body := range work {
				if err := postBatch(base, body); err != nil {
					errs <- err
					for range work {
					}
					return
				}
			}
			errs <- nil
		}()
	}
	for body := range batches {
		work <- body
	}
	close(work)
	for range 4 {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
}

// structuredTurn is a turn as a structured-mode CloudEvent, as the HTTP API takes it in a batch.
type structuredTurn struct {
	SpecVersion string      `json:"specversion"`
	ID          string      `json:"id"`
	Type        string      `json:"type"`
	Source      string      `json:"source"`
	Subject     string      `json:"subject"`
	Time        time.Time   `json:"time"`
	Data        events.Turn `json:"data"`
}

func postBatch(base string, body []byte) error {
	for attempt := 0; ; attempt++ {
		resp, err := http.Post(base+"/v1/tenants/"+coldTenant+"/events", "application/cloudevents-batch+json", bytes.NewReader(body))
		if err != nil {
			return err
		}
		msg, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusAccepted || resp.StatusCode == http.StatusOK {
			return nil
		}
		if resp.StatusCode < 500 || attempt == 5 {
			return fmt.Errorf("posting a batch: %s: %.300s", resp.Status, msg)
		}
	}
}

// snapshot writes memoryd's heap profile (from --pprof) and its memory metrics into dir, named
// after what.
func snapshot(b *testing.B, dir, pprofAddr, httpAddr, what string) {
	if dir == "" {
		return
	}
	get := func(url, file string) {
		resp, err := http.Get(url)
		if err != nil {
			b.Fatalf("%s: %v", url, err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		if err := os.WriteFile(filepath.Join(dir, file), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	get("http://"+pprofAddr+"/debug/pprof/heap", "heap-"+what+".pb.gz")
	get("http://"+httpAddr+"/metrics", "metrics-"+what+".txt")
	f, err := os.Open(filepath.Join(dir, "metrics-"+what+".txt"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "agentmem_memory_") {
			b.Logf("%s: %s", what, sc.Text())
		}
	}
}
