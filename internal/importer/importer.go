// Package importer imports existing conversation histories into agentmem. It reads JSON Lines
// (one turn per line: tenant, session, role, content, time, id, user, tool, metadata), checks
// every line, and publishes each good one as a normal agentmem.turn.v1 CloudEvent on
// memory.turns.<tenant>.<session>, binary content mode with Nats-Msg-Id, exactly as pkg/client
// does, so that ingest applies an imported turn like a live one.
//
// Publishing is asynchronous with a bounded window of PubAcks in flight, over one connection, so
// the turns of a session are stored in file order. An import is idempotent: a line without an id
// gets one derived from its content (DeriveID), the stream's duplicate window drops a repeated
// publish, ingest ignores a turn id it has applied before, and, when the importer can read the
// session store, turns a session already holds are not published again at all. A bad line is
// reported with its number and skipped; it never stops the good ones.
package importer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/pkg/events"
)

// Defaults of a Config.
const (
	DefaultTenant          = "default"
	DefaultSource          = "agentmem/import"
	DefaultWindow          = 512
	DefaultTimeout         = 30 * time.Second
	DefaultMaxContentBytes = 256 << 10 // ingest's default limit
	DefaultMaxLineBytes    = 4 << 20
	DefaultMaxErrors       = 10
	DefaultAttempts        = 3
	DefaultProgressEvery   = 100 * time.Millisecond
)

// Config configures an Importer.
type Config struct {
	// Tenant is the tenant of lines that name none ("default").
	Tenant string
	// User is the user of lines that name none (none: a new session's first line must name it).
	User string
	// Source is the CloudEvents source of the published events ("agentmem/import").
	Source string
	// Window bounds the publishes awaiting their PubAck (512).
	Window int
	// Timeout bounds the wait for one PubAck (30s).
	Timeout time.Duration
	// MaxContentBytes rejects a line whose content ingest would dead-letter as too large (256 KiB,
	// ingest's default; negative: no check).
	MaxContentBytes int
	// MaxLineBytes is the longest line read (4 MiB); a longer one is skipped as bad.
	MaxLineBytes int
	// MaxErrors is how many bad lines the report lists (10); all of them are counted.
	MaxErrors int
	// Attempts is how often a turn whose asynchronous publish failed is tried again, one by one
	// in file order, before the import stops (3).
	Attempts int
	// EndSessions publishes a session end after each session's last line, so that its facts are
	// extracted now rather than after ingest's idle time.
	EndSessions bool
	// DryRun checks every line and publishes nothing.
	DryRun bool
	// Progress, when set, is called from one goroutine at most every ProgressEvery (100ms) while
	// the import runs, and once at its end.
	Progress      func(Progress)
	ProgressEvery time.Duration
}

func (c Config) withDefaults() Config {
	if c.Tenant == "" {
		c.Tenant = DefaultTenant
	}
	if c.Source == "" {
		c.Source = DefaultSource
	}
	if c.Window == 0 {
		c.Window = DefaultWindow
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxContentBytes == 0 {
		c.MaxContentBytes = DefaultMaxContentBytes
	}
	if c.MaxLineBytes == 0 {
		c.MaxLineBytes = DefaultMaxLineBytes
	}
	if c.MaxErrors == 0 {
		c.MaxErrors = DefaultMaxErrors
	}
	if c.Attempts == 0 {
		c.Attempts = DefaultAttempts
	}
	if c.ProgressEvery == 0 {
		c.ProgressEvery = DefaultProgressEvery
	}
	return c
}

// Validate names the first field that cannot work.
func (c Config) Validate() error {
	switch {
	case events.ValidateToken("tenant", c.Tenant) != nil:
		return fmt.Errorf("importer: %w", events.ValidateToken("tenant", c.Tenant))
	case c.User != "" && events.ValidateToken("user", c.User) != nil:
		return fmt.Errorf("importer: %w", events.ValidateToken("user", c.User))
	case c.Window < 1:
		return fmt.Errorf("importer: window %d must be positive", c.Window)
	case c.Timeout < 0:
		return fmt.Errorf("importer: timeout %s must be positive", c.Timeout)
	case c.MaxLineBytes < 1:
		return fmt.Errorf("importer: max line bytes %d must be positive", c.MaxLineBytes)
	case c.MaxErrors < 0:
		return fmt.Errorf("importer: max errors %d must not be negative", c.MaxErrors)
	case c.Attempts < 1:
		return fmt.Errorf("importer: attempts %d must be positive", c.Attempts)
	}
	return nil
}

// Counts are what an import did so far.
type Counts struct {
	// Lines is how many lines were read, blank ones included.
	Lines int `json:"lines"`
	// Blank lines are ignored.
	Blank int `json:"blank"`
	// Valid lines passed every check (in a dry run: the turns that would be published).
	Valid int `json:"valid"`
	// Imported turns were stored by this import.
	Imported int `json:"imported"`
	// Duplicates were stored before (the session already holds the turn, or the stream dropped
	// the publish as a duplicate): they add nothing.
	Duplicates int `json:"duplicates"`
	// Skipped lines were bad; Report.Errors lists the first of them.
	Skipped int `json:"skipped"`
	// Failed turns could not be published (the import stopped).
	Failed int `json:"failed"`
	// Ended is how many session ends were published (Config.EndSessions).
	Ended int `json:"ended"`
}

// Progress is a snapshot of a running import.
type Progress struct {
	Counts
	// Done is how many lines are settled: blank, skipped, or acknowledged by the stream.
	Done int
	// Bytes is how much of the input was read.
	Bytes int64
}

// LineError is a bad line: its number (from 1) and what is wrong with it.
type LineError struct {
	Line  int    `json:"line"`
	Error string `json:"error"`
}

// Report is what an import did.
type Report struct {
	Counts
	DryRun bool `json:"dry_run"`
	// Sessions is how many distinct (tenant, session) pairs the valid lines named.
	Sessions int `json:"sessions"`
	// Tenants lists the tenants the valid lines named, sorted.
	Tenants []string `json:"tenants"`
	// Errors are the first bad lines (Config.MaxErrors), in file order.
	Errors []LineError `json:"errors"`
	// Notes say what the import could not do as well as it would like (e.g. no access to the
	// session store, so turns already held were published again and dropped downstream).
	Notes []string `json:"notes,omitempty"`
	// Took is how long the import ran; Rate is the valid lines per second.
	Took time.Duration `json:"took_ns"`
	Rate float64       `json:"turns_per_second"`
}

// Importer imports histories into one agentmem deployment.
type Importer struct {
	cfg      Config
	nc       *nats.Conn
	js       jetstream.JetStream
	sessions *session.Store
	log      zerolog.Logger
}

// New returns an importer that publishes on nc (nil only for a dry run). sessions, when not nil,
// is read once per session the file names, to know its owner and the turns it already holds;
// without it nothing is checked against stored state (ingest still ignores repeated turns). It
// fails when cfg is not valid.
func New(cfg Config, nc *nats.Conn, sessions *session.Store, log zerolog.Logger) (*Importer, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	im := &Importer{cfg: cfg, nc: nc, sessions: sessions, log: log.With().Str("component", "importer").Logger()}
	if cfg.DryRun {
		return im, nil
	}
	if nc == nil {
		return nil, errors.New("importer: a NATS connection is required unless it is a dry run")
	}
	js, err := jetstream.New(nc,
		jetstream.WithPublishAsyncMaxPending(cfg.Window+1),
		jetstream.WithPublishAsyncTimeout(cfg.Timeout))
	if err != nil {
		return nil, fmt.Errorf("importer: %w", err)
	}
	im.js = js
	return im, nil
}

// sessionInfo is what the import knows of one session.
type sessionInfo struct {
	key session.Key
	// owner is the session's user: stored, or from the first valid line.
	owner string
	// state is the stored session when it had been stored before the import (nil otherwise).
	state *session.State
	// lastID and lastTime are those of the session's last valid line.
	lastID   string
	lastTime time.Time
}

// pending is a publish awaiting its PubAck.
type pending struct {
	line int // 0 for a session end
	msg  *nats.Msg
	fut  jetstream.PubAckFuture
}

// run is the state of one Import call.
type run struct {
	im    *Importer
	start time.Time

	mu     sync.Mutex
	counts Counts
	done   int
	errs   []LineError
	failed []pending // asynchronous publishes that failed, to try again in order
	notes  []string

	bytes    atomic.Int64
	failing  atomic.Bool
	inflight sync.WaitGroup

	occ      map[[32]byte]int
	sessions map[session.Key]*sessionInfo
	order    []*sessionInfo
	store    *session.Store
}

// Import reads r to its end (or until ctx ends) and imports every good line. The error is nil
// when every line was handled, bad lines included: they are counted and listed in the report.
// It fails when r cannot be read, or when the stream keeps refusing a turn (the report then says
// how far the import got; running it again is safe).
func (im *Importer) Import(ctx context.Context, r io.Reader) (Report, error) {
	ru := &run{im: im, start: time.Now(), occ: map[[32]byte]int{}, sessions: map[session.Key]*sessionInfo{}, store: im.sessions}
	stopProgress := ru.reportProgress()
	err := ru.read(ctx, r)
	stopProgress()
	return ru.report(), err
}

func (ru *run) reportProgress() (stop func()) {
	fn := ru.im.cfg.Progress
	if fn == nil {
		return func() {}
	}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(ru.im.cfg.ProgressEvery)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				fn(ru.progress())
			case <-quit:
				fn(ru.progress())
				return
			}
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}

func (ru *run) progress() Progress {
	ru.mu.Lock()
	defer ru.mu.Unlock()
	return Progress{Counts: ru.counts, Done: ru.done, Bytes: ru.bytes.Load()}
}

func (ru *run) report() Report {
	ru.mu.Lock()
	defer ru.mu.Unlock()
	rep := Report{Counts: ru.counts, DryRun: ru.im.cfg.DryRun,
		Errors: slices.Clone(ru.errs), Notes: slices.Clone(ru.notes), Took: time.Since(ru.start)}
	tenants := map[string]bool{}
	for _, si := range ru.order {
		if si.lastID != "" {
			rep.Sessions++
			tenants[si.key.Tenant] = true
		}
	}
	rep.Tenants = make([]string, 0, len(tenants))
	for t := range tenants {
		rep.Tenants = append(rep.Tenants, t)
	}
	slices.Sort(rep.Tenants)
	if rep.Errors == nil {
		rep.Errors = []LineError{}
	}
	if s := rep.Took.Seconds(); s > 0 {
		rep.Rate = float64(rep.Valid) / s
	}
	return rep
}

// skip records a bad line.
func (ru *run) skip(line int, err error) {
	ru.mu.Lock()
	defer ru.mu.Unlock()
	ru.counts.Skipped++
	ru.done++
	if len(ru.errs) < ru.im.cfg.MaxErrors {
		ru.errs = append(ru.errs, LineError{Line: line, Error: err.Error()})
	}
}

func (ru *run) count(f func(c *Counts)) {
	ru.mu.Lock()
	defer ru.mu.Unlock()
	f(&ru.counts)
}

func (ru *run) note(msg string) {
	ru.mu.Lock()
	defer ru.mu.Unlock()
	ru.notes = append(ru.notes, msg)
}

// read is the import loop: one line at a time, in file order.
func (ru *run) read(ctx context.Context, r io.Reader) (err error) {
	cfg := ru.im.cfg
	acks := make(chan pending, cfg.Window)
	settled := make(chan struct{})
	if !cfg.DryRun {
		go ru.settle(acks, settled)
		defer func() {
			close(acks)
			<-settled
			if err == nil {
				// A publish that failed in the last window is tried again here.
				err = ru.recover(ctx)
				return
			}
			ru.mu.Lock()
			ru.counts.Failed += len(ru.failed)
			ru.failed = nil
			ru.mu.Unlock()
		}()
	}
	lr := newLineReader(r, cfg.MaxLineBytes)
	n := 0
	for ctx.Err() == nil {
		raw, rerr := lr.next()
		ru.bytes.Store(lr.bytes)
		if errors.Is(rerr, io.EOF) {
			break
		}
		n++
		ru.count(func(c *Counts) { c.Lines++ })
		switch {
		case errors.Is(rerr, errLineTooLong):
			ru.skip(n, fmt.Errorf("longer than %d bytes", cfg.MaxLineBytes))
			continue
		case rerr != nil:
			return fmt.Errorf("reading line %d: %w", n, rerr)
		case len(trimSpace(raw)) == 0:
			ru.count(func(c *Counts) { c.Blank++ })
			ru.mu.Lock()
			ru.done++
			ru.mu.Unlock()
			continue
		}
		if err := ru.line(ctx, n, raw, acks); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if cfg.EndSessions {
		return ru.endSessions(ctx, acks)
	}
	return nil
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\r') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// line checks one line and publishes it.
func (ru *run) line(ctx context.Context, n int, raw []byte, acks chan<- pending) error {
	cfg := ru.im.cfg
	t, err := parseLine(raw, cfg.Tenant, cfg.User, cfg.MaxContentBytes)
	if err != nil {
		ru.skip(n, err)
		return nil
	}
	if t.ID == "" {
		k := idKey(t)
		t.ID, t.Derived = DeriveID(t, ru.occ[k]), true
		ru.occ[k]++
	}
	si, err := ru.session(ctx, session.Key{Tenant: t.Tenant, Session: t.Session})
	if err != nil {
		return err
	}
	switch {
	case t.User == "" && si.owner == "":
		ru.skip(n, fmt.Errorf("user: missing on the first turn of session %q (name it on the line or give a default user)", t.Session))
		return nil
	case t.User != "" && si.owner != "" && t.User != si.owner:
		ru.skip(n, fmt.Errorf("user %q: session %q belongs to user %q", t.User, t.Session, si.owner))
		return nil
	}
	msg, err := ru.message(t.Tenant, t.Session, t.ID, events.TypeTurn, t.Time, t.Body)
	if err != nil {
		ru.skip(n, err)
		return nil
	}
	if si.owner == "" {
		si.owner = t.User
	}
	si.lastID, si.lastTime = t.ID, t.Time
	ru.count(func(c *Counts) { c.Valid++ })
	switch {
	case si.state != nil && si.state.Seen(t.ID):
		ru.settled(func(c *Counts) { c.Duplicates++ })
		return nil
	case cfg.DryRun:
		ru.settled(func(*Counts) {})
		return nil
	}
	return ru.send(ctx, pending{line: n, msg: msg}, acks)
}

// settled counts a line that needs no PubAck.
func (ru *run) settled(f func(*Counts)) {
	ru.mu.Lock()
	defer ru.mu.Unlock()
	f(&ru.counts)
	ru.done++
}

// session returns what the import knows of a session, reading the session store the first time.
func (ru *run) session(ctx context.Context, key session.Key) (*sessionInfo, error) {
	if si, ok := ru.sessions[key]; ok {
		return si, nil
	}
	si := &sessionInfo{key: key}
	if ru.store != nil {
		st, err := ru.store.Load(ctx, key, 0)
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case err != nil:
			// Without the store the import still works: the stream and ingest drop repeats.
			ru.im.log.Warn().Err(err).Msg("cannot read the session store; turns already held are published again and ignored downstream")
			ru.note("the session store could not be read (" + err.Error() + "): turns already held were published again; the stream and ingest ignore them, so they may count as imported")
			ru.store = nil
		case st.Revision() > 0:
			si.owner, si.state = st.Header.User, st
		}
	}
	ru.sessions[key] = si
	ru.order = append(ru.order, si)
	return si, nil
}

// message builds the NATS message of an event exactly as pkg/client publishes it: binary content
// mode, ce-subject the session, Nats-Msg-Id <tenant>.<session>.<id>.
func (ru *run) message(tenant, sess, id, typ string, at time.Time, data any) (*nats.Msg, error) {
	msg, err := events.NewMsg(context.Background(), tenant, sess, id, typ, ru.im.cfg.Source, at, data)
	if err != nil {
		return nil, err
	}
	if ru.im.nc == nil {
		return msg, nil
	}
	if max := ru.im.nc.MaxPayload(); max > 0 && int64(msgSize(msg)) > max {
		return nil, fmt.Errorf("the event is %d bytes; the server accepts at most %d", msgSize(msg), max)
	}
	return msg, nil
}

func msgSize(m *nats.Msg) int {
	n := len(m.Subject) + len(m.Data)
	for k, vs := range m.Header {
		for _, v := range vs {
			n += len(k) + len(v) + 4
		}
	}
	return n
}

// send publishes asynchronously; at most Window publishes await their PubAck. After a failed
// publish it first waits for the window and tries the failures again in order.
func (ru *run) send(ctx context.Context, p pending, acks chan<- pending) error {
	if ru.failing.Load() {
		if err := ru.recover(ctx); err != nil {
			return err
		}
	}
	ru.inflight.Add(1)
	fut, err := ru.im.js.PublishMsgAsync(p.msg, jetstream.WithRetryAttempts(0), jetstream.WithStallWait(ru.im.cfg.Timeout))
	if err != nil {
		ru.fail(p, err)
		ru.inflight.Done()
		return nil
	}
	p.fut = fut
	// Never blocks for longer than Timeout: settle takes the oldest publish, whose PubAck
	// arrives or times out.
	acks <- p
	return nil
}

// settle waits for the PubAcks in publish order.
func (ru *run) settle(acks <-chan pending, done chan<- struct{}) {
	defer close(done)
	for p := range acks {
		ru.await(p)
		ru.inflight.Done()
	}
}

func (ru *run) await(p pending) {
	select {
	case ack := <-p.fut.Ok():
		ru.acked(p, ack.Duplicate)
	case err := <-p.fut.Err():
		ru.fail(p, err)
	}
}

func (ru *run) acked(p pending, duplicate bool) {
	if p.line == 0 { // a session end is not a line
		ru.count(func(c *Counts) { c.Ended++ })
		return
	}
	ru.settled(func(c *Counts) {
		switch {
		case duplicate:
			c.Duplicates++
		default:
			c.Imported++
		}
	})
}

func (ru *run) fail(p pending, err error) {
	ru.im.log.Debug().Err(err).Int("line", p.line).Str("subject", p.msg.Subject).Msg("publish failed; will try again")
	ru.mu.Lock()
	defer ru.mu.Unlock()
	ru.failed = append(ru.failed, p)
	ru.failing.Store(true)
}

// recover waits until no publish is in flight, then publishes the failed ones again, one at a
// time in file order (a retried turn keeps its Nats-Msg-Id, so one the stream had stored after
// all is not stored twice). It fails when one still fails after Attempts tries.
func (ru *run) recover(ctx context.Context) error {
	ru.inflight.Wait()
	ru.mu.Lock()
	failed := ru.failed
	ru.failed = nil
	ru.failing.Store(false)
	ru.mu.Unlock()
	slices.SortStableFunc(failed, func(a, b pending) int { return order(a) - order(b) })
	for i, p := range failed {
		ack, err := ru.retry(ctx, p.msg)
		if err != nil {
			ru.count(func(c *Counts) { c.Failed += len(failed) - i })
			what := fmt.Sprintf("line %d", p.line)
			if p.line == 0 {
				what = "the session end of " + p.msg.Subject
			}
			return fmt.Errorf("publishing %s to %s failed %d times: %w (the import stopped; running it again is safe)", what, p.msg.Subject, ru.im.cfg.Attempts, err)
		}
		ru.acked(p, ack.Duplicate)
	}
	return nil
}

// order sorts session ends after every line.
func order(p pending) int {
	if p.line == 0 {
		return int(^uint(0) >> 1)
	}
	return p.line
}

func (ru *run) retry(ctx context.Context, msg *nats.Msg) (*jetstream.PubAck, error) {
	var err error
	for attempt := range ru.im.cfg.Attempts {
		if attempt > 0 {
			timer := time.NewTimer(time.Duration(attempt) * 500 * time.Millisecond)
			select {
			case <-ctx.Done():
				timer.Stop()
				return nil, errors.Join(err, ctx.Err())
			case <-timer.C:
			}
		}
		actx, cancel := context.WithTimeout(ctx, ru.im.cfg.Timeout)
		var ack *jetstream.PubAck
		ack, err = ru.im.js.PublishMsg(actx, msg)
		cancel()
		if err == nil {
			return ack, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
	}
	return nil, err
}

// endSessions publishes, after every line, the end of each session that got a valid line, unless
// the session already holds that end.
func (ru *run) endSessions(ctx context.Context, acks chan<- pending) error {
	for _, si := range ru.order {
		if si.lastID == "" {
			continue
		}
		id := EndID(si.key.Tenant, si.key.Session, si.lastID)
		if si.state != nil && si.state.Seen(id) {
			continue
		}
		if ru.im.cfg.DryRun {
			ru.count(func(c *Counts) { c.Ended++ })
			continue
		}
		msg, err := ru.message(si.key.Tenant, si.key.Session, id, events.TypeSessionEnded, si.lastTime, events.SessionEnded{User: si.owner})
		if err != nil {
			return fmt.Errorf("ending session %s/%s: %w", si.key.Tenant, si.key.Session, err)
		}
		if err := ru.send(ctx, pending{msg: msg}, acks); err != nil {
			return err
		}
	}
	return nil
}
