package main

import (
	"encoding/json"
	"fmt"
	"iter"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/cmd/internal/settings"
	"github.com/agentmem/agentmem/pkg/events"
)

// BenchmarkScaleBlackBox measures memoryd with many users on one box: the real memoryd binary
// with its default flags, --http and --memory-limit AGENTMEM_BENCH_LIMIT (default 768MiB; "none"
// leaves the flag out, for a build without it) is given AGENTMEM_BENCH_USERS users (default
// 10,000) of AGENTMEM_BENCH_TURNS turns each (default 100: a million turns), about 300-byte
// English sentences in two sessions a user, a day apart, posted in HTTP batches of up to 100
// turns (one session's) by four clients. Once every consumer has drained and the retriever has
// stored every user's view (--warm-views; not waited for with --warm-views=0 or
// --stored-views=false in AGENTMEM_BENCH_ARGS), memoryd is restarted,
// and AGENTMEM_BENCH_COLD users (default 3,000, drawn at random: more than the views' cap holds
// at the default limit) are each asked once, one after another, over NATS request-reply: the
// cold first queries (cold_p50_ms, cold_p99_ms). Then the last 200 of them are asked again, five
// times each in random order: warm queries (warm_p50_ms, warm_p99_ms).
//
// It reports memoryd's VmRSS once restarted, before the queries (rss_start_MB: what the limit
// does not cap), after the queries (rss_MB), its peak since the restart (VmHWM: rss_peak_MB),
// the limit (limit_MB) and the peak's excess over it (over_limit_MB: issue 39's goal is at most
// 150), and, from the loading run, the turns posted and drained per second (load_turns/s) and
// the peak then (load_rss_peak_MB: no view loaded, the NATS server and ingest busy). Sizes are
// in MiB. AGENTMEM_BENCH_MEMORYD and AGENTMEM_BENCH_ARGS are as for BenchmarkIdleRSSBlackBox.
//
// A million turns take about eleven minutes on two cores, more than go test's default timeout:
// run it with -timeout 60m (docs/benchmarks.md, "Memory at rest and at scale").
func BenchmarkScaleBlackBox(b *testing.B) {
	users, turns := envInt(b, "AGENTMEM_BENCH_USERS", 10000), envInt(b, "AGENTMEM_BENCH_TURNS", 100)
	cold := min(envInt(b, "AGENTMEM_BENCH_COLD", 3000), users)
	limit := "768MiB"
	if v := os.Getenv("AGENTMEM_BENCH_LIMIT"); v != "" {
		limit = v
	}
	args := strings.Fields(os.Getenv("AGENTMEM_BENCH_ARGS"))
	var limitBytes settings.Size
	if limit != "none" {
		if err := limitBytes.Set(limit); err != nil {
			b.Fatalf("AGENTMEM_BENCH_LIMIT: %v", err)
		}
		args = append(args, "--memory-limit", limit)
	}
	bin := buildMemoryd(b)
	words := vocabulary(b)
	for b.Loop() {
		dir := b.TempDir()
		httpAddr := freeAddr(b)
		m := startMemorydProcess(b, bin, dir, append(args, "--http", httpAddr)...)
		nc := connect(b, m.listen)
		start := time.Now()
		postConcurrently(b, "http://"+httpAddr, userBatches(words, users, turns))
		posted := time.Since(start)
		waitDrainedFor(b, nc, 2*time.Hour, time.Second)
		drained := time.Since(start)
		loadPeak := vmHWM(b, m.pid())
		b.Logf("%d turns of %d users posted in %s, drained after %s; VmRSS %.0f MB, peak %.0f MB",
			users*turns, users, posted.Round(time.Second), drained.Round(time.Second), mb(vmRSS(b, m.pid())), mb(loadPeak))
		start = time.Now()
		if n := waitWarmedFor(b, nc, filepath.Join(dir, "data"), args, users, time.Hour); n > 0 {
			b.Logf("%d users' views warmed in %s", n, time.Since(start).Round(time.Second))
		}
		nc.Close()
		m.stop(b)

		m = startMemorydProcess(b, bin, dir, args...)
		nc = connect(b, m.listen)
		restarted := vmRSS(b, m.pid())
		rng := rand.New(rand.NewPCG(10, 1))
		order := rng.Perm(users)[:cold]
		ask := func(u int) time.Duration {
			body, _ := json.Marshal(events.RetrieveRequest{Query: userQuery(words, u, turns), User: fmt.Sprintf("u%05d", u)})
			t0 := time.Now()
			msg, err := nc.Request("memory.retrieve."+coldTenant, body, time.Minute)
			took := time.Since(t0)
			if err != nil {
				b.Fatalf("retrieve for u%05d: %v", u, err)
			}
			if code := msg.Header.Get("Nats-Service-Error-Code"); code != "" {
				b.Fatalf("retrieve for u%05d: %s %s", u, code, msg.Data)
			}
			var reply events.RetrieveReply
			if err := json.Unmarshal(msg.Data, &reply); err != nil || len(reply.Entries) == 0 {
				b.Fatalf("retrieve for u%05d: %d entries (%v): %.200s", u, len(reply.Entries), err, msg.Data)
			}
			return took
		}
		var coldTook, warmTook []time.Duration
		for _, u := range order {
			coldTook = append(coldTook, ask(u))
		}
		warm := slices.Clone(order[len(order)-min(200, len(order)):])
		for range 5 {
			rng.Shuffle(len(warm), func(i, j int) { warm[i], warm[j] = warm[j], warm[i] })
			for _, u := range warm {
				warmTook = append(warmTook, ask(u))
			}
		}
		rss, peak := vmRSS(b, m.pid()), vmHWM(b, m.pid())
		b.Logf("VmRSS %.0f MB once restarted; after %d cold and %d warm queries %.0f MB, peak %.0f MB (limit %s)",
			mb(restarted), len(coldTook), len(warmTook), mb(rss), mb(peak), limit)
		b.ReportMetric(mb(restarted), "rss_start_MB")
		b.ReportMetric(ms(pct(coldTook, 50)), "cold_p50_ms")
		b.ReportMetric(ms(pct(coldTook, 99)), "cold_p99_ms")
		b.ReportMetric(ms(pct(warmTook, 50)), "warm_p50_ms")
		b.ReportMetric(ms(pct(warmTook, 99)), "warm_p99_ms")
		b.ReportMetric(mb(rss), "rss_MB")
		b.ReportMetric(mb(peak), "rss_peak_MB")
		b.ReportMetric(float64(users*turns)/drained.Seconds(), "load_turns/s")
		b.ReportMetric(mb(loadPeak), "load_rss_peak_MB")
		if limitBytes > 0 {
			b.ReportMetric(mb(uint64(limitBytes)), "limit_MB")
			b.ReportMetric(mb(peak)-mb(uint64(limitBytes)), "over_limit_MB")
		}
		nc.Close()
		m.stop(b)
	}
	b.ReportMetric(0, "ns/op")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// pct is the p-th percentile of ds (sorted in place).
func pct(ds []time.Duration, p int) time.Duration {
	slices.Sort(ds)
	return ds[min(len(ds)-1, len(ds)*p/100)]
}

// userBatches makes users × turns turns (userTexts) as HTTP batches (structured CloudEvents),
// one session's turns a batch of up to 100: user u%05d in sessions u%05d-a and u%05d-b, a day
// apart. They are made as they are posted, not held.
func userBatches(words []string, users, turns int) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		base := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
		var batch []structuredTurn
		flush := func() bool {
			if len(batch) == 0 {
				return true
			}
			body, err := json.Marshal(batch)
			if err != nil {
				panic(err)
			}
			batch = batch[:0]
			return yield(body)
		}
		for u := range users {
			user := fmt.Sprintf("u%05d", u)
			for t, text := range userTexts(words, u, turns) {
				sess, day := user+"-a", 0
				if t >= turns/2 {
					sess, day = user+"-b", 1
				}
				if len(batch) == 100 || len(batch) > 0 && batch[0].Subject != sess {
					if !flush() {
						return
					}
				}
				batch = append(batch, structuredTurn{SpecVersion: "1.0", ID: fmt.Sprintf("t%04d", t), Type: events.TypeTurn, Source: "bench",
					Subject: sess, Time: base.Add(time.Duration(day)*24*time.Hour + time.Duration(t)*time.Minute),
					Data: events.Turn{Role: []string{"user", "assistant"}[t%2], Content: text, User: user}})
			}
		}
		flush()
	}
}

// userTexts are user u's turns: about 300 bytes each of English words drawn by Zipf's law, the
// same for the same u.
func userTexts(words []string, u, turns int) []string {
	rng := rand.New(rand.NewPCG(39, uint64(u)))
	zipf := rand.NewZipf(rng, 1.07, 2, uint64(len(words)-1))
	out := make([]string, turns)
	var sb strings.Builder
	for t := range out {
		sb.Reset()
		size := 220 + rng.IntN(160)
		for sb.Len() < size {
			if sb.Len() > 0 {
				sb.WriteByte(' ')
			}
			sb.WriteString(words[zipf.Uint64()])
		}
		out[t] = sb.String()
	}
	return out
}

// userQuery is what user u is asked: three long words (not stop words) of one of the user's
// turns, as a question would have them.
func userQuery(words []string, u, turns int) string {
	var picked []string
	for _, w := range strings.Fields(userTexts(words, u, turns)[u*7%turns]) {
		if len(w) >= 7 && len(picked) < 3 {
			picked = append(picked, w)
		}
	}
	return "what did I say about " + strings.Join(picked, " ")
}

// vmHWM is a process's peak resident set (VmHWM), in bytes.
func vmHWM(b *testing.B, pid int) uint64 {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Skipf("no /proc/%d/status (resident set measured on Linux only): %v", pid, err)
	}
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				b.Fatalf("VmHWM %q: %v", v, err)
			}
			return kb << 10
		}
	}
	b.Fatal("no VmHWM in /proc/<pid>/status")
	return 0
}
