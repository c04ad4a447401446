// Package worker is the consume layer: every stage of the pipeline takes its messages from
// durable JetStream consumers through it, and it is the one place that acknowledges, retries,
// keeps and dead-letters them. docs/architecture.md ("The consume layer") is the five-minute
// tour; in short:
//
//   - Two modes. Worker is the shared mode: any number of processes pull from one durable
//     consumer, each message is handled on its own (compressor, extractor, embedder). Ordered
//     is the per-partition mode: one pinned process consumes a partition's consumers one batch
//     at a time, and a batch is handed over in groups (a session's messages, in stream order)
//     that run concurrently (ingest). A Feed is generic over its group key (Feed[K],
//     Delivery[K]).
//   - Middleware. What every stage needs around its handler composes as Middleware
//     (func(Handler) Handler, Chain) or, over a group, GroupMiddleware[K] (ChainGroup): Recover
//     (a panic is a retried failure), Timeout, Decode and Trace. Both modes run Recover
//     outermost (the shared mode then its Timeout, Config.Timeout), then the consumer's own
//     middleware (Config.Middleware, Feed.Middleware), then the handler; Each turns a
//     per-message Handler into a GroupHandler, so a feed's messages go through the same chain.
//   - Decode once. Dispatch is the decode middleware and the router: it parses the subject
//     (pkg/events), decodes the CloudEvent (or, for a Read route, lets a reader read the
//     message itself), dispatches on its type to a typed handler (On) with its data decoded and
//     validated, and wraps a Traced route in the Trace middleware: the consumer span, a child
//     of the event's trace, is started here, not in handler code. Every consumer's deliveries
//     decode through a Dispatch except ingest's turns: ingest decides the turns it is delivered
//     and the undecided earlier ones it reads back from the stream with one function, which
//     decodes both and starts their spans (a panic while deciding one dead-letters that turn
//     instead of retrying the session's batch).
//   - One settlement policy (settle.go), the fixed last step of both modes, outside every
//     middleware: nil acknowledges; Permanent, Classed or events.ErrInvalid write a dead letter
//     and terminate; Recorded terminates a message whose dead letter the handler wrote in its
//     own commit; any other error, a recovered panic included, is retried with exponential
//     backoff (Exponential) and dead-lettered on the consumer's last delivery, so nothing
//     disappears silently. A dead letter that cannot be written leaves the message for
//     redelivery. Transient failures are counted there (Config.Metrics).
//   - Messages being handled are kept with InProgress heartbeats (hold), so a short AckWait
//     brings a dead process's messages back quickly without redelivering a live one's; a
//     process fetches only what it can handle at once. On shutdown both modes stop fetching and
//     finish (and settle) what they hold; Stopping tells a handler that only waits to give up.
package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/deadletter"
	"github.com/agentmem/agentmem/internal/metrics"
	"github.com/agentmem/agentmem/pkg/events"
)

// Subjected is what Place needs of a message: its subject.
type Subjected interface{ Subject() string }

// Handler processes one message. It never acknowledges: the worker settles its error (settle).
type Handler func(ctx context.Context, m jetstream.Msg) error

// Config configures a Worker.
type Config struct {
	// Name is the worker's component name in logs ("compressor").
	Name string
	// Stream and Consumer name the durable consumer, which must exist.
	Stream, Consumer string
	// Concurrency bounds the messages handled at once (default 4).
	Concurrency int
	// MaxDeliver is the delivery that is dead-lettered on failure (default: the consumer's).
	MaxDeliver int
	// Heartbeat is how often a running handler extends its message's AckWait (default a third of
	// events.WorkerAckWait).
	Heartbeat time.Duration
	// Timeout bounds one handler call (default 4 minutes).
	Timeout time.Duration
	// Middleware wraps the handler, the first outermost, inside the worker's own Recover and
	// Timeout; settlement always follows, outside every middleware.
	Middleware []Middleware
	// Place says where a message's dead letter goes (tenant and session; "" for memory.dlq._).
	Place func(m Subjected) (tenant, session string)
	// Backoff is the redelivery delay after the n-th failed delivery (default Backoff).
	Backoff func(n uint64) time.Duration
	// Skip, when it reports true for a message, acknowledges it at once without a handler (for a
	// consumer that sees many messages it has nothing to do with).
	Skip func(m jetstream.Msg) bool
	// FetchWait bounds one fetch (default 1s): how long Run takes to notice it should stop when
	// nothing arrives.
	FetchWait time.Duration
	// Metrics counts transient failures under Name; nil counts nothing. (Dead letters are
	// counted by the deadletter.Writer, when it is instrumented.)
	Metrics *metrics.Metrics
	// Created, when set, is told when the consumer Run consumes was created: when Run binds it,
	// and again, before the message is handled, when a delivery shows that the consumer was
	// deleted and created again meanwhile (its delivery sequence started over). A handler that
	// treats messages stored after the consumer's creation as never seen before relies on it.
	Created func(time.Time)
}

// Worker consumes one durable consumer.
type Worker struct {
	cfg     Config
	js      jetstream.JetStream
	dlq     *deadletter.Writer
	handler Handler
	log     zerolog.Logger
	settler *settler
}

// New returns a worker; Run starts it.
func New(cfg Config, js jetstream.JetStream, dlq *deadletter.Writer, handler Handler, log zerolog.Logger) *Worker {
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 4
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = events.WorkerAckWait / 3
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 4 * time.Minute
	}
	if cfg.FetchWait <= 0 {
		cfg.FetchWait = time.Second
	}
	if cfg.Backoff == nil {
		cfg.Backoff = Backoff
	}
	// The fixed outer chain: a panic anywhere below is a retried error, and no call outlasts
	// Timeout.
	handler = Chain(handler, append([]Middleware{Recover, Timeout(cfg.Timeout)}, cfg.Middleware...)...)
	w := &Worker{cfg: cfg, js: js, dlq: dlq, handler: handler, log: log.With().Str("component", cfg.Name).Logger()}
	w.settler = &settler{name: cfg.Name, dlq: dlq, log: w.log, metrics: cfg.Metrics, backoff: cfg.Backoff, place: cfg.Place}
	return w
}

// recreated tells cfg.Created the consumer's creation time again when m's delivery sequence is not
// past last (the consumer was deleted and created again since the last delivery), and returns
// m's delivery sequence.
func (w *Worker) recreated(ctx context.Context, cons jetstream.Consumer, m jetstream.Msg, last uint64) uint64 {
	meta, err := m.Metadata()
	if err != nil {
		return last
	}
	if meta.Sequence.Consumer <= last {
		info, err := cons.Info(ctx)
		if err != nil {
			w.log.Warn().Err(err).Msg("the consumer was created again; its creation time not read")
			return meta.Sequence.Consumer
		}
		w.log.Info().Time("created", info.Created).Msg("the consumer was created again")
		w.cfg.Created(info.Created)
	}
	return meta.Sequence.Consumer
}

// Run handles messages until ctx is cancelled, then stops fetching and waits for the handlers in
// flight.
func (w *Worker) Run(ctx context.Context) error {
	cons, err := w.js.Consumer(ctx, w.cfg.Stream, w.cfg.Consumer)
	if ctx.Err() != nil {
		return nil
	}
	if err != nil {
		return fmt.Errorf("binding consumer %q: %w", w.cfg.Consumer, err)
	}
	if w.cfg.MaxDeliver == 0 {
		w.cfg.MaxDeliver = cons.CachedInfo().Config.MaxDeliver
	}
	w.settler.maxDeliver = w.cfg.MaxDeliver
	adv, err := w.watchMaxDeliveries(ctx, cons)
	if err != nil {
		return err
	}
	defer func() { _ = adv.Unsubscribe() }()
	w.log.Info().Str("consumer", w.cfg.Consumer).Msg("started")
	if w.cfg.Created != nil {
		w.cfg.Created(cons.CachedInfo().Created)
	}
	var lastDelivery uint64 // the consumer's delivery sequence, which only grows until it is created again
	// Fetch only as many messages as there are free handlers: a fetched message is handled (and
	// kept with heartbeats) at once, so none waits in a buffer until its AckWait runs out and is
	// delivered again to another process while this one still holds it.
	sem := make(chan struct{}, w.cfg.Concurrency)
	var wg sync.WaitGroup
	for ctx.Err() == nil {
		sem <- struct{}{} // wait for one free handler
		free := 1
		for len(sem) < cap(sem) {
			sem <- struct{}{}
			free++
		}
		want := free
		if w.cfg.Skip != nil {
			// A consumer that skips most of what it sees (session ends among turns) fetches
			// ahead: skipped messages cost an ack, not a handler.
			want = max(free, skipAhead)
		}
		batch, err := cons.Fetch(want, jetstream.FetchMaxWait(w.cfg.FetchWait))
		if err != nil {
			for range free {
				<-sem
			}
			if ctx.Err() == nil {
				w.log.Debug().Err(err).Msg("fetch")
				sleep(ctx, w.cfg.FetchWait)
			}
			continue
		}
		start := func(m jetstream.Msg) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				w.handle(ctx.Done(), m)
			}()
		}
		// Messages fetched ahead (not skipped) while every handler is busy wait in a queue, kept
		// with heartbeats, and are started as handlers free up, while the fetch goes on: a fetch
		// asking for more than the consumer has lasts its whole FetchWait, and what it already
		// delivered must not wait for its end.
		var (
			queue  chan jetstream.Msg
			queued *held
			fed    sync.WaitGroup
		)
		for m := range batch.Messages() {
			if w.cfg.Created != nil {
				lastDelivery = w.recreated(ctx, cons, m, lastDelivery)
			}
			if w.cfg.Skip != nil && w.cfg.Skip(m) {
				_ = m.Ack()
				continue
			}
			if free > 0 {
				free--
				start(m)
				continue
			}
			if queue == nil {
				queue, queued = make(chan jetstream.Msg, want), newHeld(w.cfg.Heartbeat, nil)
				fed.Go(func() {
					for m := range queue {
						sem <- struct{}{}
						queued.take(m)
						start(m)
					}
				})
			}
			queued.add(m)
			queue <- m
		}
		// Slots taken for messages that did not come (none was queued then: the queue only
		// starts once every slot is used).
		for range free {
			<-sem
		}
		if queue != nil {
			close(queue)
			fed.Wait()
			queued.stop()
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) && ctx.Err() == nil {
			w.log.Debug().Err(err).Msg("fetch")
		}
	}
	wg.Wait()
	w.log.Info().Msg("stopped")
	return nil
}

// stoppingKey is the context key of the channel closed when the worker stops.
type stoppingKey struct{}

// Stopping returns a channel closed when the worker running the handler of ctx stops (nil, never
// closed, outside a handler). A handler's own context is not cancelled then: work in flight is
// finished. A handler that only waits (for another stage's result) stops waiting and fails, so
// that its message is retried later, by this process or another one, instead of holding the
// shutdown.
func Stopping(ctx context.Context) <-chan struct{} {
	ch, _ := ctx.Value(stoppingKey{}).(<-chan struct{})
	return ch
}

// skipAhead is how many messages a consumer with Skip fetches at once, free handlers or not.
const skipAhead = 256

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func (w *Worker) handle(stopping <-chan struct{}, m jetstream.Msg) {
	meta, err := m.Metadata()
	if err != nil {
		_ = m.Term()
		return
	}
	release := hold([]jetstream.Msg{m}, w.cfg.Heartbeat)
	err = w.handler(context.WithValue(context.Background(), stoppingKey{}, stopping), m)
	release()
	w.settler.settle(m, meta, err)
}

// watchMaxDeliveries dead-letters the messages JetStream gave up on without the worker seeing
// their last delivery fail (the process died or timed out during it): the server's
// MAX_DELIVERIES advisory names the stream sequence, the record is read back from the stream.
// One process of the queue group handles each advisory; the record's Nats-Msg-Id is the same as
// the worker's own, so a message is dead-lettered once.
func (w *Worker) watchMaxDeliveries(ctx context.Context, cons jetstream.Consumer) (*nats.Subscription, error) {
	subject := "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES." + w.cfg.Stream + "." + w.cfg.Consumer
	// The advisory comes with the last delivery: give the worker handling it the time to fail it
	// itself (its dead letter has the better reason and the same id, so this one is then dropped).
	grace := cons.CachedInfo().Config.AckWait
	return w.js.Conn().QueueSubscribe(subject, "agentmem-"+w.cfg.Consumer, func(m *nats.Msg) {
		var adv struct {
			StreamSeq  uint64 `json:"stream_seq"`
			Deliveries uint64 `json:"deliveries"`
		}
		if err := json.Unmarshal(m.Data, &adv); err != nil || adv.StreamSeq == 0 {
			return
		}
		go w.deadLetterExhausted(ctx, adv.StreamSeq, adv.Deliveries, grace)
	})
}

func (w *Worker) deadLetterExhausted(ctx context.Context, seq, deliveries uint64, grace time.Duration) {
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return
	case <-timer.C:
	}
	{
		adv := struct{ StreamSeq, Deliveries uint64 }{seq, deliveries}
		actx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		stream, err := w.js.Stream(actx, w.cfg.Stream)
		if err != nil {
			w.log.Warn().Err(err).Msg("max deliveries advisory")
			return
		}
		raw, err := stream.GetMsg(actx, adv.StreamSeq)
		if err != nil {
			w.log.Warn().Err(err).Uint64("stream_seq", adv.StreamSeq).Msg("max deliveries advisory: message gone")
			return
		}
		msg := &nats.Msg{Subject: raw.Subject, Header: raw.Header, Data: raw.Data}
		var tenant, sess string
		if w.cfg.Place != nil {
			tenant, sess = w.cfg.Place(placed{msg})
		}
		err = w.dlq.Write(actx, deadletter.Record{
			Msg: msg, Tenant: tenant, Session: sess, Stream: w.cfg.Stream, Seq: adv.StreamSeq, Consumer: w.cfg.Consumer,
			Delivered: adv.Deliveries, Class: deadletter.ClassExhausted,
			Reason: fmt.Sprintf("JetStream stopped after %d deliveries without an acknowledgement (the worker died or timed out during the last one)", adv.Deliveries),
		})
		if err != nil {
			w.log.Error().Err(err).Uint64("stream_seq", adv.StreamSeq).Msg("dead letter of an exhausted message not written")
		}
	}
}

// placed lets Place read a message read back from the stream.
type placed struct{ m *nats.Msg }

func (p placed) Subject() string { return p.m.Subject }
