// Package worker runs a handler over the messages of a durable JetStream consumer shared by any
// number of processes, and acknowledges in one place:
//
//   - the handler returns nil: Ack;
//   - it returns an error wrapping ErrPermanent or events.ErrInvalid (bad input, a request the
//     LLM will never accept): a dead-letter record with the reason, then Term;
//   - any other error: NakWithDelay with exponential backoff; on the consumer's last delivery the
//     message is dead-lettered with the reason instead, so nothing disappears silently;
//   - a panic: recovered, logged, and treated like a transient error.
//
// Long handlers keep their message with InProgress heartbeats, and a worker fetches only as many
// messages as it has free handlers, so every message it holds is heartbeated and a dead worker's
// messages come back after one short AckWait. On shutdown it stops fetching and waits for the
// handlers in flight.
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

// ErrPermanent marks a failure that retrying cannot fix.
var ErrPermanent = errors.New("worker: permanent failure")

// Permanent wraps err so that the message is dead-lettered instead of retried.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrPermanent, err)
}

// Subjected is what Place needs of a message: its subject.
type Subjected interface{ Subject() string }

// Handler processes one message. It never acknowledges.
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
	// Place says where a message's dead letter goes (tenant and session; "" for memory.dlq._).
	Place func(m Subjected) (tenant, session string)
	// Backoff is the redelivery delay after the n-th failed delivery (default Backoff).
	Backoff func(n uint64) time.Duration
	// Skip, when it reports true for a message, acknowledges it at once without a handler (for a
	// consumer that sees many messages it has nothing to do with).
	Skip func(m jetstream.Msg) bool
	// Metrics counts transient failures under Name; nil counts nothing. (Dead letters are
	// counted by the deadletter.Writer, when it is instrumented.)
	Metrics *metrics.Metrics
}

// Worker consumes one durable consumer.
type Worker struct {
	cfg     Config
	js      jetstream.JetStream
	dlq     *deadletter.Writer
	handler Handler
	log     zerolog.Logger
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
	if cfg.Backoff == nil {
		cfg.Backoff = Backoff
	}
	return &Worker{cfg: cfg, js: js, dlq: dlq, handler: handler, log: log.With().Str("component", cfg.Name).Logger()}
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
	adv, err := w.watchMaxDeliveries(ctx, cons)
	if err != nil {
		return err
	}
	defer func() { _ = adv.Unsubscribe() }()
	w.log.Info().Str("consumer", w.cfg.Consumer).Msg("started")
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
		batch, err := cons.Fetch(free, jetstream.FetchMaxWait(fetchWait))
		if err != nil {
			for range free {
				<-sem
			}
			if ctx.Err() == nil {
				w.log.Debug().Err(err).Msg("fetch")
				sleep(ctx, fetchWait)
			}
			continue
		}
		for m := range batch.Messages() {
			free--
			if w.cfg.Skip != nil && w.cfg.Skip(m) {
				_ = m.Ack()
				<-sem
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				w.handle(m)
			}()
		}
		for range free {
			<-sem
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) && ctx.Err() == nil {
			w.log.Debug().Err(err).Msg("fetch")
		}
	}
	wg.Wait()
	w.log.Info().Msg("stopped")
	return nil
}

// fetchWait bounds one fetch: how long Run takes to notice it should stop when nothing arrives.
const fetchWait = time.Second

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func (w *Worker) handle(m jetstream.Msg) {
	meta, err := m.Metadata()
	if err != nil {
		_ = m.Term()
		return
	}
	log := w.log.With().Str("subject", m.Subject()).Uint64("stream_seq", meta.Sequence.Stream).Uint64("delivered", meta.NumDelivered).Logger()
	ctx, cancel := context.WithTimeout(context.Background(), w.cfg.Timeout)
	defer cancel()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		t := time.NewTicker(w.cfg.Heartbeat)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				_ = m.InProgress()
			case <-stop:
				return
			}
		}
	}()
	err = w.call(ctx, m)
	switch {
	case err == nil:
		if err := m.Ack(); err != nil {
			log.Warn().Err(err).Msg("ack failed; the message will be redelivered (handlers are idempotent)")
		}
	case errors.Is(err, ErrPermanent) || errors.Is(err, events.ErrInvalid):
		log.Warn().Err(err).Msg("dead-lettered")
		class := deadletter.ClassRejected
		if errors.Is(err, events.ErrInvalid) {
			class = deadletter.ClassInvalid
		}
		w.deadLetter(m, meta, err.Error(), class)
	case w.cfg.MaxDeliver > 0 && meta.NumDelivered >= uint64(w.cfg.MaxDeliver):
		log.Error().Err(err).Msg("last delivery failed; dead-lettered")
		w.deadLetter(m, meta, fmt.Sprintf("failed on all %d deliveries; last error: %v", meta.NumDelivered, err), deadletter.ClassExhausted)
	default:
		log.Warn().Err(err).Msg("failed; will retry")
		w.cfg.Metrics.TransientFailure(w.cfg.Name, 1)
		_ = m.NakWithDelay(w.cfg.Backoff(meta.NumDelivered))
	}
}

func (w *Worker) call(ctx context.Context, m jetstream.Msg) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return w.handler(ctx, m)
}

func (w *Worker) deadLetter(m jetstream.Msg, meta *jetstream.MsgMetadata, reason, class string) {
	var tenant, sess string
	if w.cfg.Place != nil {
		tenant, sess = w.cfg.Place(m)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := w.dlq.Write(ctx, deadletter.Record{
		Msg:    natsMsg(m),
		Tenant: tenant, Session: sess, Stream: meta.Stream, Seq: meta.Sequence.Stream,
		Consumer: meta.Consumer, Delivered: meta.NumDelivered, Reason: reason, Class: class,
	})
	if err != nil {
		w.log.Error().Err(err).Msg("dead letter not written; the message will be redelivered")
		_ = m.NakWithDelay(w.cfg.Backoff(meta.NumDelivered))
		return
	}
	_ = m.TermWithReason(reason)
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

// Backoff is the redelivery delay after the n-th failed delivery: 1s doubling to 5 minutes.
func Backoff(n uint64) time.Duration {
	d := time.Second
	for i := uint64(1); i < n && d < 5*time.Minute; i++ {
		d *= 2
	}
	return min(d, 5*time.Minute)
}

func natsMsg(m jetstream.Msg) *nats.Msg {
	return &nats.Msg{Subject: m.Subject(), Header: m.Headers(), Data: m.Data()}
}
