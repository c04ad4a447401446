// Command memeval measures agentmem's retrieval on the development sets (LongMemEval_S dev,
// MADial-Bench zh and en, which docs/eval.md says where to get): it publishes every session over NATS with the wire contract, waits
// until the service applied them, asks every question and prints recall beside the BM25
// baselines, with retrieve latency. By default it runs its own all-in-one service in-process
// (embedded NATS in a temporary directory); with --nats it uses a running one.
//
// The in-process service uses the embedder of --embed (the same flags as memoryd: auto, local,
// off, or an OpenAI-compatible endpoint with --embed-base-url) and ranks by --rank (fused,
// keyword or vector). --ablation runs every set under each configuration, each on a fresh
// service: keywords alone with the default ranking and with each technique of eval.Techniques
// switched; the embedder (--embed local, or a model) with vectors alone and fused with keywords;
// and ends with one table of them.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/agentmem/agentmem/cmd/internal/settings"
	"github.com/agentmem/agentmem/internal/broker"
	"github.com/agentmem/agentmem/internal/daemon"
	"github.com/agentmem/agentmem/internal/eval"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/internal/retrieve"
)

func main() {
	ctx, stop := settings.SignalContext()
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		os.Exit(settings.Report(os.Stdout, os.Stderr, "memeval", err))
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("memeval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	data := fs.String("data", "eval-data", "folder with longmemeval/ and madial_bench/ (docs/eval.md says where to get them)")
	sets := fs.String("sets", strings.Join(eval.AllSets, ","), "comma-separated sets to run: "+strings.Join(eval.AllSets, ", "))
	n := fs.Int("n", 0, "sample N LongMemEval questions, stratified by question type (0: all)")
	seed := fs.Uint64("seed", 1, "seed of the LongMemEval sample")
	concurrency := fs.Int("concurrency", 4, "retrieve requests in flight")
	inflight := fs.Int("inflight", 256, "sessions published at once (bounds the outstanding PubAcks)")
	timeout := fs.Duration("timeout", 30*time.Second, "timeout of one retrieve request or publish (a user's first request loads its whole archive)")
	waitTimeout := fs.Duration("wait-timeout", 10*time.Minute, "how long to wait for the service to apply everything published")
	settle := fs.Duration("settle", 2*time.Second, "extra wait after the turns stream's consumers drained (negative: none)")
	maxErrors := fs.Int("max-errors", 0, "fail when more retrieve requests than this fail")
	outPath := fs.String("out", "", "write one JSON line per question (gold, ranked ids, metrics, latency) to this file")
	missesPath := fs.String("misses", "", "write the miss report to this file (markdown): for every question the default ranking misses at 10, the rank of each answer, and with --ablation the configurations that moved it")
	natsURL := fs.String("nats", "", "NATS URL of a running agentmem service (default: start one in-process)")
	creds := fs.String("creds", "", "NATS credentials file (with --nats)")
	natsUser := fs.String("nats-user", "", "NATS user name (with --nats)")
	natsPassword := fs.String("nats-password", "", "NATS password (with --nats)")
	serviceLog := fs.String("service-log-level", "warn", "log level of the in-process service")
	skipIngest := fs.Bool("skip-ingest", false, "only ask (with --nats: the sets were published by an earlier run with the same --n and --seed)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run (the in-process service included) to this file")
	quiet := fs.Bool("quiet", false, "no progress bar (there is none either when stderr is not a terminal)")
	embedFlags := settings.BindEmbed(fs)
	rankBy := fs.String("rank", retrieve.RankFused, "what the in-process retriever ranks by: fused (keyword and vector relevance), keyword or vector")
	vectorWeight := fs.Float64("vector-weight", 0, "weight of vector relevance in the fusion (0: the retriever's default)")
	tuningJSON := fs.String("tuning", "", `the in-process retriever's tuning as JSON over the defaults, e.g. {"Rank":{"Diversity":0.85},"PeriodWeight":0.6} (eval.Tuning, rank.Config: field names as in Go; -1 switches a component off); with --ablation, every row starts from it`)
	ablation := fs.Bool("ablation", false, "run the sets under: keywords with the default ranking and with each ranking technique switched; the --embed embedder ranking by vectors alone; fused; then print one table")
	logf := settings.BindLog(fs)
	if err := settings.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	log, err := logf.Logger(stderr, "memeval")
	if err != nil {
		return err
	}
	settings.Dump(log, fs)
	if *skipIngest && *natsURL == "" {
		return errors.New("--skip-ingest needs --nats: an in-process service starts empty")
	}
	if *ablation && *natsURL != "" {
		return errors.New("--ablation needs the in-process service (no --nats): it starts one per configuration")
	}
	emb, err := settings.Embedder(embedFlags, log)
	if err != nil {
		return err
	}
	fusion := retrieve.Fusion{Rank: *rankBy, VectorWeight: *vectorWeight}
	if err := fusion.Validate(); err != nil {
		return err
	}
	cfg := eval.Config{
		DataDir: *data, N: *n, Seed: *seed, Concurrency: *concurrency, Window: *inflight,
		Timeout: *timeout, WaitTimeout: *waitTimeout, Settle: *settle, MaxErrors: *maxErrors, SkipIngest: *skipIngest,
	}
	for _, s := range strings.Split(*sets, ",") {
		if s = strings.TrimSpace(s); s != "" {
			cfg.Sets = append(cfg.Sets, s)
		}
	}
	if *settle == 0 {
		cfg.Settle = -1
	}
	if err := checkData(*data, cfg.Sets); err != nil {
		return err
	}
	if !*quiet && isTerminal(stderr) {
		cfg.Progress = questionBar(stderr)
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}

	var base eval.Tuning
	if *tuningJSON != "" {
		dec := json.NewDecoder(strings.NewReader(*tuningJSON))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&base); err != nil {
			return fmt.Errorf("--tuning: %w", err)
		}
		if err := base.Rank.Validate(); err != nil {
			return fmt.Errorf("--tuning: %w", err)
		}
	}
	svc := service{embedder: emb, fusion: fusion, logf: logf, stderr: stderr, level: *serviceLog, tuning: base}
	if *natsURL != "" {
		conn := settings.Conn{URL: *natsURL, Creds: *creds, User: *natsUser, Password: *natsPassword}
		svc.conn = &conn
	}
	var details io.Writer
	if *outPath != "" {
		f, err := os.Create(*outPath)
		if err != nil {
			return err
		}
		defer f.Close()
		details = f
	}
	start := time.Now()
	var rows []eval.AblationRow
	if !*ablation {
		rep, err := svc.eval(ctx, cfg, stdout, details, log)
		if err != nil {
			return err
		}
		rows = append(rows, eval.AblationRow{Embedder: "none", Ranking: "defaults", Report: rep})
	} else {
		name := "none"
		if emb != nil {
			name = emb.Name()
		}
		// Keywords alone under the default ranking and each technique switched; then the
		// embedder's vectors alone and fused with the default ranking.
		labels, configs := eval.Ablation(eval.Techniques, base)
		type conf struct {
			emb           retrieve.Embedder
			name, rank    string
			ranking       string
			rankingConfig eval.Tuning
		}
		var confs []conf
		for i := range labels {
			confs = append(confs, conf{nil, "none", retrieve.RankKeyword, labels[i], configs[i]})
		}
		if emb != nil {
			confs = append(confs, conf{emb, name, retrieve.RankVector, labels[0], configs[0]},
				conf{emb, name, retrieve.RankFused, labels[0], configs[0]})
		}
		for _, c := range confs {
			fmt.Fprintf(stdout, "#### embedder %s, rank %s, ranking %s\n\n", c.name, c.rank, c.ranking)
			run := svc
			run.embedder, run.fusion.Rank, run.tuning = c.emb, c.rank, c.rankingConfig
			rep, err := run.eval(ctx, cfg, stdout, details, log)
			if err != nil {
				return err
			}
			rows = append(rows, eval.AblationRow{Embedder: c.name, Rank: c.rank, Ranking: c.ranking, Report: rep})
		}
		fmt.Fprintf(stdout, "#### ablation (overall)\n\n")
		eval.PrintAblation(stdout, rows)
	}
	if *missesPath != "" {
		if err := writeMisses(*missesPath, rows); err != nil {
			return err
		}
	}
	log.Info().Msgf("done in %s", time.Since(start).Round(time.Millisecond))
	if f, ok := details.(*os.File); ok {
		return f.Sync()
	}
	return nil
}

// writeMisses writes the miss report of rows (the defaults first) to path.
func writeMisses(path string, rows []eval.AblationRow) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := eval.WriteMisses(f, rows); err != nil {
		f.Close()
		return fmt.Errorf("writing the miss report: %w", err)
	}
	return f.Close()
}

// setFiles are the files each set reads under --data.
var setFiles = map[string][]string{
	eval.SetLongMemEval: {filepath.Join("longmemeval", "longmemeval_s_dev.json.gz")},
	eval.SetMADialZH:    {filepath.Join("madial_bench", "MADial-Bench-zh-memory.json"), filepath.Join("madial_bench", "MADial-Bench-zh-dialogue.json")},
	eval.SetMADialEN:    {filepath.Join("madial_bench", "MADial-Bench-en-memory.json"), filepath.Join("madial_bench", "MADial-Bench-en-dialogue.json")},
}

// checkData fails, before a service starts, when a file of the sets to run is not in dir; the
// error names the file and where to read how to get the sets. The sets are not in the repository.
func checkData(dir string, sets []string) error {
	if len(sets) == 0 {
		sets = eval.AllSets
	}
	for _, set := range sets {
		for _, f := range setFiles[set] {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				return fmt.Errorf("--data %s: set %s needs %s, which is not there (%v): docs/eval.md says where to get the sets (LongMemEval_S, MADial-Bench) and how to lay them out; --sets runs fewer", dir, set, f, err)
			}
		}
	}
	return nil
}

// service is where an evaluation runs: a running agentmem (conn) or an in-process one with the
// given embedder and fusion.
type service struct {
	conn     *settings.Conn
	embedder retrieve.Embedder
	fusion   retrieve.Fusion
	tuning   eval.Tuning
	logf     *settings.Log
	stderr   io.Writer
	level    string
}

// eval runs cfg's sets against the service (starting an in-process one unless conn is set).
func (s service) eval(ctx context.Context, cfg eval.Config, stdout, details io.Writer, log zerolog.Logger) (eval.Report, error) {
	var nc *nats.Conn
	var err error
	if s.conn != nil {
		if nc, err = s.conn.Connect("memeval"); err != nil {
			return eval.Report{}, err
		}
		defer nc.Close()
	} else {
		svcLog, err := serviceLogger(s.logf, s.stderr, s.level)
		if err != nil {
			return eval.Report{}, err
		}
		dir, err := os.MkdirTemp("", "memeval-*")
		if err != nil {
			return eval.Report{}, err
		}
		defer os.RemoveAll(dir)
		// A throwaway directory removed at the end: nothing to keep through a power cut, so the
		// evaluation does not pay a disk sync per write.
		d, err := daemon.Start(ctx, daemon.Config{
			Broker: broker.Config{Listen: "127.0.0.1:-1", DataDir: dir, Durability: broker.DurabilityInterval},
			Ingest: ingest.Config{IdleTimeout: -1},
			Retrieve: retrieve.Config{Embedder: s.embedder, Fusion: s.fusion, Rank: s.tuning.Rank, IgnorePeriods: s.tuning.IgnorePeriods,
				PeriodWeight: s.tuning.PeriodWeight, Graph: s.tuning.Graph},
		}, svcLog)
		if err != nil {
			return eval.Report{}, fmt.Errorf("starting the in-process service: %w", err)
		}
		defer func() {
			if err := d.Stop(); err != nil {
				log.Warn().Err(err).Msg("stopping the in-process service")
			}
		}()
		log.Info().Str("url", d.URL()).Str("data", dir).Msg("in-process service started")
		if nc, err = nats.Connect(d.URL(), nats.Name("memeval")); err != nil {
			return eval.Report{}, err
		}
		defer nc.Close()
	}
	r, err := eval.New(cfg, nc, log)
	if err != nil {
		return eval.Report{}, err
	}
	return r.Run(ctx, stdout, details)
}

// isTerminal reports whether w is a terminal: only then is a progress bar drawn, so that
// redirected output (make eval > file, CI logs) gets none of its carriage returns.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// questionBar returns an eval.Config.Progress that draws one progress bar per set on w: the
// questions answered of the set's total, their rate and the time left. The bar ends (with a new
// line) when the last question is answered, before the set's results go to stdout.
func questionBar(w io.Writer) func(set string, done, total int) {
	var bar *progressbar.ProgressBar
	var current string
	return func(set string, done, total int) {
		if bar == nil || set != current {
			current = set
			bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(w),
				progressbar.OptionSetDescription(set+": questions"), progressbar.OptionShowCount(),
				progressbar.OptionShowIts(), progressbar.OptionSetItsString("questions"),
				progressbar.OptionSetPredictTime(true), progressbar.OptionThrottle(100*time.Millisecond),
				progressbar.OptionSetWidth(30))
		}
		_ = bar.Set(done)
		if done >= total {
			_ = bar.Finish()
			fmt.Fprintln(w)
		}
	}
}

// serviceLogger is the in-process service's logger: the run's format, its own level (quieter
// than the run's by default).
func serviceLogger(logf *settings.Log, w io.Writer, level string) (zerolog.Logger, error) {
	lvl, err := zerolog.ParseLevel(level)
	if err != nil {
		return zerolog.Nop(), fmt.Errorf("--service-log-level %q: %w", level, err)
	}
	log, err := logf.Logger(w, "memoryd")
	if err != nil {
		return zerolog.Nop(), err
	}
	return log.Level(lvl), nil
}
