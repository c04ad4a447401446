// Package broker runs the embedded NATS server with JetStream that memoryd uses on a single box
// and that the tests use as their real, in-process broker.
package broker

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/datadir"
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
	// Durability is when JetStream writes reach the disk (default DurabilitySync). It overrides
	// a configuration file's jetstream sync_interval.
	Durability Durability
	// SyncInterval is how often DurabilityInterval syncs to disk (default 2 minutes, NATS's).
	SyncInterval time.Duration
}

// Durability names when an acknowledged write is on disk. See docs/operations.md, "Durability".
type Durability string

// The durability modes.
const (
	// DurabilitySync (the default, "sync") syncs every write of a stream in the default persist
	// mode to disk (fsync) before the server acknowledges it: an acknowledged turn survives a
	// power cut or a kernel crash. nats-server's sync_interval: always. Writes that arrive
	// together are synced together when their publisher sends them as one atomic batch (the HTTP
	// gateway's batches). What memoryd derives from the turns is kept in streams of the
	// asynchronous persist mode, which this setting does not sync (events.Topology.Lazy; package
	// recovery rebuilds them after an unclean stop).
	DurabilitySync Durability = "sync"
	// DurabilitySyncAll ("sync-all") is DurabilitySync with nothing persisted lazily: every
	// stream and bucket is synced before each acknowledgement (memoryd's default before lazy
	// persistence). The server is configured as for DurabilitySync; the difference is memoryd's
	// topology.
	DurabilitySyncAll Durability = "sync-all"
	// DurabilityInterval ("interval") writes to the operating system before the acknowledgement
	// and syncs to disk every SyncInterval (nats-server's default): a process crash loses
	// nothing, a power cut or kernel crash loses up to SyncInterval of acknowledged writes.
	DurabilityInterval Durability = "interval"
)

// ParseDurability parses a --durability value ("" is DurabilitySync).
func ParseDurability(s string) (Durability, error) {
	switch d := Durability(strings.ToLower(strings.TrimSpace(s))); d {
	case "", DurabilitySync:
		return DurabilitySync, nil
	case DurabilitySyncAll, DurabilityInterval:
		return d, nil
	}
	return "", fmt.Errorf("durability %q: want sync (acknowledged turns on disk, derived memory rebuilt after a crash; the default), sync-all (every write synced) or interval (synced every --sync-interval)", s)
}

// Broker is a running embedded NATS server.
type Broker struct {
	srv  *server.Server
	cfg  Config
	lock *datadir.Lock
	// clean: the data directory held the clean-stop mark when the broker started.
	clean bool
}

// ErrAddrInUse is wrapped by Start's error when another process listens on the client address.
var ErrAddrInUse = errors.New("broker: address in use")

// Start starts an embedded server with JetStream and waits until it accepts connections. It
// holds the data directory's lock (package datadir) until Shutdown. It fails at once when another
// process holds the data directory (an error wrapping datadir.ErrLocked), when the address is
// taken (ErrAddrInUse) or when the server reports a fatal error while starting, and it fails when
// the server does not come up in time.
func Start(cfg Config, log zerolog.Logger) (*Broker, error) {
	opts, err := options(cfg)
	if err != nil {
		return nil, err
	}
	lock, err := datadir.Acquire(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	clean, err := datadir.TakeClean(cfg.DataDir)
	if err != nil {
		_ = lock.Release()
		return nil, err
	}
	b, err := start(cfg, opts, log)
	if err != nil {
		_ = lock.Release()
		return nil, err
	}
	b.lock, b.clean = lock, clean
	return b, nil
}

// StartedClean reports whether the last run on the data directory ended with ShutdownClean:
// its server shut down and everything it wrote synced to disk. False after a crash, a kill -9 or
// a power cut (or on a new directory, or one whose last run ended with Shutdown).
func (b *Broker) StartedClean() bool { return b.clean }

func start(cfg Config, opts *server.Options, log zerolog.Logger) (*Broker, error) {
	if err := probe(opts.Host, opts.Port); err != nil {
		return nil, err
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("creating nats server: %w", err)
	}
	fatal := make(chan string, 1)
	srv.SetLoggerV2(&logAdapter{log: log.With().Str("component", "nats-server").Logger(), fatal: fatal}, cfg.Debug, false, false)
	go srv.Start()
	wait := cfg.ReadyTimeout
	if wait <= 0 {
		wait = 10 * time.Second
	}
	if err := ready(srv, wait, fatal); err != nil {
		srv.Shutdown()
		srv.WaitForShutdown()
		return nil, fmt.Errorf("nats server on %s: %w", cfg.Listen, err)
	}
	// Later reloads must see the port the server took.
	if cfg.Listen == "" || strings.HasSuffix(cfg.Listen, ":-1") || strings.HasSuffix(cfg.Listen, ":0") {
		if addr, ok := srv.Addr().(*net.TCPAddr); ok {
			cfg.Listen = net.JoinHostPort(opts.Host, strconv.Itoa(addr.Port))
		}
	}
	return &Broker{srv: srv, cfg: cfg}, nil
}

// probe fails with ErrAddrInUse when host:port is taken, so that a second server on the same
// address fails at once instead of after ReadyTimeout. A free port (0 or -1) needs no probe.
// Between the probe and the server's own listen another process may still take the address:
// the server's listen failure is then a fatal error that ready reports.
func probe(host string, port int) error {
	if port <= 0 {
		return nil
	}
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("%w: %s is taken by another process (another memoryd or nats-server?)", ErrAddrInUse, addr)
		}
		return fmt.Errorf("listening on %s: %w", addr, err)
	}
	return l.Close()
}

// ready waits until srv accepts connections, a fatal error of the server's (its listen failed,
// JetStream did not start) or the end of wait, whichever comes first.
func ready(srv *server.Server, wait time.Duration, fatal <-chan string) error {
	deadline := time.Now().Add(wait)
	for {
		// Start reports its fatal errors before it accepts connections; check them first.
		select {
		case msg := <-fatal:
			return errors.New(msg)
		default:
		}
		if srv.ReadyForConnections(50 * time.Millisecond) {
			select {
			case msg := <-fatal:
				return errors.New(msg)
			default:
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %s", wait)
		}
	}
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
	d, err := ParseDurability(string(cfg.Durability))
	if err != nil {
		return nil, err
	}
	opts.SyncAlways = d != DurabilityInterval
	if cfg.SyncInterval > 0 {
		opts.SyncInterval = cfg.SyncInterval
	}
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

// Shutdown stops the server, waits until it is down and releases the data directory. Clients
// should be closed first. The next start counts this run as unclean (StartedClean is false).
func (b *Broker) Shutdown() {
	b.srv.Shutdown()
	b.srv.WaitForShutdown()
	if b.lock != nil {
		_ = b.lock.Release()
	}
}

// ShutdownClean is Shutdown that, once the server is down, syncs everything under the data
// directory to disk and marks it as stopped cleanly (package datadir) before releasing it: the
// next start's StartedClean is true. It returns the error that kept it from marking the
// directory (the next start then counts the run as unclean).
func (b *Broker) ShutdownClean() error {
	b.srv.Shutdown()
	b.srv.WaitForShutdown()
	var err error
	if b.lock != nil {
		err = datadir.MarkClean(b.cfg.DataDir)
		_ = b.lock.Release()
	}
	return err
}

// logAdapter logs the server's messages; a fatal one (the server would exit, were it not
// embedded) also goes to fatal while there is room, for Start to fail with.
type logAdapter struct {
	log   zerolog.Logger
	fatal chan<- string
}

func (l *logAdapter) Noticef(format string, v ...any) { l.log.Info().Msgf(format, v...) }
func (l *logAdapter) Warnf(format string, v ...any)   { l.log.Warn().Msgf(format, v...) }
func (l *logAdapter) Fatalf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	l.log.Error().Msg(msg)
	if l.fatal != nil {
		select {
		case l.fatal <- msg:
		default:
		}
	}
}
func (l *logAdapter) Errorf(format string, v ...any) { l.log.Error().Msgf(format, v...) }
func (l *logAdapter) Debugf(format string, v ...any) { l.log.Debug().Msgf(format, v...) }
func (l *logAdapter) Tracef(format string, v ...any) { l.log.Trace().Msgf(format, v...) }
