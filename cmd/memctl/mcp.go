package main

import (
	"context"
	"crypto/subtle"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/peterbourgon/ff/v3/ffcli"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/cmd/internal/settings"
	"github.com/agentmem/agentmem/internal/inspector"
	"github.com/agentmem/agentmem/internal/mcpserver"
	"github.com/agentmem/agentmem/pkg/events"
)

// mcpCommand serves agentmem as an MCP server: over stdio (for Claude Desktop, Cursor and other
// clients that start it), or streamable HTTP with --http. On stdio, stdout carries the protocol
// only: logs go to stderr. Over HTTP it requires --http-token on a non-loopback address, and
// without a token answers loopback callers only.
func mcpCommand(out io.Writer) *ffcli.Command {
	c := &common{}
	var user, session, httpAddr, httpToken string
	var ctxTokens int
	var wait time.Duration
	var logs *settings.Log
	return newCommand("mcp", "--tenant T --user U --session S [--http ADDR]",
		"serve the memory of one user as an MCP server (remember, recall, get_context, list_facts, end_session, forget_user)", c, out,
		func(fs *flag.FlagSet) {
			fs.StringVar(&user, "user", "", "the user whose memory the tools use (required; tools cannot name another)")
			fs.StringVar(&session, "session", "", "the session remember writes to and recall searches first (required)")
			fs.StringVar(&httpAddr, "http", "", "serve streamable HTTP on this address at /mcp (e.g. 127.0.0.1:8765) instead of stdio")
			fs.StringVar(&httpToken, "http-token", "", "bearer token --http requires of every request (secret); required when --http is not a loopback address (empty: none, and then only loopback callers are answered)")
			fs.IntVar(&ctxTokens, "context-tokens", events.DefaultContextTokens, "get_context's token budget when the call names none")
			fs.DurationVar(&wait, "wait", mcpserver.DefaultWait, "how long recall waits for the turn remembered last to be applied (negative: no wait)")
			logs = settings.BindLog(fs)
		},
		func(ctx context.Context, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("unexpected arguments %q", args)
			}
			if user == "" || session == "" {
				return errors.New("--user and --session are required")
			}
			if httpAddr != "" && httpToken == "" && !inspector.IsLoopback(httpAddr) {
				return fmt.Errorf("--http-token (or AGENTMEM_HTTP_TOKEN) is required when --http listens on a non-loopback address (%s): "+
					"the MCP tools read and write %s's memory; set one, or bind --http to 127.0.0.1", httpAddr, user)
			}
			// stdout is the protocol's on stdio: every log line goes to stderr.
			log, err := logs.Logger(os.Stderr, "memctl-mcp")
			if err != nil {
				return err
			}
			nc, err := c.conn.Connect("memctl-mcp")
			if err != nil {
				return err
			}
			defer nc.Close()
			js, err := jetstream.New(nc)
			if err != nil {
				return err
			}
			srv, err := mcpserver.New(mcpserver.Config{
				Tenant: c.tenant, User: user, Session: session, ContextTokens: ctxTokens, Wait: wait,
			}, nil, nc, js, c.topo.Events(), log)
			if err != nil {
				return err
			}
			log.Info().Str("tenant", c.tenant).Str("user", user).Str("session", session).Str("nats", c.conn.URL).
				Str("http", httpAddr).Msg("serving MCP")
			if httpAddr == "" {
				err := srv.RunStdio(ctx)
				if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
					return nil
				}
				return err
			}
			return serveHTTP(ctx, httpAddr, guard(srv.HTTPHandler(), httpToken, log), log)
		})
}

// serveHTTP serves the MCP handler at /mcp until ctx is cancelled, then shuts down gracefully.
func serveHTTP(ctx context.Context, addr string, h http.Handler, log zerolog.Logger) error {
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--http: %w", err)
	}
	// Requests see ctx: on shutdown the long-lived event streams end instead of holding it up.
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	log.Info().Str("url", "http://"+ln.Addr().String()+"/mcp").Msg("serving streamable HTTP")
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = hs.Shutdown(shut)
	if serr := <-done; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

// guard lets through a request that carries "Authorization: Bearer <token>" (401 otherwise),
// or, with no token, a request from a loopback address (403 otherwise): memctl mcp --http
// without a token serves only this machine, even should its listener be reachable from
// elsewhere.
func guard(next http.Handler, token string, log zerolog.Logger) http.Handler {
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case token == "" && !inspector.IsLoopback(r.RemoteAddr):
			log.Warn().Str("remote", r.RemoteAddr).Msg("refused: no --http-token, and the caller is not on loopback")
			http.Error(w, "this MCP server has no token and answers loopback clients only", http.StatusForbidden)
			return
		case token != "" && subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1:
			w.Header().Set("WWW-Authenticate", `Bearer realm="agentmem-mcp"`)
			http.Error(w, "a bearer token is required (Authorization: Bearer <the --http-token>)", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}
