package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/daemon"
	"github.com/agentmem/agentmem/internal/embed/wordvec"
	"github.com/agentmem/agentmem/internal/eval"
	"github.com/agentmem/agentmem/pkg/events"
)

// BenchmarkColdUserBlackBox measures cold users the way a user sees them: the real memoryd
// binary, built from this checkout and run with its default flags (its own --data directory and a
// free --listen port), is given 20 users of about 500 turns each (in 47 sessions, as a
// LongMemEval_S haystack); once every consumer has drained it is stopped with SIGTERM and started
// again, and as soon as its retriever answers pings each user is asked once, by one client over
// NATS request-reply on memory.retrieve.<tenant> (a query and "user", the default sources).
//
// It reports the first query's p50 and p99 over the users (p50_ms, p99_ms); the median over the
// restarts of the very first query after one (first_ms: it meets a process that has just started,
// with the embedded server's cache of the message blocks that the users' turns share still empty
// and about 70 ms of start-up CPU in its first quarter second; it is the slowest query and, of
// 60, the p99); the p50 of the queries after the second and later restarts (later_p50_ms: the
// users' views were stored by the first, see --stored-views); the growth of
// memoryd's resident set (VmRSS) from before the queries to after them, divided by the turns the
// queries loaded (rss_bytes/turn); and the CPU time memoryd spent per user meanwhile
// (cpu_ms/user: with queries one after another on 2 cores, half of it bounds the p50 from below,
// and it is steadier than the latencies on a machine whose CPU is shared); and the minor page
// faults it took per user (faults/user: memory touched for the first time, which the first
// queries after a start pay most of, see docs/benchmarks.md). Each iteration
// restarts memoryd and asks every user again (-benchtime 3x: three restarts, 60 first queries).
// AGENTMEM_BENCH_ARGS adds flags to memoryd's (split on spaces; "--stored-views=false", say, for
// a comparison).
//
// The turns are synthetic by default: English words of the local embedder's vocabulary drawn by
// Zipf's law, with LongMemEval_S's lengths (median about 450 bytes, mean about 1 KB, a long tail).
// With AGENTMEM_EVAL_DATA set to the evaluation data directory (the one holding
// longmemeval/longmemeval_s_dev.json.gz), the users are the first 20 LongMemEval_S haystacks
// and the query is each one's question.
func BenchmarkColdUserBlackBox(b *testing.B) {
	const users = 20
	set := coldSet(b, users)
	bin := buildMemoryd(b)
	dir := b.TempDir()
	args := strings.Fields(os.Getenv("AGENTMEM_BENCH_ARGS"))
	m := startMemorydProcess(b, bin, dir, args...)
	nc := connect(b, m.listen)
	published := publishSet(b, nc, set)
	waitDrained(b, nc)
	start := time.Now()
	warmed := waitWarmed(b, nc, filepath.Join(dir, "data"), args, len(set))
	nc.Close()
	m.stop(b)
	b.Logf("%d users, %d turns (%.0f bytes of text a turn), published and drained; %d users' views warmed in %s",
		len(set), published, set.meanBytes(), warmed, time.Since(start).Round(time.Millisecond))

	var took, first, later []time.Duration
	var perTurn, cpu, faults []float64
	for b.Loop() {
		b.StopTimer()
		m = startMemorydProcess(b, bin, dir, args...)
		nc = connect(b, m.listen)
		rss0 := vmRSS(b, m.pid())
		cpu0, flt0 := procStat(b, m.pid())
		b.StartTimer()
		for _, u := range set {
			body, _ := json.Marshal(events.RetrieveRequest{Query: u.query, User: u.name})
			start := time.Now()
			msg, err := nc.Request("memory.retrieve."+coldTenant, body, time.Minute)
			took = append(took, time.Since(start))
			if err != nil {
				b.Fatalf("retrieve for %s: %v", u.name, err)
			}
			if code := msg.Header.Get("Nats-Service-Error-Code"); code != "" {
				b.Fatalf("retrieve for %s: %s %s", u.name, code, msg.Data)
			}
			var reply events.RetrieveReply
			if err := json.Unmarshal(msg.Data, &reply); err != nil || len(reply.Entries) == 0 {
				b.Fatalf("retrieve for %s: %d entries (%v): %.200s", u.name, len(reply.Entries), err, msg.Data)
			}
		}
		b.StopTimer()
		first = append(first, took[len(took)-len(set)])
		if len(took) > len(set) {
			later = append(later, took[len(took)-len(set):]...)
		}
		rss1 := vmRSS(b, m.pid())
		cpu1, flt1 := procStat(b, m.pid())
		perTurn = append(perTurn, float64(int64(rss1)-int64(rss0))/float64(published))
		cpu = append(cpu, float64((cpu1-cpu0).Microseconds())/1000/float64(len(set)))
		faults = append(faults, float64(flt1-flt0)/float64(len(set)))
		nc.Close()
		m.stop(b)
		b.StartTimer()
	}
	slices.Sort(took)
	slices.Sort(first)
	b.ReportMetric(float64(first[len(first)/2].Microseconds())/1000, "first_ms")
	if len(later) > 0 {
		slices.Sort(later)
		b.ReportMetric(float64(later[len(later)/2].Microseconds())/1000, "later_p50_ms")
	}
	slices.Sort(perTurn)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50_ms")
	b.ReportMetric(float64(took[min(len(took)-1, len(took)*99/100)].Microseconds())/1000, "p99_ms")
	b.ReportMetric(perTurn[len(perTurn)/2], "rss_bytes/turn")
	slices.Sort(cpu)
	b.ReportMetric(cpu[len(cpu)/2], "cpu_ms/user")
	slices.Sort(faults)
	b.ReportMetric(faults[len(faults)/2], "faults/user")
	b.ReportMetric(0, "ns/op") // the time of an iteration is mostly memoryd starting
}

const coldTenant = "acme"

// coldUser is one user's sessions and the query the user is asked.
type coldUser struct {
	name     string
	query    string
	sessions []coldSession
}

type coldSession struct {
	name  string
	start time.Time
	turns []eval.LMETurn
}

type coldUsers []coldUser

func (s coldUsers) meanBytes() float64 {
	var n, bytes int
	for _, u := range s {
		for _, ss := range u.sessions {
			for _, t := range ss.turns {
				n++
				bytes += len(t.Content)
			}
		}
	}
	return float64(bytes) / float64(max(n, 1))
}

// coldSet returns the users of BenchmarkColdUserBlackBox: LongMemEval_S haystacks with
// AGENTMEM_EVAL_DATA, else synthetic ones.
func coldSet(b *testing.B, users int) coldUsers {
	if dir := os.Getenv("AGENTMEM_EVAL_DATA"); dir != "" {
		return lmeUsers(b, filepath.Join(dir, "longmemeval", "longmemeval_s_dev.json.gz"), users)
	}
	return syntheticUsers(b, users)
}

func lmeUsers(b *testing.B, path string, users int) coldUsers {
	items, err := eval.ReadLongMemEval(path)
	if err != nil {
		b.Fatalf("AGENTMEM_EVAL_DATA: %v", err)
	}
	var out coldUsers
	for qi, it := range items[:min(users, len(items))] {
		var hs [][]eval.LMETurn
		if err := json.Unmarshal(it.HaystackSessions, &hs); err != nil {
			b.Fatalf("%s: %v", it.QuestionID, err)
		}
		u := coldUser{name: fmt.Sprintf("lme%02d", qi), query: it.Question}
		for si, turns := range hs {
			at, err := eval.ParseLMETime(it.HaystackDates[si])
			if err != nil {
				b.Fatalf("%s: %v", it.QuestionID, err)
			}
			u.sessions = append(u.sessions, coldSession{name: fmt.Sprintf("%s-s%02d", u.name, si), start: at, turns: turns})
		}
		out = append(out, u)
	}
	return out
}

// syntheticUsers makes users like LongMemEval_S haystacks: 47 sessions of 10 or 11 turns (user
// and assistant alternating, a day apart), each turn of English words drawn by Zipf's law from
// the local embedder's vocabulary, its length drawn log-normally (median 450 bytes, mean about
// 1 KB, cut at 16 KB).
func syntheticUsers(b *testing.B, users int) coldUsers {
	f, err := os.Open(filepath.Join("..", "..", "internal", "embed", "wordvec", "glove-6b-100d.bin.gz"))
	if err != nil {
		b.Fatalf("the local embedder's vocabulary: %v", err)
	}
	model, err := wordvec.Read(f)
	_ = f.Close()
	if err != nil {
		b.Fatalf("the local embedder's vocabulary: %v", err)
	}
	words := model.Words[:20000]
	rng := rand.New(rand.NewPCG(28, 1))
	zipf := rand.NewZipf(rng, 1.07, 2, uint64(len(words)-1))
	text := func(size int) string {
		var sb strings.Builder
		for sb.Len() < size {
			if sb.Len() > 0 {
				sb.WriteByte(' ')
			}
			sb.WriteString(words[zipf.Uint64()])
		}
		return sb.String()
	}
	base := time.Date(2023, 1, 1, 9, 0, 0, 0, time.UTC)
	var out coldUsers
	for ui := range users {
		u := coldUser{name: fmt.Sprintf("user%02d", ui)}
		for si := range 47 {
			s := coldSession{name: fmt.Sprintf("%s-s%02d", u.name, si), start: base.Add(time.Duration(si) * 24 * time.Hour)}
			for ti := range 10 + si%2 {
				size := min(16<<10, int(450*math.Exp(rng.NormFloat64()*1.25)))
				s.turns = append(s.turns, eval.LMETurn{Role: []string{"user", "assistant"}[ti%2], Content: text(max(size, 20))})
			}
			u.sessions = append(u.sessions, s)
		}
		// The query: a few of the user's own words, as a question would have.
		t := u.sessions[ui%47].turns[0].Content
		u.query = "what did I say about " + strings.Join(strings.Fields(t)[:min(4, len(strings.Fields(t)))], " ")
		out = append(out, u)
	}
	return out
}

// buildMemoryd compiles this package into a binary, as make build does; with
// AGENTMEM_BENCH_MEMORYD set it returns that binary instead (another build's, to measure two
// builds alternating in one run).
func buildMemoryd(b *testing.B) string {
	if bin := os.Getenv("AGENTMEM_BENCH_MEMORYD"); bin != "" {
		return bin
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		b.Skipf("no go command to build memoryd with: %v", err)
	}
	bin := filepath.Join(b.TempDir(), "memoryd")
	out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		b.Fatalf("building memoryd: %v\n%s", err, out)
	}
	return bin
}

// memorydProcess is a running memoryd binary.
type memorydProcess struct {
	cmd    *exec.Cmd
	listen string
	done   chan error
	stderr *strings.Builder
}

func (m *memorydProcess) pid() int { return m.cmd.Process.Pid }

// startMemorydProcess starts memoryd with its default flags but for --data and --listen (and
// extra), and waits until its retriever answers a ping.
func startMemorydProcess(b *testing.B, bin, dir string, extra ...string) *memorydProcess {
	b.Helper()
	m := &memorydProcess{listen: freeAddr(b), done: make(chan error, 1), stderr: &strings.Builder{}}
	m.cmd = exec.Command(bin, append([]string{"--listen", m.listen, "--data", filepath.Join(dir, "data"), "--log-level", "warn"}, extra...)...)
	m.cmd.Stderr = m.stderr
	if err := m.cmd.Start(); err != nil {
		b.Fatalf("starting memoryd: %v", err)
	}
	go func() { m.done <- m.cmd.Wait() }()
	b.Cleanup(func() {
		if m.cmd.ProcessState == nil {
			_ = m.cmd.Process.Kill()
			<-m.done
		}
	})
	brokertest.CheckFor(b, 60*time.Second, 10*time.Millisecond, func() error {
		select {
		case err := <-m.done:
			m.done <- err
			b.Fatalf("memoryd stopped: %v\n%s", err, m.stderr)
		default:
		}
		nc, err := nats.Connect("nats://"+m.listen, nats.MaxReconnects(0))
		if err != nil {
			return err
		}
		defer nc.Close()
		_, err = nc.Request("$SRV.PING.agentmem-retriever", nil, time.Second)
		return err
	})
	return m
}

// stop stops memoryd as an operator does (SIGTERM) and waits until it has exited.
func (m *memorydProcess) stop(b *testing.B) {
	b.Helper()
	if err := m.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		b.Fatalf("stopping memoryd: %v", err)
	}
	timer := time.NewTimer(60 * time.Second)
	defer timer.Stop()
	select {
	case err := <-m.done:
		if err != nil {
			b.Fatalf("memoryd: %v\n%s", err, m.stderr)
		}
	case <-timer.C:
		b.Fatalf("memoryd did not stop within 60s of SIGTERM")
	}
}

func connect(b *testing.B, listen string) *nats.Conn {
	nc, err := nats.Connect("nats://" + listen)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	return nc
}

// publishSet publishes every turn as an agent does (binary CloudEvents, a Nats-Msg-Id each) and
// returns the number of turns.
func publishSet(b *testing.B, nc *nats.Conn, set coldUsers) int {
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(512))
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, u := range set {
		for _, s := range u.sessions {
			for ti, t := range s.turns {
				id := fmt.Sprintf("%s-t%03d", s.name, ti)
				ev, err := events.NewEvent(id, events.TypeTurn, "bench", s.start.Add(time.Duration(ti)*time.Minute),
					events.Turn{Role: t.Role, Content: t.Content, User: u.name})
				if err != nil {
					b.Fatal(err)
				}
				msg, err := events.BinaryMsg("memory.turns."+coldTenant+"."+s.name, ev)
				if err != nil {
					b.Fatal(err)
				}
				msg.Header.Set(events.HeaderMsgID, events.MsgID(coldTenant, s.name, id))
				if _, err := js.PublishMsgAsync(msg, jetstream.WithStallWait(30*time.Second)); err != nil {
					b.Fatal(err)
				}
				n++
			}
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(5 * time.Minute):
		b.Fatal("publishes not acknowledged within 5 minutes")
	}
	if f := js.PublishAsyncPending(); f != 0 {
		b.Fatalf("%d publishes pending", f)
	}
	return n
}

// waitDrained waits until every consumer of every stream has nothing pending and nothing
// unacknowledged: ingest, the extractor and the embedder are done with the turns.
func waitDrained(b *testing.B, nc *nats.Conn) { waitDrainedFor(b, nc, 10*time.Minute, time.Second) }

// waitDrainedFor is waitDrained, waiting at most timeout and looking every poll.
func waitDrainedFor(b *testing.B, nc *nats.Conn, timeout, poll time.Duration) {
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	brokertest.CheckFor(b, timeout, poll, func() error {
		var busy []string
		streams := js.ListStreams(ctx)
		for si := range streams.Info() {
			st, err := js.Stream(ctx, si.Config.Name)
			if err != nil {
				return err
			}
			cs := st.ListConsumers(ctx)
			for ci := range cs.Info() {
				if p := ci.NumPending + uint64(ci.NumAckPending); p > 0 {
					busy = append(busy, fmt.Sprintf("%s/%s: %d", si.Config.Name, ci.Name, p))
				}
			}
			if err := cs.Err(); err != nil {
				return err
			}
		}
		if err := streams.Err(); err != nil {
			return err
		}
		if len(busy) > 0 {
			return errors.New("busy: " + strings.Join(busy, ", "))
		}
		return nil
	})
}

// waitWarmed waits until memoryd holds a stored view of each of users users, as the
// retriever's warmer writes them once the users' sessions are quiet (--warm-views): the pipeline
// is done with what was published when its lazily written state is. The views are files of
// data's views directory (memoryd with its own server, one replica) or values of the view
// bucket; it returns the views counted; with --stored-views=false or --warm-views=0 among args,
// it does not wait.
func waitWarmed(b *testing.B, nc *nats.Conn, data string, args []string, users int) int {
	return waitWarmedFor(b, nc, data, args, users, 5*time.Minute)
}

// waitWarmedFor is waitWarmed, waiting at most timeout.
func waitWarmedFor(b *testing.B, nc *nats.Conn, data string, args []string, users int, timeout time.Duration) int {
	for _, a := range args {
		if a == "--stored-views=false" || a == "--warm-views=0" || a == "--warm-views=0s" {
			return 0
		}
	}
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	kv, err := js.KeyValue(ctx, events.DefaultTopology().ViewBucket())
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	brokertest.CheckFor(b, timeout, 100*time.Millisecond, func() error {
		st, err := kv.Status(ctx)
		if err != nil {
			return err
		}
		files, _ := filepath.Glob(filepath.Join(data, daemon.ViewDirName, "*.view"))
		if n = int(st.Values()) + len(files); n < users {
			return fmt.Errorf("%d of %d users' views stored", n, users)
		}
		return nil
	})
	return n
}

// vmRSS is a process's resident set (VmRSS), in bytes.
func vmRSS(b *testing.B, pid int) uint64 {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Skipf("no /proc/%d/status (resident set measured on Linux only): %v", pid, err)
	}
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				b.Fatalf("VmRSS %q: %v", v, err)
			}
			return kb << 10
		}
	}
	b.Fatal("no VmRSS in /proc/<pid>/status")
	return 0
}

// procStat returns the CPU time (user and system) a process has used so far, from
// /proc/<pid>/stat (in clock ticks of 10 ms, USER_HZ on Linux), and the minor page faults it has
// taken so far (memory it touched for the first time: each costs the kernel a page to zero and
// map, 10-15 µs in this machine's VM).
func procStat(b *testing.B, pid int) (cpu time.Duration, minflt uint64) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Skipf("no /proc/%d/stat (CPU time measured on Linux only): %v", pid, err)
	}
	// The fields after the command (which may hold spaces) in parentheses: state is the first,
	// minflt the 8th, utime and stime the 12th and 13th.
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if len(f) < 13 {
		b.Fatalf("/proc/%d/stat: %q", pid, stat)
	}
	minflt, err0 := strconv.ParseUint(f[7], 10, 64)
	utime, err1 := strconv.ParseUint(f[11], 10, 64)
	stime, err2 := strconv.ParseUint(f[12], 10, 64)
	if err0 != nil || err1 != nil || err2 != nil {
		b.Fatalf("/proc/%d/stat: %q", pid, stat)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, minflt
}
