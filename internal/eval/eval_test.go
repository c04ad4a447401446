package eval_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker"
	"github.com/agentmem/agentmem/internal/daemon"
	"github.com/agentmem/agentmem/internal/eval"
	"github.com/agentmem/agentmem/internal/ingest"
)

// startService runs the all-in-one service in-process on a free port with its data in a
// temporary directory; cleanup closes the connection before it stops the service.
func startService(t *testing.T) *nats.Conn {
	t.Helper()
	d, err := daemon.Start(context.Background(), daemon.Config{
		Broker: broker.Config{Listen: "127.0.0.1:-1", DataDir: t.TempDir()},
		Ingest: ingest.Config{IdleTimeout: -1},
	}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(d.URL())
	if err != nil {
		_ = d.Stop()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		nc.Close()
		if err := d.Stop(); err != nil {
			t.Errorf("stopping the service: %v", err)
		}
	})
	return nc
}

// The tiny sets are built so that the answers are known:
//
//   - LongMemEval q1 (multi-session): the kayak and the paddle are in two answer sessions, one
//     dated after the question (found only because at is raised), so S-R_all@5 = 1; q2
//     (single-session-user): the answer session shares no word with the question while a
//     distractor does, so everything is 0. Overall 0.5.
//   - MADial (zh and en alike): dialogue 0 of u1 finds its one memory first (R@k = 1); dialogue 1
//     of u2 finds one of its two memories (R@k = 0.5, hit = 1). Overall R@k = 0.75, hit 1.
func TestRunOnTinySets(t *testing.T) {
	nc := startService(t)
	progress := map[string][][2]int{} // Progress is called one call at a time
	r, err := eval.New(eval.Config{
		LongMemEvalFile: filepath.Join("testdata", "lme_tiny.json"),
		MADialDir:       filepath.Join("testdata", "madial"),
		// One request at a time: concurrent requests of two users race in the retriever
		// (userCache.noteSessions sums every view's bytes without the views' locks).
		Concurrency: 1, Window: 3, Poll: 20 * time.Millisecond, Settle: -1,
		Timeout: 20 * time.Second, WaitTimeout: time.Minute,
		Progress: func(set string, done, total int) {
			progress[set] = append(progress[set], [2]int{done, total})
		},
	}, nc, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, details bytes.Buffer
	rep, err := r.Run(ctx, &out, &details)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	t.Logf("report:\n%s", out.String())

	if p := rep.Publish; p.Sessions != 6+4+4 || p.Turns != 12+4+4 || p.Ends != 14 || p.Duplicates != 0 {
		t.Errorf("published %+v, want 14 sessions, 20 turns, 14 ends", p)
	}
	if len(rep.Sets) != 3 {
		t.Fatalf("%d set reports", len(rep.Sets))
	}
	// The progress hook saw every question of every set, counting up to the set's total.
	for _, sr := range rep.Sets {
		steps := progress[sr.Name]
		if len(steps) != sr.Queries {
			t.Errorf("set %s: %d progress calls for %d questions", sr.Name, len(steps), sr.Queries)
			continue
		}
		for i, st := range steps {
			if st != [2]int{i + 1, sr.Queries} {
				t.Errorf("set %s: progress call %d was %v", sr.Name, i, st)
			}
		}
	}
	check := func(sr eval.SetReport, group, metric string, want float64, n int) {
		t.Helper()
		got := sr.Mean(group, metric)
		if math.Abs(got.Value-want) > 1e-9 || got.N != n {
			t.Errorf("%s %s %s = %.3f over %d, want %.3f over %d", sr.Name, group, metric, got.Value, got.N, want, n)
		}
	}
	lme := rep.Sets[0]
	if lme.Name != "lme" || lme.Queries != 2 || lme.Errors != 0 || lme.Latency.N != 2 {
		t.Errorf("lme report %+v", lme)
	}
	for _, m := range []string{eval.SAll5, eval.SAll10, eval.SAny5, eval.TAny5, eval.TAny10} {
		check(lme, eval.Overall, m, 0.5, 2)
		check(lme, "multi-session", m, 1, 1)
		check(lme, "single-session-user", m, 0, 1)
	}
	for _, sr := range rep.Sets[1:] {
		if sr.Queries != 2 || sr.Errors != 0 || sr.Latency.N != 2 {
			t.Errorf("%s report %+v", sr.Name, sr)
		}
		for _, m := range []string{"R@1", "R@3", "R@5", "R@10", "R@20"} {
			check(sr, eval.Overall, m, 0.75, 2)
			check(sr, "u1", m, 1, 1)
			check(sr, "u2", m, 0.5, 1)
		}
		check(sr, eval.Overall, "hit@5", 1, 2)
		check(sr, eval.Overall, "hit@10", 1, 2)
	}

	// The tables name every group and the baselines.
	for _, want := range []string{"multi-session", "single-session-user", "BM25 (baselines.md)", "0.714", "madial-en", "u2", "retrieve latency: n=2"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q", want)
		}
	}

	// One JSON line per question, with its ranking.
	var lines []map[string]any
	sc := bufio.NewScanner(&details)
	for sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("detail line %q: %v", sc.Text(), err)
		}
		lines = append(lines, rec)
	}
	if len(lines) != 6 {
		t.Fatalf("%d detail lines, want 6", len(lines))
	}
	for _, rec := range lines {
		if rec["set"] == "lme" && rec["id"] == "q1" {
			ranked, _ := rec["ranked"].([]any)
			if len(ranked) < 2 || rec["at_raised"] != true {
				t.Errorf("q1 detail %v", rec)
			}
		}
	}
}

// A second run against the same service finds every turn stored already, and the numbers do
// not change.
func TestRunTwiceOnOneService(t *testing.T) {
	nc := startService(t)
	cfg := eval.Config{
		LongMemEvalFile: filepath.Join("testdata", "lme_tiny.json"), Sets: []string{eval.SetLongMemEval},
		Concurrency: 1, // see TestRunOnTinySets
		Poll:        20 * time.Millisecond, Settle: -1, Timeout: 20 * time.Second, WaitTimeout: time.Minute,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var first eval.Report
	for i := range 2 {
		r, err := eval.New(cfg, nc, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		rep, err := r.Run(ctx, &out, nil)
		if err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
		if i == 0 {
			first = rep
			continue
		}
		if rep.Publish.Duplicates != 12 {
			t.Errorf("second run: %d duplicates, want 12", rep.Publish.Duplicates)
		}
		for _, m := range []string{eval.SAll5, eval.TAny10} {
			if a, b := first.Sets[0].Mean(eval.Overall, m), rep.Sets[0].Mean(eval.Overall, m); a != b {
				t.Errorf("%s changed from %+v to %+v", m, a, b)
			}
		}
	}
}

func TestConfigValidate(t *testing.T) {
	for name, cfg := range map[string]eval.Config{
		"unknown set":  {Sets: []string{"locomo"}},
		"negative n":   {N: -1},
		"max errors":   {MaxErrors: -2},
		"concurrency":  {Concurrency: -1},
		"window":       {Window: -1},
		"wait timeout": {WaitTimeout: -time.Second},
	} {
		if _, err := eval.New(cfg, nil, zerolog.Nop()); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
