// Command memoryd runs agentmem on one box: an embedded NATS server with JetStream (file
// storage) and every worker in one process. Other processes (the separate workers, memctl, the
// nats CLI, agents) connect to it on --listen.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmem/agentmem/cmd/internal/settings"
	"github.com/agentmem/agentmem/internal/broker"
	"github.com/agentmem/agentmem/internal/compress"
	"github.com/agentmem/agentmem/internal/daemon"
	"github.com/agentmem/agentmem/internal/datadir"
	"github.com/agentmem/agentmem/internal/extract"
	"github.com/agentmem/agentmem/internal/gateway"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/internal/metrics"
	"github.com/agentmem/agentmem/internal/retrieve"
	"github.com/agentmem/agentmem/pkg/memory"
)

func main() {
	ctx, stop := settings.SignalContext()
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		os.Exit(settings.Report(os.Stdout, os.Stderr, "memoryd", err))
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("memoryd", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:4222", "address the embedded NATS server listens on")
	data := fs.String("data", "./data", "JetStream storage directory")
	natsConfig := fs.String("nats-config", "", "nats-server configuration file (authorization, TLS); SIGHUP reloads it")
	creds := fs.String("creds", "", "credentials file of memoryd's own (worker) user, when the configuration requires one (memctl auth writes it)")
	nkey := fs.String("nkey", "", "NKey seed file of memoryd's own credential, for a hand-written configuration with NKey users")
	durability := fs.String("durability", string(broker.DurabilitySync), "when an acknowledged write is on disk: sync (every turn synced before its acknowledgement, survives a power cut; what memoryd derives from the turns is synced at checkpoints and rebuilt from the turns after an unclean stop), sync-all (every write synced) or interval (synced every --sync-interval; a power cut loses up to that much); docs/operations.md")
	syncInterval := fs.Duration("sync-interval", 2*time.Minute, "how often --durability interval syncs to disk")
	maxPayload := fs.Int("max-payload", 0, "largest message the server accepts in bytes (0: NATS default, 1 MiB)")
	summaryTokens := fs.Int("summary-tokens", 2000, "token cap a compression range is accounted at")
	maxContent := fs.Int("max-content-bytes", 256<<10, "largest turn content accepted")
	idle := fs.Duration("idle-timeout", ingest.DefaultIdleTimeout, "end a session after this long without a turn (negative: never)")
	repressure := fs.Duration("repressure-after", ingest.DefaultRepressureAfter, "re-emit the pressure of a range whose summary has not arrived after this long (negative: never)")
	decay := fs.String("decay", "linear:24h:0.5", "time decay of retrieval scores: linear:WINDOW:FLOOR, halflife:HALFLIFE:FLOOR or none")
	llmCfg := settings.BindLLM(fs)
	healthAddr := settings.BindHealth(fs)
	metricsAddr := settings.BindMetrics(fs)
	pprofAddr := fs.String("pprof", "", "address of the Go profiler's HTTP endpoints (/debug/pprof/: heap, CPU, goroutines), e.g. 127.0.0.1:6060 (empty: none; it shows the process's internals: bind it to loopback)")
	tracer := settings.BindTracing(fs)
	httpAddr := fs.String("http", "", "address of the HTTP server, e.g. 127.0.0.1:8080: the HTTP API and MCP under /v1/, the inspector under /inspector/, /metrics, /healthz, /readyz (empty: none)")
	httpTokens := fs.String("http-tokens", "", `bearer tokens of the HTTP API, a JSON file {"token": "tenant", …} (empty: no authentication, the tenant is the URL's)`)
	inspectorToken := fs.String("inspector-token", "", "bearer token of the inspector's API, for every tenant; required when --http is not a loopback address or the service has tenants (--http-tokens, NATS authentication); empty: none, and then a single-user inspector answers loopback callers only")
	inspectorTokens := fs.String("inspector-tokens", "", `bearer tokens of the inspector's API scoped to one tenant each, a JSON file {"token": "tenant", …}`)
	mcpSessions := fs.Int("mcp-sessions", gateway.DefaultMCPSessions, "open MCP sessions kept on --http for all tenants; when all are open a tenant closes its own oldest to open one, a tenant with none gets 503")
	mcpPerTenant := fs.Int("mcp-sessions-per-tenant", gateway.DefaultMCPSessionsPerTenant, "open MCP sessions kept on --http per tenant; beyond it a new one closes the tenant's own least recently used")
	budget := settings.BindBudget(fs)
	topo := settings.BindTopology(fs)
	embedCfg := settings.BindEmbed(fs)
	prevModel := fs.String("embed-previous-model", "", "during a model change, the model of the same endpoint the stored vectors were made with: queries use it until memctl reembed has completed --embed-model (docs/vectors.md)")
	limitsFile := settings.BindLimits(fs)
	mem := settings.BindMemory(fs)
	viewIdle := retrieve.BindViewIdle(fs)
	storedViews := retrieve.BindStoredViews(fs)
	warmViews := retrieve.BindWarmViews(fs)
	viewFiles := fs.Bool("view-files", true, "keep the stored views (--stored-views) as files under --data ("+daemon.ViewDirName+"/) when the streams have one replica, read without the server (false: in the view bucket AGENTMEM_VIEWS)")
	logf := settings.BindLog(fs)
	if err := settings.Parse(fs, args); err != nil {
		return err
	}
	log, err := logf.Logger(os.Stderr, "memoryd")
	if err != nil {
		return err
	}
	settings.Dump(log, fs)
	if err := mem.Apply(log); err != nil {
		return err
	}
	tp, err := tracer.Provider(ctx, "memoryd", log)
	if err != nil {
		return err
	}
	defer settings.ShutdownTracing(tp, log)
	dur, err := broker.ParseDurability(*durability)
	if err != nil {
		return fmt.Errorf("--durability: %w", err)
	}
	lim, err := settings.Limiter(*limitsFile)
	if err != nil {
		return err
	}
	d, err := memory.ParseDecay(*decay)
	if err != nil {
		return fmt.Errorf("--decay: %w", err)
	}
	m := metrics.New()
	embedCfg.Metrics = m
	emb, err := settings.Embedder(embedCfg, log)
	if err != nil {
		return err
	}
	var embedder retrieve.Embedder
	if emb != nil {
		embedder = emb
	}
	// The stage embeds each stored text once: its own client of the endpoint, without the query
	// cache (the local embedder needs no second copy).
	var stage retrieve.Embedder
	if embedder != nil && embedCfg.BaseURL != "" {
		stageCfg := *embedCfg
		stageCfg.CacheEntries = -1
		st, err := settings.Embedder(&stageCfg, log)
		if err != nil {
			return err
		}
		if st != nil {
			stage = st
		}
	}
	var prev retrieve.Embedder
	if *prevModel != "" {
		// The same endpoint with the model the stored vectors were made with.
		prevCfg := *embedCfg
		prevCfg.Model = *prevModel
		p, err := settings.Embedder(&prevCfg, log)
		if err != nil || p == nil || embedder == nil || p.Name() == embedder.Name() {
			return fmt.Errorf("--embed-previous-model %q: it needs --embed-base-url and a different --embed-model (%v)", *prevModel, err)
		}
		prev = p
	}
	cfg := daemon.Config{
		Broker: broker.Config{Listen: *listen, DataDir: *data, ConfigFile: *natsConfig, MaxPayload: int32(*maxPayload),
			Durability: dur, SyncInterval: *syncInterval},
		Topology: topo.Events(),
		Ingest: ingest.Config{
			Budget: budget.Memory(), Tokenizer: budget.Tokenizer, SummaryTokens: *summaryTokens,
			MaxContentBytes: *maxContent, IdleTimeout: *idle, RepressureAfter: *repressure, Limits: lim,
		},
		Retrieve: retrieve.Config{Tokenizer: budget.Tokenizer, Decay: d, Embedder: embedder, Limits: lim, PreviousEmbedder: prev,
			ViewIdle: *viewIdle, NoStoredViews: !*storedViews, WarmAfter: retrieve.WarmAfter(*warmViews)},
		Compress:      compress.Config{Tokenizer: budget.Tokenizer},
		Extract:       extract.Config{Tokenizer: budget.Tokenizer},
		LLM:           *llmCfg,
		ViewsInBucket: !*viewFiles,
		Embedder:      stage,
		Metrics:       m,
		Tracer:        tp,
	}
	if mem.Limit > 0 {
		cfg.Retrieve.MaxUserBytes, cfg.Retrieve.MemoryLimit = retrieve.ViewBytes(int64(mem.Limit)), int64(mem.Limit)
	}
	if *creds != "" {
		cfg.ClientOptions = append(cfg.ClientOptions, nats.UserCredentials(*creds))
	}
	if *nkey != "" {
		o, err := nats.NkeyOptionFromSeed(*nkey)
		if err != nil {
			return fmt.Errorf("--nkey: %w", err)
		}
		cfg.ClientOptions = append(cfg.ClientOptions, o)
	}
	hc := httpConfig{Addr: *httpAddr, Topology: cfg.Topology, InspectorKey: *inspectorToken, Budget: cfg.Ingest.Budget,
		MCPSessions: *mcpSessions, MCPSessionsPerTenant: *mcpPerTenant, MaxContentBytes: *maxContent, Limits: lim}
	if *inspectorTokens != "" {
		if hc.InspectorTenantKeys, err = gateway.LoadTokens(*inspectorTokens); err != nil {
			return fmt.Errorf("--inspector-tokens: %w", err)
		}
	}
	if err := hc.validate(); err != nil {
		return err
	}
	if *httpTokens != "" {
		if hc.Tokens, err = gateway.LoadTokens(*httpTokens); err != nil {
			return fmt.Errorf("--http-tokens: %w", err)
		}
	} else if *httpAddr != "" {
		log.Warn().Msg("no --http-tokens: the HTTP API has no authentication, any caller acts for any tenant")
	}
	// The HTTP address is taken before the data directory is touched: a second memoryd fails
	// at once, on the first address it finds taken.
	hl, err := listenHTTP(*httpAddr)
	if err != nil {
		return err
	}
	dm, err := daemon.Start(ctx, cfg, log)
	if err != nil {
		if hl != nil {
			_ = hl.Close()
		}
		switch {
		case errors.Is(err, datadir.ErrLocked):
			return fmt.Errorf("--data: %w", err)
		case errors.Is(err, broker.ErrAddrInUse):
			return fmt.Errorf("--listen: %w", err)
		}
		return err
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for range hup {
			if err := dm.Reload(); err != nil {
				log.Error().Err(err).Msg("reloading the server configuration")
			} else {
				log.Info().Msg("server configuration reloaded")
			}
		}
	}()
	settings.ServeHealth(ctx, *healthAddr, dm.Conn(), m, log)
	settings.ServeMetrics(ctx, *metricsAddr, m, log)
	mem.Start(ctx, log)
	if err := servePprof(ctx, *pprofAddr, log); err != nil {
		_ = dm.Stop()
		return fmt.Errorf("--pprof: %w", err)
	}
	if err := serveHTTP(ctx, hc, hl, dm, m, log); err != nil {
		_ = dm.Stop()
		return fmt.Errorf("--http: %w", err)
	}
	select {
	case <-ctx.Done():
		log.Info().Msg("shutting down: draining workers")
	case <-dm.Done():
	}
	return dm.Stop()
}
