// Package settings binds the flags the agentmem commands share (budget, tokenizer, topology,
// logging, NATS connection) to a flag set; every flag has an AGENTMEM_* environment twin (flag
// "context-window" reads AGENTMEM_CONTEXT_WINDOW). Only commands use it: packages receive Config
// structs.
package settings

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/peterbourgon/ff/v3"
	"github.com/rs/zerolog"
	"golang.org/x/term"

	"github.com/agentmem/agentmem/internal/embed"
	"github.com/agentmem/agentmem/internal/embed/wordvec"
	"github.com/agentmem/agentmem/internal/health"
	"github.com/agentmem/agentmem/internal/limits"
	"github.com/agentmem/agentmem/internal/llm"
	"github.com/agentmem/agentmem/internal/metrics"
	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/internal/tracing"
	"github.com/agentmem/agentmem/pkg/events"
	"github.com/agentmem/agentmem/pkg/memory"
)

// EnvPrefix is the prefix of every environment twin.
const EnvPrefix = "AGENTMEM"

// Parse parses args into fs, reading AGENTMEM_* variables for flags not given. It adds
// --version to fs: given on the command line, Parse returns ErrVersion and parses nothing else.
func Parse(fs *flag.FlagSet, args []string) error {
	bindVersion(fs)
	if askedVersion(fs, args) {
		return ErrVersion
	}
	return ff.Parse(fs, args, ff.WithEnvVarPrefix(EnvPrefix))
}

// Budget holds the token budget flags.
type Budget struct {
	ContextWindow, System, Tools, Response int
	Tokenizer                              string
}

// BindBudget registers --context-window, --reserve-system, --reserve-tools, --reserve-response
// and --tokenizer.
func BindBudget(fs *flag.FlagSet) *Budget {
	d := memory.DefaultBudget()
	b := &Budget{}
	fs.IntVar(&b.ContextWindow, "context-window", d.ContextWindow, "model context window in tokens")
	fs.IntVar(&b.System, "reserve-system", d.System, "tokens reserved for the system prompt")
	fs.IntVar(&b.Tools, "reserve-tools", d.Tools, "tokens reserved for tool definitions")
	fs.IntVar(&b.Response, "reserve-response", d.Response, "tokens reserved for the response")
	bindTokenizer(fs, &b.Tokenizer)
	return b
}

// BindTokenizer registers --tokenizer alone, for the workers that count tokens without a budget
// (compressor, extractor): pass it to their Config's Tokenizer.
func BindTokenizer(fs *flag.FlagSet) *string {
	s := new(string)
	bindTokenizer(fs, s)
	return s
}

func bindTokenizer(fs *flag.FlagSet, s *string) {
	fs.StringVar(s, "tokenizer", "estimate", "token counter: estimate (ceil(cjk/1.5 + other/4)) or o200k (exact, offline)")
}

// Memory returns the budget as memory.Budget.
func (b *Budget) Memory() memory.Budget {
	m := memory.DefaultBudget()
	m.ContextWindow, m.System, m.Tools, m.Response = b.ContextWindow, b.System, b.Tools, b.Response
	return m
}

// Topology holds the topology flags.
type Topology struct {
	Prefix           string
	Partitions       int
	Replicas         int
	ArchiveMaxAge    time.Duration
	DuplicateWindow  time.Duration
	DeadLetterMaxAge time.Duration
	ArchiveMaxBytes  int64
	EventsMaxAge     time.Duration
}

// BindTopology registers --prefix, --partitions, --replicas, --archive-max-age,
// --archive-max-bytes, --events-max-age, --duplicate-window and --dlq-max-age.
func BindTopology(fs *flag.FlagSet) *Topology {
	d := events.DefaultTopology()
	t := &Topology{}
	fs.StringVar(&t.Prefix, "prefix", d.Prefix, "name prefix of streams, buckets and consumers")
	fs.IntVar(&t.Partitions, "partitions", d.Partitions, "partitions of the turns stream (fixed once the stream exists)")
	fs.IntVar(&t.Replicas, "replicas", d.Replicas, "replicas of every stream and bucket (3 on a cluster)")
	fs.DurationVar(&t.ArchiveMaxAge, "archive-max-age", 0, "how long turns stay in the archive (0: for ever)")
	fs.DurationVar(&t.DuplicateWindow, "duplicate-window", d.DuplicateWindow, "Nats-Msg-Id deduplication window of the streams")
	fs.DurationVar(&t.DeadLetterMaxAge, "dlq-max-age", 0, "how long dead letters are kept (0: for ever)")
	fs.Int64Var(&t.ArchiveMaxBytes, "archive-max-bytes", 0, "largest archive in bytes, oldest turns dropped first (0: no bound)")
	fs.DurationVar(&t.EventsMaxAge, "events-max-age", 0, "how long pressure, summary and fact events are kept (0: for ever)")
	return t
}

// Events returns the topology as events.Topology.
func (t *Topology) Events() events.Topology {
	e := events.DefaultTopology()
	e.Prefix, e.Partitions, e.Replicas = t.Prefix, t.Partitions, t.Replicas
	e.ArchiveMaxAge, e.DuplicateWindow, e.DeadLetterMaxAge = t.ArchiveMaxAge, t.DuplicateWindow, t.DeadLetterMaxAge
	e.ArchiveMaxBytes, e.EventsMaxAge = t.ArchiveMaxBytes, t.EventsMaxAge
	return e
}

// BindLLM registers --llm-base-url, --llm-api-key, --llm-model, --llm-timeout and
// --llm-concurrency (AGENTMEM_LLM_BASE_URL, AGENTMEM_LLM_API_KEY, AGENTMEM_LLM_MODEL, …).
func BindLLM(fs *flag.FlagSet) *llm.Config {
	c := &llm.Config{}
	bindEndpoint(fs, "llm", &c.Endpoint, "OpenAI-compatible API root (GLM, OpenAI, DeepSeek, Ollama, vLLM, llama.cpp); empty: offline",
		"LLM", "model name")
	fs.DurationVar(&c.Timeout, "llm-timeout", llm.DefaultTimeout, "timeout of one LLM call attempt")
	fs.IntVar(&c.MaxConcurrency, "llm-concurrency", llm.DefaultMaxConcurrency, "LLM calls in flight at once")
	return c
}

// bindEndpoint registers --<name>-base-url, --<name>-api-key and --<name>-model into e: the
// flags every OpenAI-compatible endpoint has. what names the endpoint in the key's usage.
func bindEndpoint(fs *flag.FlagSet, name string, e *llm.Endpoint, baseURLUsage, what, modelUsage string) {
	fs.StringVar(&e.BaseURL, name+"-base-url", "", baseURLUsage)
	fs.StringVar(&e.APIKey, name+"-api-key", "", "API key of the "+what+" endpoint (secret)")
	fs.StringVar(&e.Model, name+"-model", "", modelUsage)
}

// Embed holds the embedding flags: which embedder (Mode) and the OpenAI-compatible endpoint's
// settings.
type Embed struct {
	embed.Config
	// Mode is "auto" (the endpoint when --embed-base-url is set, else none), "local"
	// (the shipped word-vector embedder, package wordvec) or "off" (no vectors: keyword relevance
	// only).
	Mode string
}

// Embed modes.
const (
	EmbedAuto  = "auto"
	EmbedLocal = "local"
	EmbedOff   = "off"
)

// LocalEmbedDefault says whether "auto" without an endpoint uses the local embedder. It does
// not: on the development sets the local embedder fused with keywords raised only MADial-Bench en
// (R@10 +0.017; LongMemEval_S and MADial-Bench zh unchanged) and cost warm retrieves far more than
// the 20 % it may (BenchmarkWarmEmbed10k: p50 +26 to +49 %, p99 ×2.6 to ×3.9;
// docs/embeddings.md). So the default is keywords only until a model is configured; --embed local
// keeps it available.
const LocalEmbedDefault = false

// BindEmbed registers --embed, --embed-base-url, --embed-api-key, --embed-model and
// --embed-dimensions (AGENTMEM_EMBED, AGENTMEM_EMBED_BASE_URL, AGENTMEM_EMBED_API_KEY,
// AGENTMEM_EMBED_MODEL, AGENTMEM_EMBED_DIMENSIONS).
func BindEmbed(fs *flag.FlagSet) *Embed {
	c := &Embed{}
	fs.StringVar(&c.Mode, "embed", EmbedAuto, "embedder: auto (the --embed-base-url endpoint when set, else none: keyword relevance only), local (shipped GloVe word vectors, English only, no endpoint) or off (keyword relevance only)")
	bindEndpoint(fs, "embed", &c.Endpoint, "OpenAI-compatible /embeddings API root (OpenAI, GLM, Ollama, vLLM, …); empty: none, or the local embedder with --embed local",
		"embeddings", "embedding model name of the endpoint")
	fs.IntVar(&c.Dimensions, "embed-dimensions", 0, "embedding dimensions to ask for (0: the model's)")
	return c
}

// Embedder builds the embedder the flags describe, or nil when none is in use (--embed off, or
// auto without an endpoint when the local embedder is not the default). It fails on an unknown
// mode, on --embed local or off together with an endpoint, and on a bad endpoint configuration.
func Embedder(c *Embed, log zerolog.Logger) (embed.Embedder, error) {
	endpoint := c.BaseURL != "" || c.Model != ""
	local := func() (embed.Embedder, error) {
		e, err := wordvec.New()
		if err != nil {
			return nil, err
		}
		log.Info().Str("embedder", e.Name()).Msg("local embedder (English word vectors; --embed-base-url for a real model, --embed off for keywords only)")
		return e, nil
	}
	switch c.Mode {
	case EmbedAuto, "":
		if endpoint {
			return embed.NewOpenAI(c.Config, log)
		}
		if !LocalEmbedDefault {
			log.Info().Msg("no embedder: keyword relevance only (--embed-base-url and --embed-model for a model, --embed local for the shipped word vectors)")
			return nil, nil
		}
		return local()
	case EmbedLocal, EmbedOff:
		if endpoint {
			return nil, fmt.Errorf("--embed %s: --embed-base-url and --embed-model configure an endpoint; leave them empty or use --embed auto", c.Mode)
		}
		if c.Mode == EmbedOff {
			return nil, nil
		}
		return local()
	}
	return nil, fmt.Errorf("--embed %q: want auto, local or off", c.Mode)
}

// BindLimits registers --limits: a JSON file of per-tenant limits.
func BindLimits(fs *flag.FlagSet) *string {
	return fs.String("limits", "", `per-tenant limits, JSON: {"default": {"max_turn_bytes", "turns_per_second", "turn_burst", "retrieves_per_second", "retrieve_burst"}, "tenants": {"acme": {...}}}`)
}

// Limiter loads the limits file (nil when none is given).
func Limiter(path string) (*limits.Limiter, error) {
	if path == "" {
		return nil, nil
	}
	c, err := limits.Load(path)
	if err != nil {
		return nil, err
	}
	return limits.New(c), nil
}

// Log holds the logging flags.
type Log struct{ Level, Format string }

// BindLog registers --log-level and --log-format.
func BindLog(fs *flag.FlagSet) *Log {
	l := &Log{}
	fs.StringVar(&l.Level, "log-level", "info", "log level: trace, debug, info, warn, error")
	fs.StringVar(&l.Format, "log-format", "console", "log format: console or json")
	return l
}

// Logger builds the logger the flags describe, writing to w.
func (l *Log) Logger(w io.Writer, component string) (zerolog.Logger, error) {
	lvl, err := zerolog.ParseLevel(l.Level)
	if err != nil {
		return zerolog.Nop(), fmt.Errorf("log level %q: %w", l.Level, err)
	}
	switch l.Format {
	case "json":
	case "console":
		// Colours only for a terminal (and not with NO_COLOR): a log file or a pipe gets plain text.
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.RFC3339, NoColor: !colourful(w)}
	default:
		return zerolog.Nop(), fmt.Errorf("log format %q: want console or json", l.Format)
	}
	return zerolog.New(w).Level(lvl).With().Timestamp().Str("service", component).Logger(), nil
}

// colourful reports whether w is a terminal that may get ANSI colours (NO_COLOR unset).
func colourful(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && os.Getenv("NO_COLOR") == "" && term.IsTerminal(int(f.Fd()))
}

// Conn holds the NATS connection flags of the separate workers and the CLI.
type Conn struct {
	URL, Creds, User, Password, NKey, InboxPrefix, CAFile string
}

// BindConn registers --nats, --creds, --nats-user, --nats-password, --nkey, --inbox-prefix and
// --tls-ca.
func BindConn(fs *flag.FlagSet) *Conn {
	c := &Conn{}
	fs.StringVar(&c.URL, "nats", nats.DefaultURL, "NATS server URL")
	fs.StringVar(&c.Creds, "creds", "", "NATS credentials file (user JWT and seed: what memctl auth writes)")
	fs.StringVar(&c.User, "nats-user", "", "NATS user name")
	fs.StringVar(&c.Password, "nats-password", "", "NATS password")
	fs.StringVar(&c.NKey, "nkey", "", "NKey seed file of this credential (a hand-written configuration with NKey users; memctl auth writes .creds files for --creds)")
	fs.StringVar(&c.InboxPrefix, "inbox-prefix", "", "reply inbox prefix (optional: agents of each tenant have an account of their own, so the default _INBOX works)")
	fs.StringVar(&c.CAFile, "tls-ca", "", "CA certificate file to verify the server's TLS certificate")
	return c
}

// Connect opens the connection the flags describe; it fails at once when no server answers.
func (c *Conn) Connect(name string) (*nats.Conn, error) {
	return c.connect(name)
}

// ConnectWorker opens a worker's connection: a worker started before its NATS server (compose,
// systemd) keeps trying instead of exiting.
func (c *Conn) ConnectWorker(name string) (*nats.Conn, error) {
	return c.connect(name, nats.RetryOnFailedConnect(true))
}

func (c *Conn) connect(name string, extra ...nats.Option) (*nats.Conn, error) {
	opts := append([]nats.Option{nats.Name(name), nats.MaxReconnects(-1), nats.SyncQueueLen(session.SyncQueueLen)}, extra...)
	if c.Creds != "" {
		opts = append(opts, nats.UserCredentials(c.Creds))
	}
	if c.User != "" {
		opts = append(opts, nats.UserInfo(c.User, c.Password))
	}
	if c.NKey != "" {
		o, err := nats.NkeyOptionFromSeed(c.NKey)
		if err != nil {
			return nil, fmt.Errorf("--nkey: %w", err)
		}
		opts = append(opts, o)
	}
	if c.InboxPrefix != "" {
		opts = append(opts, nats.CustomInboxPrefix(c.InboxPrefix))
	}
	if c.CAFile != "" {
		opts = append(opts, nats.RootCAs(c.CAFile))
	}
	nc, err := nats.Connect(c.URL, opts...)
	if errors.Is(err, nats.ErrNoServers) {
		return nil, fmt.Errorf("connecting to %s: %w (is memoryd running? `make run` starts it; --nats or AGENTMEM_NATS names another server)", c.URL, err)
	}
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", c.URL, err)
	}
	return nc, nil
}

// Dump logs the effective value of every flag, secrets masked.
func Dump(log zerolog.Logger, fs *flag.FlagSet) {
	ev := log.Info()
	fs.VisitAll(func(f *flag.Flag) {
		v := f.Value.String()
		if Secret(f.Name) && v != "" {
			v = "****"
		}
		ev = ev.Str(f.Name, v)
	})
	ev.Msg("effective configuration")
}

// Secret reports whether a flag holds a secret that must never be printed.
func Secret(name string) bool {
	n := strings.ToLower(name)
	for _, s := range []string{"password", "key", "secret", "token", "creds"} {
		if strings.Contains(n, s) && !strings.Contains(n, "tokens") && n != "tokenizer" {
			return true
		}
	}
	return false
}

// BindHealth registers --health-listen: the address of the /healthz and /readyz endpoints (empty:
// none).
func BindHealth(fs *flag.FlagSet) *string {
	return fs.String("health-listen", "", "address of the HTTP /healthz and /readyz endpoints, e.g. :8080 (empty: none)")
}

// BindMetrics registers --metrics: the address of a listener serving only /metrics (empty:
// none; /metrics is also served on --health-listen, and on memoryd's --http).
func BindMetrics(fs *flag.FlagSet) *string {
	return fs.String("metrics", "", "address of a Prometheus /metrics endpoint, e.g. :9090 (empty: none; /metrics is also on --health-listen)")
}

// ServeMetrics serves m on addr's /metrics in the background until ctx ends.
func ServeMetrics(ctx context.Context, addr string, m *metrics.Metrics, log zerolog.Logger) {
	if addr == "" || m == nil {
		return
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()
	go func() {
		log.Info().Str("addr", addr).Msg("metrics endpoint")
		if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error().Err(err).Str("addr", addr).Msg("metrics endpoint failed")
		}
	}()
}

// Tracing holds the tracing flags.
type Tracing struct {
	endpoint *string
	ratio    *float64
}

// BindTracing registers --otlp-endpoint and --trace-sample (tracing is off without an endpoint).
func BindTracing(fs *flag.FlagSet) *Tracing {
	return &Tracing{
		endpoint: fs.String("otlp-endpoint", "", "OTLP/HTTP collector base URL for traces, e.g. http://localhost:4318 (empty: no tracing)"),
		ratio:    fs.Float64("trace-sample", 1, "share of new traces recorded, 0 to 1 (traces begun by a sampled publisher are always recorded)"),
	}
}

// Provider starts the tracer provider of service (a no-op one when tracing is off). Shut it
// down on exit so the last spans are exported.
func (t *Tracing) Provider(ctx context.Context, service string, log zerolog.Logger) (*tracing.Provider, error) {
	cfg := tracing.Config{Endpoint: strings.TrimRight(*t.endpoint, "/"), SampleRatio: *t.ratio, Service: service}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("--otlp-endpoint/--trace-sample: %w", err)
	}
	p, err := tracing.New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Enabled() {
		log.Info().Str("endpoint", cfg.Endpoint).Float64("sample", cfg.SampleRatio).Msg("tracing on")
	}
	return p, nil
}

// ShutdownTracing exports the spans p still holds, waiting at most 5 seconds.
func ShutdownTracing(p *tracing.Provider, log zerolog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Shutdown(ctx); err != nil {
		log.Warn().Err(err).Msg("exporting the last spans")
	}
}

// WorkerMetrics returns the metrics of a worker process, with the lag of the consumers keep
// picks (all when nil) and the stream sizes read at each scrape.
func WorkerMetrics(js jetstream.JetStream, topo events.Topology, keep func(stream, consumer string) bool) *metrics.Metrics {
	m := metrics.New()
	_ = m.Register(metrics.LagCollector(js, topo, keep, 5*time.Second))
	return m
}

// ServeHealth serves the health endpoints, and /metrics when m is not nil, on addr in the
// background until ctx ends, with a check that nc is connected.
func ServeHealth(ctx context.Context, addr string, nc *nats.Conn, m *metrics.Metrics, log zerolog.Logger) {
	if addr == "" {
		return
	}
	hs := health.New(log)
	hs.Add("nats", health.NATS(nc))
	if m != nil {
		hs.Handle("GET /metrics", m.Handler())
	}
	go func() {
		if err := hs.Serve(ctx, addr); err != nil {
			log.Error().Err(err).Str("addr", addr).Msg("health endpoint failed")
		}
	}()
}

// SignalContext is cancelled on SIGINT or SIGTERM.
func SignalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}
