// Command gateway serves agentmem's HTTP API (internal/gateway) against an existing NATS server
// or cluster: CloudEvents in, retrieve and forget forwarded to the services, sessions and facts
// read from the buckets. Any number may run side by side.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/cmd/internal/settings"
	"github.com/agentmem/agentmem/internal/gateway"
	"github.com/agentmem/agentmem/internal/metrics"
)

func main() {
	ctx, stop := settings.SignalContext()
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		os.Exit(settings.Report(os.Stdout, os.Stderr, "gateway", err))
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
	addr := fs.String("http", "127.0.0.1:8080", "address the HTTP API listens on")
	tokensFile := fs.String("tokens", "", `bearer tokens, a JSON file {"token": "tenant", …} (empty: no authentication, the tenant is the URL's)`)
	maxBody := fs.Int64("max-body-bytes", gateway.DefaultMaxBodyBytes, "largest request body accepted (413 beyond)")
	maxContent := fs.Int("max-content-bytes", gateway.DefaultMaxContentBytes, "largest turn content accepted (413 beyond): set it to ingest's --max-content-bytes")
	timeout := fs.Duration("timeout", gateway.DefaultTimeout, "per-request bound on NATS work: JetStream ack, service reply, bucket reads (504 beyond)")
	readHeader := fs.Duration("read-header-timeout", gateway.DefaultReadHeaderTimeout, "time a client has to send a request's headers")
	read := fs.Duration("read-timeout", gateway.DefaultReadTimeout, "time a client has to send a whole request, body included")
	idle := fs.Duration("idle-timeout", gateway.DefaultIdleTimeout, "idle keep-alive connections are closed after this long")
	mcpSessions := fs.Int("mcp-sessions", gateway.DefaultMCPSessions, "open MCP sessions kept for all tenants; when all are open a tenant closes its own oldest to open one, a tenant with none gets 503")
	mcpPerTenant := fs.Int("mcp-sessions-per-tenant", gateway.DefaultMCPSessionsPerTenant, "open MCP sessions kept per tenant; beyond it a new one closes the tenant's own least recently used")
	conn := settings.BindConn(fs)
	healthAddr := settings.BindHealth(fs)
	metricsAddr := settings.BindMetrics(fs)
	topo := settings.BindTopology(fs)
	limitsFile := settings.BindLimits(fs)
	logf := settings.BindLog(fs)
	if err := settings.Parse(fs, args); err != nil {
		return err
	}
	log, err := logf.Logger(os.Stderr, "gateway")
	if err != nil {
		return err
	}
	settings.Dump(log, fs)
	lim, err := settings.Limiter(*limitsFile)
	if err != nil {
		return err
	}
	m := metrics.New()
	cfg := gateway.Config{Metrics: m, MaxBodyBytes: *maxBody, MaxContentBytes: *maxContent, Limits: lim, Timeout: *timeout, ReadHeaderTimeout: *readHeader, ReadTimeout: *read, IdleTimeout: *idle,
		MCPSessions: *mcpSessions, MCPSessionsPerTenant: *mcpPerTenant}
	if *tokensFile != "" {
		if cfg.Tokens, err = gateway.LoadTokens(*tokensFile); err != nil {
			return fmt.Errorf("--tokens: %w", err)
		}
	} else {
		log.Warn().Msg("no --tokens: the HTTP API has no authentication, any caller acts for any tenant")
	}
	nc, err := conn.ConnectWorker("agentmem-gateway")
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	g, err := gateway.New(cfg, nc, js, topo.Events(), log)
	if err != nil {
		return err
	}
	settings.ServeHealth(ctx, *healthAddr, nc, m, log)
	settings.ServeMetrics(ctx, *metricsAddr, m, log)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("--http: %w", err)
	}
	if err := g.Serve(ctx, ln); err != nil {
		return err
	}
	return nc.Drain()
}
