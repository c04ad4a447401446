// Package eval measures how well agentmem finds the evidence of two public benchmark sets,
// LongMemEval_S (English chat histories, one user per question) and MADial-Bench (Chinese and
// English memories of two users), the way an agent would see it: it publishes every session
// through pkg/client with the turns' original times, waits until the consumers of the turns
// stream have applied everything, asks memory.retrieve.<tenant> each question and scores the
// ranking against the sets' gold evidence.
//
// Ids, sessions, times, queries and metrics follow the conventions of the memprobe checker, so
// that the numbers compare with it and with the BM25 figures of shared/data/baselines.md: a reply
// becomes a list of distinct turn ids (an entry's own id when it is one of the set's turns, else
// the turn ids in its provenance, in order), and recall is computed on that list.
package eval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/pkg/client"
)

// Set names accepted in Config.Sets.
const (
	SetLongMemEval = "lme"
	SetMADialZH    = "madial-zh"
	SetMADialEN    = "madial-en"
)

// AllSets are the sets run by default, in order.
var AllSets = []string{SetLongMemEval, SetMADialZH, SetMADialEN}

// Config configures an evaluation run.
type Config struct {
	// DataDir holds longmemeval/ and madial_bench/ ("../shared/data").
	DataDir string
	// LongMemEvalFile is the LongMemEval file (default DataDir/longmemeval/longmemeval_s_dev.json.gz).
	LongMemEvalFile string
	// MADialDir is the MADial-Bench folder (default DataDir/madial_bench).
	MADialDir string
	// Sets are the sets to run (default AllSets).
	Sets []string
	// N samples N LongMemEval questions, stratified by question type (0: all).
	N int
	// Seed seeds the sample (1).
	Seed uint64
	// Concurrency bounds the retrieve requests in flight (4).
	Concurrency int
	// Window bounds the sessions published at once, hence the PubAcks outstanding (256).
	Window int
	// Timeout bounds one retrieve request or one publish (30s: a user's first request loads its
	// whole archive).
	Timeout time.Duration
	// WaitTimeout bounds the wait for the service to apply everything published (10m).
	WaitTimeout time.Duration
	// Poll is the interval of the consumer checks while waiting (250ms).
	Poll time.Duration
	// Settle is an extra wait after the consumers drained (2s; negative: none).
	Settle time.Duration
	// MaxErrors is how many failed retrieve requests a run tolerates before it fails (0).
	MaxErrors int
	// SkipIngest only asks: the sets were published to the service by an earlier run (with the
	// same N and Seed).
	SkipIngest bool
	// Progress, when set, is told of every answered question of a set (done of total) instead of
	// the log lines at each tenth; memeval draws a progress bar with it. It is called from the
	// goroutines asking, one call at a time.
	Progress func(set string, done, total int)
}

func (c Config) withDefaults() Config {
	if c.DataDir == "" {
		c.DataDir = filepath.Join("..", "shared", "data")
	}
	if c.LongMemEvalFile == "" {
		c.LongMemEvalFile = filepath.Join(c.DataDir, "longmemeval", "longmemeval_s_dev.json.gz")
	}
	if c.MADialDir == "" {
		c.MADialDir = filepath.Join(c.DataDir, "madial_bench")
	}
	if len(c.Sets) == 0 {
		c.Sets = AllSets
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Concurrency == 0 {
		c.Concurrency = 4
	}
	if c.Window == 0 {
		c.Window = 256
	}
	if c.Timeout == 0 {
		c.Timeout = 30 * time.Second
	}
	if c.WaitTimeout == 0 {
		c.WaitTimeout = 10 * time.Minute
	}
	if c.Poll == 0 {
		c.Poll = 250 * time.Millisecond
	}
	if c.Settle == 0 {
		c.Settle = 2 * time.Second
	}
	return c
}

// Validate names the first field that cannot work.
func (c Config) Validate() error {
	for _, s := range c.Sets {
		if !slices.Contains(AllSets, s) {
			return fmt.Errorf("eval: sets: unknown set %q, want %s", s, strings.Join(AllSets, ", "))
		}
	}
	switch {
	case c.N < 0:
		return fmt.Errorf("eval: n %d must not be negative", c.N)
	case c.Concurrency < 1:
		return fmt.Errorf("eval: concurrency %d must be positive", c.Concurrency)
	case c.Window < 1:
		return fmt.Errorf("eval: window %d must be positive", c.Window)
	case c.Timeout < 0 || c.WaitTimeout < 0 || c.Poll < 0:
		return errors.New("eval: timeout, wait timeout and poll must be positive")
	case c.MaxErrors < 0:
		return fmt.Errorf("eval: max errors %d must not be negative", c.MaxErrors)
	}
	return nil
}

// Runner runs evaluations against one agentmem service over NATS.
type Runner struct {
	cfg Config
	nc  *nats.Conn
	js  jetstream.JetStream
	log zerolog.Logger
}

// New returns a runner that talks to the service on nc. It fails on a bad config.
func New(cfg Config, nc *nats.Conn, log zerolog.Logger) (*Runner, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	return &Runner{cfg: cfg, nc: nc, js: js, log: log.With().Str("component", "eval").Logger()}, nil
}

// Report is what a run measured.
type Report struct {
	Publish PublishStats  `json:"publish"`
	Drain   time.Duration `json:"drain_ns"`
	Sets    []SetReport   `json:"sets"`
}

// SetReport is what a run measured on one set.
type SetReport struct {
	Name    string `json:"name"`
	Queries int    `json:"queries"`
	Errors  int    `json:"errors"`
	// FirstError is the first failed request's error.
	FirstError string `json:"first_error,omitempty"`
	// Means holds, per group (question type, user, Overall), the mean of every metric.
	Means   map[string]map[string]Mean `json:"means"`
	Latency Latency                    `json:"latency"`
	// Questions are the questions' results, for the miss report (WriteMisses).
	Questions []QuestionResult `json:"-"`
}

// Mean returns the mean of metric in group.
func (r SetReport) Mean(group, metric string) Mean { return r.Means[group][metric] }

// Run loads the sets, publishes all of them, waits until the service applied everything, asks
// every question with bounded concurrency and prints one table per set to out. With details
// set, it writes one JSON line per question there (gold, ranked ids, metrics, latency). It fails
// when a set cannot be loaded, publishing or the wait fails, ctx ends, or more retrieve requests
// fail than Config.MaxErrors allows; low recall is not a failure.
func (r *Runner) Run(ctx context.Context, out, details io.Writer) (Report, error) {
	var rep Report
	var sets []*Set
	var sessions []Session
	for _, name := range r.cfg.Sets {
		set, err := r.load(name)
		if err != nil {
			return rep, err
		}
		sets = append(sets, set)
		sessions = append(sessions, set.Sessions...)
	}
	if !r.cfg.SkipIngest {
		if err := r.ingest(ctx, sessions, len(sets), &rep, out); err != nil {
			return rep, err
		}
	}
	sessions = nil
	for _, set := range sets {
		set.Sessions = nil // published: only the questions are needed from here on
	}
	dw := newDetailWriter(details)
	var failed []string
	for _, set := range sets {
		sr := r.ask(ctx, set, dw)
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		rep.Sets = append(rep.Sets, sr)
		printSet(out, set, sr)
		if sr.Errors > 0 {
			failed = append(failed, fmt.Sprintf("%s: %d of %d requests failed, first: %s", set.Name, sr.Errors, sr.Queries, sr.FirstError))
		}
	}
	if err := dw.err(); err != nil {
		return rep, fmt.Errorf("writing the per-question output: %w", err)
	}
	errs := 0
	for _, sr := range rep.Sets {
		errs += sr.Errors
	}
	if errs > r.cfg.MaxErrors {
		return rep, fmt.Errorf("eval: %d retrieve requests failed (tolerated: %d): %s", errs, r.cfg.MaxErrors, strings.Join(failed, "; "))
	}
	return rep, nil
}

// ingest publishes sessions, waits until the service applied them and settles.
func (r *Runner) ingest(ctx context.Context, sessions []Session, sets int, rep *Report, out io.Writer) error {
	r.log.Info().Msgf("publishing %d sessions of %d set(s), %d sessions at a time", len(sessions), sets, r.cfg.Window)
	st, err := publish(ctx, r.nc, sessions, r.cfg.Window, r.cfg.Timeout, r.log)
	rep.Publish = st
	if err != nil {
		return err
	}
	r.log.Info().Msgf("published %d turns and %d session ends in %s (%.0f events/s; %d duplicates, %d retried)",
		st.Turns, st.Ends, st.Elapsed.Round(time.Millisecond), float64(st.Turns+st.Ends)/max(st.Elapsed.Seconds(), 1e-9), st.Duplicates, st.Retried)
	if rep.Drain, err = waitDrained(ctx, r.js, r.cfg.Poll, r.cfg.WaitTimeout, r.log); err != nil {
		return err
	}
	if r.cfg.Settle > 0 {
		r.log.Info().Msgf("settling for %s", r.cfg.Settle)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(r.cfg.Settle):
		}
	}
	fmt.Fprintf(out, "ingest: %d sessions (%d turns) published in %s, all applied %s after that\n\n",
		st.Sessions, st.Turns, st.Elapsed.Round(time.Millisecond), rep.Drain.Round(time.Millisecond))
	return nil
}

func (r *Runner) load(name string) (*Set, error) {
	var set *Set
	var notes []string
	var err error
	switch name {
	case SetLongMemEval:
		set, notes, err = LongMemEvalSet(r.cfg.LongMemEvalFile, r.cfg.N, r.cfg.Seed)
	default:
		set, notes, err = MADialSet(r.cfg.MADialDir, strings.TrimPrefix(name, "madial-"))
	}
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", name, err)
	}
	for _, n := range notes {
		r.log.Info().Msgf("%s: %s", name, n)
	}
	return set, nil
}

// ask asks every question of set, Concurrency at a time.
func (r *Runner) ask(ctx context.Context, set *Set, dw *detailWriter) SetReport {
	clients := map[string]*client.Client{}
	for _, q := range set.Queries {
		if _, ok := clients[q.Tenant]; !ok {
			cl, err := client.New(r.nc, client.Options{Tenant: q.Tenant, Source: "agentmem/memeval", Timeout: r.cfg.Timeout})
			if err != nil {
				return SetReport{Name: set.Name, Queries: len(set.Queries), Errors: len(set.Queries), FirstError: err.Error()}
			}
			clients[q.Tenant] = cl
		}
	}
	acc := newMeans()
	var lat latencies
	prog := newProgress(r.log, set.Name+": queries", len(set.Queries))
	if r.cfg.Progress != nil {
		prog.report = func(done, total int) { r.cfg.Progress(set.Name, done, total) }
	}
	var mu sync.Mutex
	errCount, firstErr := 0, ""
	var results []QuestionResult
	next := make(chan int)
	var wg sync.WaitGroup
	for range r.cfg.Concurrency {
		wg.Go(func() {
			for i := range next {
				q := set.Queries[i]
				qctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
				start := time.Now()
				reply, err := clients[q.Tenant].Retrieve(qctx, q.Request)
				rtt := time.Since(start)
				cancel()
				var ranked []string // a failed request recalls nothing
				if err != nil {
					mu.Lock()
					if errCount++; firstErr == "" {
						firstErr = fmt.Sprintf("%s: %v", q.ID, err)
					}
					mu.Unlock()
				} else {
					lat.add(rtt)
					ranked = RankedTurnIDs(reply.Entries, q.IsTurn)
				}
				metrics := q.Score(ranked)
				acc.add(metrics, q.Group, Overall)
				res := QuestionResult{ID: q.ID, Group: q.Group, Query: q.Request.Query, Metrics: metrics, Ranks: map[string]int{}}
				for _, a := range q.Answers {
					res.Ranks[a.Label], res.Order = a.Rank(ranked), append(res.Order, a.Label)
				}
				mu.Lock()
				results = append(results, res)
				mu.Unlock()
				rec := map[string]any{"set": set.Name, "id": q.ID, "group": q.Group, "user": q.Request.User,
					"query": q.Request.Query, "at": q.Request.At, "ranked": ranked, "metrics": metrics,
					"latency_ms": float64(rtt) / float64(time.Millisecond)}
				for k, v := range q.Detail {
					rec[k] = v
				}
				if err != nil {
					rec["error"] = err.Error()
				} else {
					rec["entries"] = len(reply.Entries)
				}
				dw.write(rec)
				prog.add(1)
			}
		})
	}
	for i := range set.Queries {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	slices.SortFunc(results, func(a, b QuestionResult) int { return strings.Compare(a.ID, b.ID) })
	return SetReport{Name: set.Name, Queries: len(set.Queries), Errors: errCount, FirstError: firstErr,
		Means: acc.result(), Latency: lat.summary(), Questions: results}
}

// detailWriter writes one JSON object per line; safe for concurrent use, a no-op without a
// writer.
type detailWriter struct {
	mu    sync.Mutex
	enc   *json.Encoder
	first error
}

func newDetailWriter(w io.Writer) *detailWriter {
	if w == nil {
		return &detailWriter{}
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return &detailWriter{enc: enc}
}

func (d *detailWriter) write(v any) {
	if d.enc == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.enc.Encode(v); err != nil && d.first == nil {
		d.first = err
	}
}

func (d *detailWriter) err() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.first
}
