package ingest

import (
	"container/list"
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"

	"github.com/agentmem/agentmem/internal/archive"
	"github.com/agentmem/agentmem/internal/deadletter"
	"github.com/agentmem/agentmem/internal/integrity"
	"github.com/agentmem/agentmem/internal/longterm"
	"github.com/agentmem/agentmem/internal/metrics"
	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/internal/tracing"
	"github.com/agentmem/agentmem/internal/worker"
	"github.com/agentmem/agentmem/pkg/events"
	"github.com/agentmem/agentmem/pkg/memory"
)

// opTimeout bounds each JetStream call ingest makes while processing a batch.
const opTimeout = 10 * time.Second

// Stats counts what the worker did since it started.
type Stats struct {
	Messages   uint64 // messages taken from the stream (including redeliveries and gap fills)
	Filled     uint64 // undecided earlier messages read back from the stream to keep a session in order
	Applied    uint64 // turns and session ends applied
	Rejected   uint64 // messages dead-lettered as bad input
	Duplicates uint64 // turn ids seen before, ignored
	Pressures  uint64 // pressure events emitted
	Summaries  uint64 // summaries applied
	Commits    uint64 // session commits (one per session per batch)
	Writes     uint64 // KV writes (chunks and headers)
	Conflicts  uint64 // commits lost to another writer
	Failures   uint64 // transient failures (messages left for redelivery)
}

// Worker is the ingest worker.
type Worker struct {
	cfg     Config
	js      jetstream.JetStream
	log     zerolog.Logger
	counter memory.Counter
	store   *session.Store
	long    *longterm.Store
	reader  *archive.Reader
	dlq     *deadletter.Writer
	idle    *idleTracker
	runner  *worker.Ordered

	members atomic.Pointer[membership]
	tracer  trace.Tracer

	messages, filled, applied, rejected, duplicates, pressures, summaries atomic.Uint64
	commits, writes, conflicts, failures                                  atomic.Uint64
}

// New returns an ingest worker. The topology must exist (events.Topology.Ensure).
func New(ctx context.Context, cfg Config, js jetstream.JetStream, log zerolog.Logger) (*Worker, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	counter, err := memory.NewCounter(cfg.Tokenizer)
	if err != nil {
		return nil, err
	}
	store, err := session.NewStore(ctx, js, cfg.Topology)
	if err != nil {
		return nil, err
	}
	long, err := longterm.Open(ctx, js, cfg.Topology)
	if err != nil {
		return nil, err
	}
	// Corrupt values (another tenant's, session's or user's, or undecodable) read as absent and
	// are reported: logged and counted (package integrity).
	rep := integrity.NewReporter(cfg.Metrics, log.With().Str("component", "ingest").Logger())
	store, long = store.Instrument(rep), long.Instrument(rep)
	w := &Worker{
		long:    long,
		cfg:     cfg,
		js:      js,
		log:     log.With().Str("component", "ingest").Logger(),
		counter: counter,
		store:   store,
		reader:  archive.NewReader(js, cfg.Topology.TurnsStream()),
		dlq:     deadletter.NewWriter(js, cfg.DeadLetterMaxBody).Instrument(cfg.Metrics, "ingest"),
		tracer:  tracing.Tracer(cfg.Tracer),
	}
	w.idle = newIdleTracker(w)
	// A session waits while its turn is retried: the backoff stays short.
	w.runner = worker.NewOrdered(worker.OrderedConfig{
		Name: "ingest", BatchSize: cfg.BatchSize, Buffer: MaxAckPending, Groups: sessionConcurrency,
		Heartbeat: cfg.heartbeat(), Backoff: backoff, Metrics: cfg.Metrics,
	}, js, w.dlq, log)
	if cfg.NoConsumers {
		return w, nil
	}
	cfg.Metrics.AddSessions(func() metrics.Sessions {
		open, awaiting := w.idle.counts()
		return metrics.Sessions{Open: open, Awaiting: awaiting, Partitions: len(w.Owned())}
	})
	topo := cfg.Topology
	var turns, sums []jetstream.ConsumerConfig
	for _, p := range cfg.Partitions {
		turns = append(turns, TurnsConsumerConfig(topo, p))
		sums = append(sums, SummaryConsumerConfig(topo, p))
	}
	turns = append(turns, MalformedConsumerConfig(topo))
	if err := events.EnsureConsumers(ctx, js, topo.TurnsStream(), turns...); err != nil {
		return nil, err
	}
	if err := events.EnsureConsumers(ctx, js, topo.SummaryStream(), sums...); err != nil {
		return nil, err
	}
	return w, nil
}

// Stats returns the worker's counters.
func (w *Worker) Stats() Stats {
	return Stats{
		Messages: w.messages.Load(), Filled: w.filled.Load(), Applied: w.applied.Load(), Rejected: w.rejected.Load(),
		Duplicates: w.duplicates.Load(), Pressures: w.pressures.Load(), Summaries: w.summaries.Load(), Commits: w.commits.Load(),
		Writes: w.writes.Load(), Conflicts: w.conflicts.Load(), Failures: w.failures.Load(),
	}
}

// Run consumes the owned partitions (and the malformed-subject consumer) until ctx is cancelled,
// then drains: messages already delivered are processed and acknowledged before it returns.
func (w *Worker) Run(ctx context.Context) error {
	g, gctx := errgroup.WithContext(ctx)
	if w.cfg.static {
		for _, p := range w.cfg.Partitions {
			g.Go(func() error {
				w.keepPartition(gctx, p)
				w.unpin(p) // a successor (a restart) is served at once
				return nil
			})
		}
	} else {
		m, err := w.newMembership(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		w.members.Store(m)
		g.Go(func() error { return m.run(gctx) })
	}
	g.Go(func() error { return w.runMalformed(gctx) })
	g.Go(func() error { return w.runAdmission(gctx) })
	if w.cfg.IdleTimeout > 0 || w.cfg.RepressureAfter > 0 {
		g.Go(func() error { return w.idle.run(gctx) })
	}
	w.log.Info().Bool("static", w.cfg.static).Str("member", w.cfg.Member).Int("budget", w.cfg.Budget.Conversation()).
		Str("tokenizer", w.counter.Name()).Msg("ingest started")
	err := g.Wait()
	w.log.Info().Msg("ingest stopped")
	return err
}

// Awaiting lists the sessions of the partitions this process owns that wait for a summary: those
// whose pressure event it emits again after Config.RepressureAfter (package recovery counts them
// as work in flight).
func (w *Worker) Awaiting() []session.Key { return w.idle.awaiting() }

// Owns reports whether this process consumes partition p now.
func (w *Worker) Owns(p int) bool {
	if m := w.members.Load(); m != nil {
		return slices.Contains(m.owned(), p)
	}
	return slices.Contains(w.cfg.Partitions, p)
}

// Owned lists the partitions this process consumes now.
func (w *Worker) Owned() []int {
	if m := w.members.Load(); m != nil {
		return m.owned()
	}
	return slices.Clone(w.cfg.Partitions)
}

// partition holds the sessions one partition goroutine owns, most recently used first. The
// sessions of one batch are processed concurrently, so its maps are guarded.
type partition struct {
	mu    sync.Mutex
	n     int
	max   int
	items map[session.Key]*list.Element
	order *list.List
	known map[session.Key]bool // sessions whose user index entry this process wrote
}

func (p *partition) indexed(k session.Key) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.known[k]
}

func (p *partition) markIndexed(k session.Key) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.known == nil || len(p.known) > 4*p.max {
		p.known = map[session.Key]bool{}
	}
	p.known[k] = true
}

func newPartition(n, max int) *partition {
	return &partition{n: n, max: max, items: map[session.Key]*list.Element{}, order: list.New()}
}

func (p *partition) get(k session.Key) *session.State {
	p.mu.Lock()
	defer p.mu.Unlock()
	if el, ok := p.items[k]; ok {
		p.order.MoveToFront(el)
		return el.Value.(*session.State)
	}
	return nil
}

func (p *partition) put(s *session.State) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if el, ok := p.items[s.Key]; ok {
		el.Value = s
		p.order.MoveToFront(el)
		return
	}
	p.items[s.Key] = p.order.PushFront(s)
	for p.order.Len() > p.max {
		last := p.order.Back()
		p.order.Remove(last)
		delete(p.items, last.Value.(*session.State).Key)
	}
}

func (p *partition) drop(k session.Key) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if el, ok := p.items[k]; ok {
		p.order.Remove(el)
		delete(p.items, k)
	}
}

// keepPartition serves partition p until ctx ends, starting it again when it stops on its own:
// binding its consumers fails while, for example, their leader is being elected after a server
// restart, or one of its consumers stops delivering (worker.Ordered returns then), and a
// partition its owner does not serve is served by nobody. The pause between tries grows from
// 250 ms to 5 s, and starts again from 250 ms after a run that served a minute.
func (w *Worker) keepPartition(ctx context.Context, p int) {
	const first = 250 * time.Millisecond
	pause := first
	for {
		start := time.Now()
		err := w.runPartition(ctx, p)
		if ctx.Err() != nil {
			return
		}
		if time.Since(start) > time.Minute {
			pause = first // it served a while: a new failure, not the same one again
		}
		w.log.Warn().Err(err).Int("partition", p).Dur("retry_in", pause).Msg("partition stopped; starting it again")
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		pause = min(2*pause, 5*time.Second)
	}
}

// runPartition serves one partition: its turns and its summaries, one batch at a time, so that a
// session has exactly one writer.
func (w *Worker) runPartition(ctx context.Context, n int) error {
	part := newPartition(n, max(1, w.cfg.CachedSessions))
	topo := w.cfg.Topology
	summaries := w.summaryHandler(part)
	return w.runner.Run(ctx, worker.Feed[events.TurnAddress]{
		Stream: topo.TurnsStream(), Consumer: TurnsConsumerName(topo, n), PriorityGroup: PriorityGroup,
		Group: w.turnGroup, Handle: func(ctx context.Context, g []worker.Delivery[events.TurnAddress]) ([]error, error) {
			return w.processSession(ctx, part, g)
		},
		Middleware: []worker.GroupMiddleware[events.TurnAddress]{worker.TimeoutGroup[events.TurnAddress](opTimeout)},
		Batch:      w.turnBatch,
	}, worker.Feed[session.Key]{
		Stream: topo.SummaryStream(), Consumer: SummaryConsumerName(topo, n), PriorityGroup: PriorityGroup,
		Group: func(m jetstream.Msg) (session.Key, error) { return parseSummarySubject(m.Subject()) },
		Handle: func(ctx context.Context, g []worker.Delivery[session.Key]) ([]error, error) {
			return w.applySummaries(ctx, summaries, g), nil
		},
		Place: func(m worker.Subjected) (string, string) {
			k, _ := parseSummarySubject(m.Subject())
			return k.Tenant, k.Session
		},
	})
}

// turnGroup groups a partition's turns by session (its address); a subject that names no
// session is dead-lettered at once.
func (w *Worker) turnGroup(m jetstream.Msg) (events.TurnAddress, error) {
	addr, err := events.ParseTurnSubject(m.Subject())
	if err != nil {
		w.rejected.Add(1)
		return events.TurnAddress{}, worker.Classed(deadletter.ClassMalformed, fmt.Errorf("subject %q: %w", m.Subject(), err))
	}
	return addr, nil
}

// turnBatch counts a batch of turns and, when it is done, records it in the metrics.
func (w *Worker) turnBatch(n int) func() {
	w.messages.Add(uint64(n))
	start, filled := time.Now(), w.filled.Load()
	return func() { w.cfg.Metrics.IngestBatch(n, int(w.filled.Load()-filled), time.Since(start)) }
}

// runMalformed dead-letters the turns-stream messages whose subject names no session: the
// consumer of everything no partition consumer matches.
//
// Like a partition, it is started again until it can be (keepPartition): its consumer cannot be
// bound while its leader is elected (a cluster starting, a node lost), and a dead-letter feed
// that gave up then would have stopped the whole of ingest.
func (w *Worker) runMalformed(ctx context.Context) error {
	pause := 250 * time.Millisecond
	for {
		err := w.runMalformedOnce(ctx)
		if ctx.Err() != nil {
			return nil
		}
		w.log.Warn().Err(err).Dur("retry_in", pause).Msg("the malformed-subject feed stopped; starting it again")
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(pause):
		}
		pause = min(2*pause, 5*time.Second)
	}
}

func (w *Worker) runMalformedOnce(ctx context.Context) error {
	return w.runner.Run(ctx, worker.Feed[struct{}]{
		Stream: w.cfg.Topology.TurnsStream(), Consumer: MalformedConsumerName(w.cfg.Topology),
		Group: func(m jetstream.Msg) (struct{}, error) {
			w.messages.Add(1)
			w.rejected.Add(1)
			return struct{}{}, worker.Classed(deadletter.ClassMalformed,
				fmt.Errorf("subject %q is not memory.turns.<tenant>.<session> (tokens [A-Za-z0-9_-]{1,64})", m.Subject()))
		},
	})
}

// sessionConcurrency bounds the sessions of one batch processed at once.
const sessionConcurrency = 8

// backoff is the redelivery delay after a transient failure on the n-th delivery: the session's
// later turns wait behind the retried one, so it starts short and stops at 30 s.
var backoff = worker.Exponential(250*time.Millisecond, 30*time.Second)
