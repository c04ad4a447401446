// Package broker runs the embedded NATS server with JetStream that memoryd uses on a single box
// and that the tests use as their real, in-process broker.
package broker

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/rs/zerolog"
)

// Config configures an embedded server.
type Config struct {
	// Listen is the client address, host:port ("127.0.0.1:4222"). Port -1 picks a free port.
	Listen string
	// DataDir holds JetStream's file storage ("./data").
	DataDir string
	// ServerName names the server (default "agentmem").
	ServerName string
	// MaxPayload is the largest message the server accepts, in bytes (default 1 MiB, NATS's default).
	MaxPayload int32
	// ConfigFile, when set, is a nats-server configuration file (authorization, TLS, …) applied
	// before the fields above.
	ConfigFile string
	// Debug turns on the server's debug log.
	Debug bool
	// ReadyTimeout bounds the wait for the server to accept connections (10s).
	ReadyTimeout time.Duration
}

// Broker is a running embedded NATS server.
type Broker struct {
	srv *server.Server
	cfg Config
}

// Start starts an embedded server with JetStream and waits until it accepts connections. It fails
// when the address is taken, the data directory is unusable or the server does not come up in time.
func Start(cfg Config, log zerolog.Logger) (*Broker, error) {
	opts, err := options(cfg)
	if err != nil {
		return nil, err
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("creating nats server: %w", err)
	}
	srv.SetLoggerV2(&logAdapter{log: log.With().Str("component", "nats-server").Logger()}, cfg.Debug, false, false)
	go srv.Start()
	wait := cfg.ReadyTimeout
	if wait <= 0 {
		wait = 10 * time.Second
	}
	if !srv.ReadyForConnections(wait) {
		srv.Shutdown()
		return nil, fmt.Errorf("nats server on %s not ready after %s", cfg.Listen, wait)
	}
	// Later reloads must see the port the server took.
	if cfg.Listen == "" || strings.HasSuffix(cfg.Listen, ":-1") || strings.HasSuffix(cfg.Listen, ":0") {
		if addr, ok := srv.Addr().(*net.TCPAddr); ok {
			cfg.Listen = net.JoinHostPort(opts.Host, strconv.Itoa(addr.Port))
		}
	}
	return &Broker{srv: srv, cfg: cfg}, nil
}

// options builds the server options: the configuration file's, with cfg's fields on top.
func options(cfg Config) (*server.Options, error) {
	opts := &server.Options{}
	if cfg.ConfigFile != "" {
		var err error
		if opts, err = server.ProcessConfigFile(cfg.ConfigFile); err != nil {
			return nil, fmt.Errorf("reading nats config %q: %w", cfg.ConfigFile, err)
		}
	}
	host, port, err := splitListen(cfg.Listen)
	if err != nil {
		return nil, err
	}
	opts.Host, opts.Port = host, port
	if cfg.ServerName != "" {
		opts.ServerName = cfg.ServerName
	} else if opts.ServerName == "" {
		opts.ServerName = "agentmem"
	}
	if cfg.DataDir == "" {
		return nil, errors.New("broker: data directory is required")
	}
	opts.JetStream = true
	opts.StoreDir = cfg.DataDir
	opts.NoSigs = true
	if cfg.MaxPayload > 0 {
		opts.MaxPayload = cfg.MaxPayload
	}
	opts.Debug = cfg.Debug
	return opts, nil
}

// Reload re-reads the configuration file (users and permissions after memctl auth added or
// removed one) and applies it to the running server.
func (b *Broker) Reload() error {
	opts, err := options(b.cfg)
	if err != nil {
		return err
	}
	if err := b.srv.ReloadOptions(opts); err != nil {
		return fmt.Errorf("reloading the nats configuration: %w", err)
	}
	return nil
}

func splitListen(listen string) (string, int, error) {
	if listen == "" {
		listen = "127.0.0.1:4222"
	}
	host, p, err := net.SplitHostPort(listen)
	if err != nil {
		return "", 0, fmt.Errorf("listen address %q: %w", listen, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < -1 || port > 65535 {
		return "", 0, fmt.Errorf("listen address %q: bad port", listen)
	}
	return host, port, nil
}

// ClientURL is the URL clients connect to.
func (b *Broker) ClientURL() string { return b.srv.ClientURL() }

// Server exposes the embedded server (for monitoring and tests).
func (b *Broker) Server() *server.Server { return b.srv }

// Shutdown stops the server and waits until it is down. Clients should be closed first.
func (b *Broker) Shutdown() {
	b.srv.Shutdown()
	b.srv.WaitForShutdown()
}

type logAdapter struct{ log zerolog.Logger }

func (l *logAdapter) Noticef(format string, v ...any) { l.log.Info().Msgf(format, v...) }
func (l *logAdapter) Warnf(format string, v ...any)   { l.log.Warn().Msgf(format, v...) }
func (l *logAdapter) Fatalf(format string, v ...any)  { l.log.Error().Msgf(format, v...) }
func (l *logAdapter) Errorf(format string, v ...any)  { l.log.Error().Msgf(format, v...) }
func (l *logAdapter) Debugf(format string, v ...any)  { l.log.Debug().Msgf(format, v...) }
func (l *logAdapter) Tracef(format string, v ...any)  { l.log.Trace().Msgf(format, v...) }
