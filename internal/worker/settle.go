package worker

import (
	"context"
	"errors"
	"fmt"
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

// classed is a permanent failure with its dead-letter class.
type classed struct {
	class string
	err   error
}

func (c *classed) Error() string   { return c.err.Error() }
func (c *classed) Unwrap() []error { return []error{ErrPermanent, c.err} }

// Classed is Permanent with the dead letter's class named (deadletter.Class*).
func Classed(class string, err error) error {
	if err == nil {
		return nil
	}
	return &classed{class: class, err: err}
}

// recorded is the outcome of a message the handler has dead-lettered itself, as part of its own
// commit: it is terminated with reason and nothing else.
type recorded struct{ reason string }

func (r *recorded) Error() string { return r.reason }

// Recorded says that the handler wrote the message's dead letter itself (ingest does, before it
// commits the session that records the rejection): the message is terminated with reason.
func Recorded(reason string) error { return &recorded{reason: reason} }

// PanicError is a panic recovered from a handler.
type PanicError struct{ Value any }

func (p *PanicError) Error() string { return fmt.Sprintf("panic: %v", p.Value) }

// Exponential is the redelivery policy: first after the first failed delivery, doubling up to
// max.
func Exponential(first, max time.Duration) func(n uint64) time.Duration {
	return func(n uint64) time.Duration {
		d := first
		for i := uint64(1); i < n && d < max; i++ {
			d *= 2
		}
		return min(d, max)
	}
}

// Backoff is the default redelivery delay after the n-th failed delivery: 1s doubling to 5
// minutes (an LLM or an embedding endpoint that is down).
var Backoff = Exponential(time.Second, 5*time.Minute)

// letters writes dead letters (a *deadletter.Writer).
type letters interface {
	Write(ctx context.Context, r deadletter.Record) error
}

// settler settles a handled message: the one place that acknowledges, retries and dead-letters.
// It runs after the handler and every middleware, in both modes; no middleware replaces it.
type settler struct {
	name       string
	dlq        letters
	log        zerolog.Logger
	metrics    *metrics.Metrics
	backoff    func(n uint64) time.Duration
	maxDeliver int
	place      func(m Subjected) (tenant, session string)
	// quiet logs transient failures at debug level: for handlers that log their own reason.
	quiet bool
}

// settle acknowledges m according to the outcome err:
//
//   - nil: Ack;
//   - Recorded: Term (the handler wrote the dead letter);
//   - Permanent, Classed or events.ErrInvalid: a dead letter, then Term;
//   - any other error (a recovered panic included): NakWithDelay with the backoff, or, on the
//     consumer's last delivery, a dead letter with the reason.
func (s *settler) settle(m jetstream.Msg, meta *jetstream.MsgMetadata, err error) {
	var rec *recorded
	switch {
	case err == nil:
		if err := m.Ack(); err != nil {
			s.log.Warn().Err(err).Str("subject", m.Subject()).Msg("ack failed; the message will be redelivered (handlers are idempotent)")
		}
	case errors.As(err, &rec):
		_ = m.TermWithReason(rec.reason)
	case errors.Is(err, ErrPermanent) || errors.Is(err, events.ErrInvalid):
		s.log.Warn().Err(err).Str("subject", m.Subject()).Uint64("stream_seq", meta.Sequence.Stream).Msg("dead-lettered")
		s.deadLetter(m, meta, err.Error(), classOf(err))
	case s.maxDeliver > 0 && meta.NumDelivered >= uint64(s.maxDeliver):
		s.log.Error().Err(err).Str("subject", m.Subject()).Uint64("stream_seq", meta.Sequence.Stream).Msg("last delivery failed; dead-lettered")
		s.deadLetter(m, meta, fmt.Sprintf("failed on all %d deliveries; last error: %v", meta.NumDelivered, err), deadletter.ClassExhausted)
	default:
		lvl := s.log.Warn()
		if s.quiet {
			lvl = s.log.Debug()
		}
		lvl.Err(err).Str("subject", m.Subject()).Uint64("stream_seq", meta.Sequence.Stream).Uint64("delivered", meta.NumDelivered).Msg("failed; will retry")
		s.metrics.TransientFailure(s.name, 1)
		_ = m.NakWithDelay(s.backoff(meta.NumDelivered))
	}
}

func classOf(err error) string {
	var c *classed
	switch {
	case errors.As(err, &c):
		return c.class
	case errors.Is(err, events.ErrInvalid):
		return deadletter.ClassInvalid
	}
	return deadletter.ClassRejected
}

// deadLetter writes m's dead letter and terminates it; when the record cannot be written, m is
// retried instead, so nothing is lost.
func (s *settler) deadLetter(m jetstream.Msg, meta *jetstream.MsgMetadata, reason, class string) {
	var tenant, sess string
	if s.place != nil {
		tenant, sess = s.place(m)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := s.dlq.Write(ctx, deadletter.Record{
		Msg:    &nats.Msg{Subject: m.Subject(), Header: m.Headers(), Data: m.Data()},
		Tenant: tenant, Session: sess, Stream: meta.Stream, Seq: meta.Sequence.Stream,
		Consumer: meta.Consumer, Delivered: meta.NumDelivered, Reason: reason, Class: class,
	})
	if err != nil {
		s.log.Error().Err(err).Str("subject", m.Subject()).Msg("dead letter not written; the message will be redelivered")
		s.metrics.TransientFailure(s.name, 1)
		_ = m.NakWithDelay(s.backoff(meta.NumDelivered))
		return
	}
	_ = m.TermWithReason(reason)
}

// Protect calls fn and returns a panic in it as a *PanicError: the one recover of the consume
// layer (Recover, RecoverGroup and Each use it), for a handler that settles a panic of part of
// its work itself (ingest dead-letters the turn whose decision panicked and goes on).
func Protect(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r}
		}
	}()
	return fn()
}
