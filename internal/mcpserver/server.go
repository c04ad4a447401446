// Package mcpserver exposes agentmem to any MCP client (Claude Desktop, Cursor, an agent
// framework) as seven tools: remember, recall, get_context, list_facts, list_entities (the
// user's graph of entities and relations, package graph), end_session and forget_user.
// end_session ends the server's session, so its facts reach the user's other
// sessions now rather than after the idle time. It is a
// thin adapter over the v1 NATS contract (pkg/client for turns and retrieval, request-reply on
// memory.forget.<tenant>); only list_facts and list_entities read the long-term bucket
// directly, because the contract has no request for them.
//
// The tenant, user and session are fixed by the server's configuration: no tool has an argument
// that names them, and arguments a tool does not declare are rejected (each input schema has
// "additionalProperties": false), so a model cannot reach another tenant's or user's memory
// whatever it sends.
package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/integrity"
	"github.com/agentmem/agentmem/internal/longterm"
	"github.com/agentmem/agentmem/internal/version"
	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

// Defaults of a Config.
const (
	// DefaultName is the implementation name the server announces.
	DefaultName = "agentmem"
	// DefaultWait bounds how long recall and get_context wait for the last remembered turn to be
	// applied (read-your-writes).
	DefaultWait = 2 * time.Second
	// DefaultForgetTimeout bounds a forget_user request.
	DefaultForgetTimeout = 2 * time.Minute
	// DefaultSessionTimeout closes idle streamable HTTP sessions.
	DefaultSessionTimeout = 30 * time.Minute
)

// Config configures a Server. Tenant, User and Session come from the server's operator (flags,
// environment), never from a model's tool arguments.
type Config struct {
	// Tenant, User and Session are the memory every tool works on; each must match
	// [A-Za-z0-9_-]{1,64}.
	Tenant  string
	User    string
	Session string
	// ContextTokens is get_context's budget when the call names none (2000).
	ContextTokens int
	// Name and Version are announced to clients ("agentmem", and version.Number(): the same as
	// the commands' --version).
	Name    string
	Version string
	// Wait bounds how long recall and get_context wait for the turn remember stored last to be
	// applied, so that a model finds what it just remembered (2s; negative: do not wait).
	Wait time.Duration
	// ForgetTimeout bounds a forget_user request (2 minutes).
	ForgetTimeout time.Duration
}

func (c *Config) defaults() {
	if c.ContextTokens == 0 {
		c.ContextTokens = events.DefaultContextTokens
	}
	if c.Name == "" {
		c.Name = DefaultName
	}
	if c.Version == "" {
		c.Version = version.Number()
	}
	if c.Wait == 0 {
		c.Wait = DefaultWait
	}
	if c.ForgetTimeout <= 0 {
		c.ForgetTimeout = DefaultForgetTimeout
	}
}

// Validate names the first field that cannot work: tenant, user, session (tokens),
// context tokens (positive) or wait (at most a minute).
func (c Config) Validate() error {
	for _, f := range []struct{ name, value string }{{"tenant", c.Tenant}, {"user", c.User}, {"session", c.Session}} {
		if err := events.ValidateToken(f.name, f.value); err != nil {
			return fmt.Errorf("mcpserver: %w", err)
		}
	}
	if c.ContextTokens < 0 {
		return fmt.Errorf("mcpserver: context tokens %d must not be negative", c.ContextTokens)
	}
	if c.Wait > time.Duration(events.MaxWaitMS)*time.Millisecond {
		return fmt.Errorf("mcpserver: wait %s must be at most %dms", c.Wait, events.MaxWaitMS)
	}
	return nil
}

// Server is agentmem's MCP server for one tenant, user and session. It is safe for concurrent
// use: one Server can serve many MCP sessions (stdio, or many HTTP clients), all on the same
// memory.
type Server struct {
	cfg  Config
	cl   *client.Client
	nc   *nats.Conn
	js   jetstream.JetStream
	topo events.Topology
	log  zerolog.Logger
	mcp  *mcp.Server

	mu      sync.Mutex
	store   *longterm.Store
	pending string // the turn remember stored last, until a retrieve saw it applied
}

// New returns a server with its tools registered. cl may be nil: New then makes a client of
// cfg.Tenant on nc (a given cl must be of cfg.Tenant). js is used by list_facts only (it reads
// the long-term bucket, which an agent credential cannot); with a nil js list_facts reports that
// it is unavailable. A zero topo is the default topology. New fails on an invalid Config or a
// nil nc; it does no I/O.
func New(cfg Config, cl *client.Client, nc *nats.Conn, js jetstream.JetStream, topo events.Topology, log zerolog.Logger) (*Server, error) {
	cfg.defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if nc == nil {
		return nil, errors.New("mcpserver: a NATS connection is required")
	}
	if topo.Prefix == "" {
		topo = events.DefaultTopology()
	}
	if err := topo.Validate(); err != nil {
		return nil, fmt.Errorf("mcpserver: %w", err)
	}
	if cl == nil {
		var err error
		if cl, err = client.New(nc, client.Options{Tenant: cfg.Tenant, Source: "agentmem/mcp"}); err != nil {
			return nil, fmt.Errorf("mcpserver: %w", err)
		}
	}
	s := &Server{
		cfg: cfg, cl: cl, nc: nc, js: js, topo: topo,
		log: log.With().Str("component", "mcp").Str("tenant", cfg.Tenant).Str("user", cfg.User).Str("session", cfg.Session).Logger(),
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: cfg.Name, Title: "agentmem memory", Version: cfg.Version}, &mcp.ServerOptions{
		Instructions: fmt.Sprintf("Long-term memory of user %q (agentmem). Call remember with what is worth keeping, "+
			"recall or get_context before answering questions that may depend on earlier conversations, "+
			"list_facts for what is known about the user, end_session when the conversation is over so that what was said "+
			"is known in the user's other sessions now. The user and session are fixed by the server.", cfg.User),
		Logger: slog.New(zerolog.NewSlogHandler(s.log.With().Str("component", "mcp-sdk").Logger())),
	})
	s.register()
	return s, nil
}

// MCP returns the SDK server with the tools registered, to connect to any transport.
func (s *Server) MCP() *mcp.Server { return s.mcp }

// RunStdio serves one MCP session over stdin and stdout until the client closes stdin (nil) or
// ctx is cancelled (ctx's error). Nothing but the protocol may be written to stdout meanwhile.
func (s *Server) RunStdio(ctx context.Context) error {
	return s.mcp.Run(ctx, &mcp.StdioTransport{})
}

// HTTPHandler returns the streamable HTTP transport of the server (mount it at /mcp). Every
// HTTP session works on the configured tenant, user and session; idle sessions close after 30
// minutes. Requests that reach a loopback address with a non-loopback Host header are refused
// (DNS rebinding protection). The handler does not authenticate: whoever reaches it acts as the
// configured user.
func (s *Server) HTTPHandler() http.Handler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		SessionTimeout: DefaultSessionTimeout,
		Logger:         slog.New(zerolog.NewSlogHandler(s.log.With().Str("component", "mcp-http").Logger())),
	})
}

// longTerm binds the long-term store on first use.
func (s *Server) longTerm(ctx context.Context) (*longterm.Store, error) {
	if s.js == nil {
		return nil, errors.New("list_facts is unavailable: this server has no JetStream access to the long-term store")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.store != nil {
		return s.store, nil
	}
	st, err := longterm.Open(ctx, s.js, s.topo)
	if err != nil {
		return nil, err
	}
	s.store = st.Instrument(integrity.NewReporter(nil, s.log.With().Str("component", "mcp").Logger()))
	return st, nil
}

// after returns the read-your-writes condition of a retrieve: the turn remember stored last and
// how long to wait for it.
func (s *Server) after() (string, int) {
	if s.cfg.Wait < 0 {
		return "", 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending == "" {
		return "", 0
	}
	return s.pending, max(int(s.cfg.Wait/time.Millisecond), 1)
}

// setPending records the turn remember stored last; settle forgets it once it was seen applied
// (or will never be).
func (s *Server) setPending(id string) {
	s.mu.Lock()
	s.pending = id
	s.mu.Unlock()
}

func (s *Server) settle(id string) {
	s.mu.Lock()
	if s.pending == id {
		s.pending = ""
	}
	s.mu.Unlock()
}
