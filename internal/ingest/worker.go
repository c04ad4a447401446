package ingest

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"reflect"
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
		turns = append(turns, topo.IngestConsumerConfig(p))
		sums = append(sums, topo.IngestSummaryConsumerConfig(p))
	}
	turns = append(turns, topo.MalformedConsumerConfig())
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
				err := w.runPartition(gctx, p)
				w.unpin(p) // a successor (a restart) is served at once
				return err
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

// feed is one durable consumer delivering into a channel.
type feed struct {
	ch chan jetstream.Msg
	cc jetstream.ConsumeContext
}

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

// startConsume starts delivering the messages of a durable consumer into a channel large enough
// for everything the consumer may have in flight, so the delivery callback never blocks.
// Partition consumers are consumed in their priority group (one pinned member at a time).
func (w *Worker) startConsume(ctx context.Context, stream, name string, pinned bool) (*feed, error) {
	cons, err := w.js.Consumer(ctx, stream, name)
	if err != nil {
		return nil, fmt.Errorf("binding consumer %q: %w", name, err)
	}
	f := &feed{ch: make(chan jetstream.Msg, events.IngestMaxAckPending+w.cfg.BatchSize)}
	opts := []jetstream.PullConsumeOpt{
		jetstream.PullMaxMessages(w.cfg.BatchSize),
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			if !errors.Is(err, jetstream.ErrConsumerDeleted) {
				w.log.Debug().Err(err).Str("consumer", name).Msg("consume")
			}
		}),
	}
	if pinned {
		opts = append(opts, jetstream.PullPriorityGroup(events.IngestPriorityGroup))
	}
	f.cc, err = cons.Consume(func(m jetstream.Msg) { f.ch <- m }, opts...)
	if err != nil {
		return nil, fmt.Errorf("consuming %q: %w", name, err)
	}
	return f, nil
}

// next returns first and what else is waiting in ch, up to a batch.
func (w *Worker) next(first jetstream.Msg, ch chan jetstream.Msg) []jetstream.Msg {
	batch := []jetstream.Msg{first}
	for len(batch) < w.cfg.BatchSize {
		select {
		case m := <-ch:
			batch = append(batch, m)
		default:
			return batch
		}
	}
	return batch
}

// serve hands the batches of feeds to their handlers, one at a time, until ctx is cancelled;
// then it drains the consumers and handles what they had already delivered.
func (w *Worker) serve(ctx context.Context, feeds []*feed, handlers []func([]jetstream.Msg)) error {
	cases := make([]reflect.SelectCase, len(feeds)+1)
	for i, f := range feeds {
		cases[i] = reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(f.ch)}
	}
	cases[len(feeds)] = reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())}
	for {
		i, v, _ := reflect.Select(cases)
		if i == len(feeds) {
			break
		}
		w.handle(handlers[i], w.next(v.Interface().(jetstream.Msg), feeds[i].ch))
	}
	for _, f := range feeds {
		f.cc.Drain()
	}
	for i, f := range feeds {
		// The channel holds everything the consumer may have in flight, but a redelivery of a
		// message still waiting in it is a second copy: keep handling while the drain completes,
		// so a full channel never blocks the delivery callback for good.
		for done := false; !done; {
			select {
			case m := <-f.ch:
				w.handle(handlers[i], w.next(m, f.ch))
			case <-f.cc.Closed():
				done = true
			}
		}
		for len(f.ch) > 0 {
			w.handle(handlers[i], w.next(<-f.ch, f.ch))
		}
	}
	return nil
}

// handle runs handler on batch. A batch that takes longer than a third of the AckWait (a commit
// waiting out a JetStream leader change) keeps its messages with InProgress heartbeats, so a short
// AckWait brings a dead process's messages back quickly without redelivering a live one's.
func (w *Worker) handle(handler func([]jetstream.Msg), batch []jetstream.Msg) {
	every := w.cfg.heartbeat()
	var mu sync.Mutex
	stopped := false
	var t *time.Timer
	mu.Lock()
	t = time.AfterFunc(every, func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		for _, m := range batch {
			_ = m.InProgress()
		}
		t.Reset(every)
	})
	mu.Unlock()
	handler(batch)
	mu.Lock()
	stopped = true
	t.Stop()
	mu.Unlock()
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

	// lastDelivery is the consumer sequence of the last turn this process received for the
	// partition, and run counts the breaks in that sequence: two deliveries in the same run were
	// received with nothing delivered to another process (or skipped) between them. Used by the
	// partition's serve goroutine only.
	lastDelivery uint64
	run          uint64
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

// runPartition serves one partition: its turns and its summaries, one batch at a time, so that a
// session has exactly one writer.
func (w *Worker) runPartition(ctx context.Context, n int) error {
	part := newPartition(n, max(1, w.cfg.CachedSessions))
	topo := w.cfg.Topology
	turns, err := w.startConsume(ctx, topo.TurnsStream(), topo.IngestConsumer(n), true)
	if ctx.Err() != nil {
		return nil
	}
	if err != nil {
		return err
	}
	sums, err := w.startConsume(ctx, topo.SummaryStream(), topo.IngestSummaryConsumer(n), true)
	if err != nil {
		turns.cc.Stop()
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	return w.serve(ctx, []*feed{turns, sums}, []func([]jetstream.Msg){
		func(b []jetstream.Msg) { w.processBatch(part, b) },
		func(b []jetstream.Msg) { w.applySummaries(part, b) },
	})
}

// item is one delivered message of a batch.
type item struct {
	msg  jetstream.Msg
	meta *jetstream.MsgMetadata
	addr events.TurnAddress
	bad  string // why the message is bad input ("" when it is not): terminated instead of acknowledged
	run  uint64 // the partition's delivery run it arrived in (partition.run)
}

func (w *Worker) processBatch(part *partition, batch []jetstream.Msg) {
	w.messages.Add(uint64(len(batch)))
	start, filled := time.Now(), w.filled.Load()
	defer func() { w.cfg.Metrics.IngestBatch(len(batch), int(w.filled.Load()-filled), time.Since(start)) }()
	var order []session.Key
	groups := map[session.Key][]*item{}
	for _, m := range batch {
		meta, err := m.Metadata()
		if err != nil {
			w.log.Error().Err(err).Str("subject", m.Subject()).Msg("message without metadata")
			_ = m.Term()
			continue
		}
		addr, err := events.ParseTurnSubject(m.Subject())
		if err != nil {
			w.deadLetterUnparsed(m, meta, fmt.Sprintf("subject %q: %v", m.Subject(), err))
			continue
		}
		k := session.Key{Tenant: addr.Tenant, Session: addr.Session}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		if c := meta.Sequence.Consumer; part.lastDelivery == 0 || c != part.lastDelivery+1 {
			part.run++
		}
		part.lastDelivery = meta.Sequence.Consumer
		groups[k] = append(groups[k], &item{msg: m, meta: meta, addr: addr, run: part.run})
	}
	// Sessions are independent (their own KV keys and stream subjects): process them
	// concurrently, each one's messages in order.
	var g errgroup.Group
	g.SetLimit(sessionConcurrency)
	for _, k := range order {
		g.Go(func() error {
			w.processSession(part, k, groups[k])
			return nil
		})
	}
	_ = g.Wait()
}

// sessionConcurrency bounds the sessions of one batch processed at once.
const sessionConcurrency = 8

// deadLetterUnparsed dead-letters a message whose subject names no valid session.
func (w *Worker) deadLetterUnparsed(m jetstream.Msg, meta *jetstream.MsgMetadata, reason string) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	err := w.dlq.Write(ctx, deadletter.Record{
		Msg: natsMsg(m.Subject(), m.Headers(), m.Data()), Stream: meta.Stream, Seq: meta.Sequence.Stream,
		Consumer: meta.Consumer, Delivered: meta.NumDelivered, Reason: reason, Class: deadletter.ClassMalformed,
	})
	if err != nil {
		w.failures.Add(1)
		w.cfg.Metrics.TransientFailure("ingest", 1)
		w.log.Warn().Err(err).Str("subject", m.Subject()).Msg("dead letter not written; will retry")
		_ = m.NakWithDelay(backoff(meta.NumDelivered))
		return
	}
	w.rejected.Add(1)
	w.log.Debug().Str("subject", m.Subject()).Str("reason", reason).Msg("dead-lettered")
	_ = m.TermWithReason(reason)
}

func (w *Worker) runMalformed(ctx context.Context) error {
	f, err := w.startConsume(ctx, w.cfg.Topology.TurnsStream(), w.cfg.Topology.MalformedConsumer(), false)
	if ctx.Err() != nil {
		return nil
	}
	if err != nil {
		return err
	}
	return w.serve(ctx, []*feed{f}, []func([]jetstream.Msg){func(batch []jetstream.Msg) {
		for _, m := range batch {
			w.messages.Add(1)
			meta, err := m.Metadata()
			if err != nil {
				_ = m.Term()
				continue
			}
			w.deadLetterUnparsed(m, meta, fmt.Sprintf("subject %q is not memory.turns.<tenant>.<session> (tokens [A-Za-z0-9_-]{1,64})", m.Subject()))
		}
	}})
}

// backoff is the redelivery delay after a transient failure on the n-th delivery.
func backoff(n uint64) time.Duration {
	d := 250 * time.Millisecond
	for i := uint64(1); i < n && d < 30*time.Second; i++ {
		d *= 2
	}
	return min(d, 30*time.Second)
}
