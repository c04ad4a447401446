package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"github.com/agentmem/agentmem/internal/deadletter"
	"github.com/agentmem/agentmem/internal/metrics"
)

// Delivery is one delivered message of an ordered batch.
type Delivery[K comparable] struct {
	Msg  jetstream.Msg
	Meta *jetstream.MsgMetadata
	// Key is what Feed.Group returned for the message: its group (a session).
	Key K
	// Run numbers the feed's delivery runs: two deliveries in the same run came with
	// consecutive consumer sequences, so nothing the consumer delivered (to this process or to
	// another member of its priority group) or skipped lies between them.
	Run uint64
}

// GroupHandler handles the messages of one group of a batch, in stream order. It returns an
// outcome per message (len(group) errors, or nil when every message is done) or err, the
// outcome of every message of the group. Outcomes are settled as settle describes.
type GroupHandler[K comparable] func(ctx context.Context, group []Delivery[K]) (outcomes []error, err error)

// Feed is one durable consumer of an Ordered runner, its messages grouped by a key of type K.
type Feed[K comparable] struct {
	Stream, Consumer string
	// PriorityGroup, when set, consumes in that priority group (one pinned member at a time).
	PriorityGroup string
	// Group returns the group of a message (the messages of one group are handled in order,
	// groups concurrently), or the error it is settled with at once (bad input: a subject
	// naming no session).
	Group func(m jetstream.Msg) (K, error)
	// Handle handles one group (Each: one message at a time).
	Handle GroupHandler[K]
	// Middleware wraps Handle, the first outermost, inside the runner's own RecoverGroup;
	// settlement always follows, outside every middleware.
	Middleware []GroupMiddleware[K]
	// Place says where a message's dead letter goes.
	Place func(m Subjected) (tenant, session string)
	// Batch, when set, is called as each batch starts; the function it returns as it ends.
	Batch func(n int) (done func())
}

// Source is a feed of any group key (a Feed[K]) for Ordered.Run.
type Source interface {
	consumer() consumed
}

// consumed is what the runner needs of a Feed: its consumer and how it handles a batch.
type consumed struct {
	stream, consumer, priorityGroup string
	place                           func(m Subjected) (tenant, session string)
	batch                           func(n int) (done func())
	// handle groups, handles and settles the messages of a batch.
	handle func(o *Ordered, f *feed, batch []jetstream.Msg)
}

func (fd Feed[K]) consumer() consumed {
	h := ChainGroup(fd.Handle, append([]GroupMiddleware[K]{RecoverGroup[K]}, fd.Middleware...)...)
	return consumed{
		stream: fd.Stream, consumer: fd.Consumer, priorityGroup: fd.PriorityGroup, place: fd.Place, batch: fd.Batch,
		handle: func(o *Ordered, f *feed, batch []jetstream.Msg) { handleBatch(o, f, fd.Group, h, batch) },
	}
}

// OrderedConfig configures an Ordered runner.
type OrderedConfig struct {
	// Name is the component name in logs and metrics ("ingest").
	Name string
	// BatchSize bounds the messages of a batch (and of each consumer pull).
	BatchSize int
	// Buffer is how many delivered messages a feed may hold: at least what its consumer may
	// have in flight (MaxAckPending), so the delivery callback never blocks.
	Buffer int
	// Groups bounds the groups of a batch handled at once (default 8).
	Groups int
	// Heartbeat is how often a batch still being handled sends InProgress for its messages.
	Heartbeat time.Duration
	// Backoff is the redelivery delay after the n-th failed delivery (default Backoff).
	Backoff func(n uint64) time.Duration
	// Metrics counts transient failures under Name; nil counts nothing.
	Metrics *metrics.Metrics
}

// Ordered consumes feeds one batch at a time: a batch of one feed is handled (its groups
// concurrently, each group's messages in order) and settled before the next batch of any feed
// starts. Run it once per partition; the partition has exactly one writer.
type Ordered struct {
	cfg OrderedConfig
	js  jetstream.JetStream
	dlq *deadletter.Writer
	log zerolog.Logger
}

// NewOrdered returns an ordered runner.
func NewOrdered(cfg OrderedConfig, js jetstream.JetStream, dlq *deadletter.Writer, log zerolog.Logger) *Ordered {
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 64
	}
	cfg.Buffer = max(cfg.Buffer, cfg.BatchSize) + cfg.BatchSize
	if cfg.Groups <= 0 {
		cfg.Groups = 8
	}
	if cfg.Backoff == nil {
		cfg.Backoff = Backoff
	}
	return &Ordered{cfg: cfg, js: js, dlq: dlq, log: log.With().Str("component", cfg.Name).Logger()}
}

// feed is a Feed being consumed.
type feed struct {
	consumed
	ch      chan jetstream.Msg
	cc      jetstream.ConsumeContext
	settler *settler
	// failed is the last error the consumer reported (its ConsumeErrHandler): what stopped it,
	// when it stops on its own.
	failed atomic.Pointer[error]
	last   uint64 // consumer sequence of the last delivery
	run    uint64
}

// Run consumes feeds until ctx is cancelled; then it drains them, handles and settles what they
// had delivered, and returns.
func (o *Ordered) Run(ctx context.Context, feeds ...Source) error {
	var started []*feed
	defer func() {
		for _, f := range started {
			f.cc.Stop()
		}
	}()
	for _, fd := range feeds {
		f, err := o.start(ctx, fd.consumer())
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		started = append(started, f)
	}
	err := o.serve(ctx, started)
	started = nil
	return err
}

// start delivers a consumer's messages into a channel large enough for everything it may have
// in flight.
func (o *Ordered) start(ctx context.Context, fd consumed) (*feed, error) {
	cons, err := o.js.Consumer(ctx, fd.stream, fd.consumer)
	if err != nil {
		return nil, fmt.Errorf("binding consumer %q: %w", fd.consumer, err)
	}
	f := &feed{consumed: fd, ch: make(chan jetstream.Msg, o.cfg.Buffer), settler: &settler{
		name: o.cfg.Name, dlq: o.dlq, log: o.log, metrics: o.cfg.Metrics, backoff: o.cfg.Backoff,
		maxDeliver: cons.CachedInfo().Config.MaxDeliver, place: fd.place, quiet: true,
	}}
	opts := []jetstream.PullConsumeOpt{
		jetstream.PullMaxMessages(o.cfg.BatchSize),
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			f.failed.Store(&err)
			if !errors.Is(err, jetstream.ErrConsumerDeleted) {
				o.log.Debug().Err(err).Str("consumer", fd.consumer).Msg("consume")
			}
		}),
	}
	if fd.priorityGroup != "" {
		opts = append(opts, jetstream.PullPriorityGroup(fd.priorityGroup))
	}
	f.cc, err = cons.Consume(func(m jetstream.Msg) { f.ch <- m }, opts...)
	if err != nil {
		return nil, fmt.Errorf("consuming %q: %w", fd.consumer, err)
	}
	return f, nil
}

// next returns first and what else is waiting in ch, up to a batch.
func (o *Ordered) next(first jetstream.Msg, ch chan jetstream.Msg) []jetstream.Msg {
	batch := []jetstream.Msg{first}
	for len(batch) < o.cfg.BatchSize {
		select {
		case m := <-ch:
			batch = append(batch, m)
		default:
			return batch
		}
	}
	return batch
}

// serve hands the batches of feeds to their handlers, one at a time, until ctx is cancelled or
// a consumer stops delivering on its own; then it drains the consumers and handles what they
// had already delivered. It returns why a consumer stopped, nil when ctx was cancelled.
//
// nats.go stops consuming for good on a terminal status (the consumer deleted, a bad request)
// and reports it only to the error handler: without watching for it, the feed would wait for
// ever on a consumer that no longer delivers, and its partition would stall until a restart.
// Returning lets the caller start the feeds again (ingest's keepPartition does, with backoff).
func (o *Ordered) serve(ctx context.Context, feeds []*feed) error {
	n := len(feeds)
	cases := make([]reflect.SelectCase, 2*n+1)
	for i, f := range feeds {
		cases[i] = reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(f.ch)}
		cases[n+i] = reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(f.cc.Closed())}
	}
	cases[2*n] = reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())}
	var stopped error
	for stopped == nil {
		i, v, _ := reflect.Select(cases)
		if i == 2*n {
			break
		}
		if i >= n {
			f := feeds[i-n]
			stopped = fmt.Errorf("consumer %q stopped delivering", f.consumer)
			if err := f.failed.Load(); err != nil {
				stopped = fmt.Errorf("%w: %w", stopped, *err)
			}
			continue // the caller logs why, as it starts the feeds again
		}
		o.batch(feeds[i], o.next(v.Interface().(jetstream.Msg), feeds[i].ch))
	}
	for _, f := range feeds {
		f.cc.Drain()
	}
	for _, f := range feeds {
		// The channel holds everything the consumer may have in flight, but a redelivery of a
		// message still waiting in it is a second copy: keep handling while the drain completes,
		// so a full channel never blocks the delivery callback for good.
		for done := false; !done; {
			select {
			case m := <-f.ch:
				o.batch(f, o.next(m, f.ch))
			case <-f.cc.Closed():
				done = true
			}
		}
		for len(f.ch) > 0 {
			o.batch(f, o.next(<-f.ch, f.ch))
		}
	}
	return stopped
}

// batch handles and settles one batch of f, keeping its messages with heartbeats meanwhile.
func (o *Ordered) batch(f *feed, batch []jetstream.Msg) {
	if f.consumed.batch != nil {
		defer f.consumed.batch(len(batch))()
	}
	release := hold(batch, o.cfg.Heartbeat)
	defer release()
	f.handle(o, f, batch)
}

// handleBatch groups a batch of f by key, hands each group to handle (groups concurrently) and
// settles every message by its outcome.
func handleBatch[K comparable](o *Ordered, f *feed, group func(jetstream.Msg) (K, error), handle GroupHandler[K], batch []jetstream.Msg) {
	var keys []K
	groups := map[K][]Delivery[K]{}
	for _, m := range batch {
		meta, err := m.Metadata()
		if err != nil {
			o.log.Error().Err(err).Str("subject", m.Subject()).Msg("message without metadata")
			_ = m.Term()
			continue
		}
		if c := meta.Sequence.Consumer; f.last == 0 || c != f.last+1 {
			f.run++
		}
		f.last = meta.Sequence.Consumer
		key, err := group(m)
		if err != nil {
			f.settler.settle(m, meta, err)
			continue
		}
		if _, ok := groups[key]; !ok {
			keys = append(keys, key)
		}
		groups[key] = append(groups[key], Delivery[K]{Msg: m, Meta: meta, Key: key, Run: f.run})
	}
	var g errgroup.Group
	g.SetLimit(o.cfg.Groups)
	for _, k := range keys {
		group := groups[k]
		// In stream order: a redelivery comes after later first deliveries.
		slices.SortStableFunc(group, func(a, b Delivery[K]) int { return cmp.Compare(a.Meta.Sequence.Stream, b.Meta.Sequence.Stream) })
		g.Go(func() error {
			outcomes, err := handle(context.Background(), group)
			for i, d := range group {
				out := err
				if err == nil && len(outcomes) > i {
					out = outcomes[i]
				}
				f.settler.settle(d.Msg, d.Meta, out)
			}
			return nil
		})
	}
	_ = g.Wait()
}
