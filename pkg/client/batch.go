package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentmem/agentmem/pkg/events"
)

// Published is the outcome of one message of PublishAll.
type Published struct {
	// Ack is JetStream's acknowledgement, nil when the message was not stored (Err says why).
	Ack *jetstream.PubAck
	Err error
	// Attempts is how many times the message was sent.
	Attempts int
}

// PublishAll stores msgs with JetStream. It sends them all at once, in order, over one
// connection (asynchronous publishes: a batch costs about one round trip, not one per message)
// and waits for every acknowledgement; a message whose publish failed in a way that may pass
// (no stream answered, a timeout, a 5xx) is then sent again on its own, as PublishStored does,
// until ctx ends. It returns one result per message, in order.
//
// The messages are stored in order unless one fails: the ones after it may be stored already, so
// when it is sent again it lands after them. Callers that need a session's order kept through
// failures send a retried batch whole again (Nats-Msg-Id makes the stored ones duplicates).
func PublishAll(ctx context.Context, js jetstream.JetStream, msgs []*nats.Msg, attempt time.Duration) []Published {
	out := make([]Published, len(msgs))
	futs := make([]jetstream.PubAckFuture, len(msgs))
	for i, m := range msgs {
		out[i].Attempts = 1
		if futs[i], out[i].Err = js.PublishMsgAsync(m); out[i].Err != nil {
			break // the connection or the pending window refused it: the rest is sent one by one
		}
	}
	wait := time.NewTimer(attempt) // every message has attempt to be acknowledged, from the send
	defer wait.Stop()
	expired := false
	for i, f := range futs {
		if f == nil {
			if out[i].Err == nil {
				out[i].Err, out[i].Attempts = errNotSent, 0
			}
			continue
		}
		if !expired {
			select {
			case pa := <-f.Ok():
				out[i].Ack = pa
				continue
			case err := <-f.Err():
				out[i].Err = err
				continue
			case <-ctx.Done():
				out[i].Err = ctx.Err()
				continue
			case <-wait.C:
				expired = true
			}
		}
		select {
		case pa := <-f.Ok():
			out[i].Ack = pa
		case err := <-f.Err():
			out[i].Err = err
		default:
			out[i].Err = context.DeadlineExceeded
		}
	}
	for i := range out {
		if out[i].Err == nil || !(transient(out[i].Err) || errors.Is(out[i].Err, errNotSent)) || ctx.Err() != nil {
			continue
		}
		pa, n, err := PublishStored(ctx, js, msgs[i], attempt)
		out[i].Ack, out[i].Err, out[i].Attempts = pa, err, out[i].Attempts+n
	}
	return out
}

// errNotSent: an earlier message of the batch could not be sent, so this one was not either.
var errNotSent = errors.New("not sent with the batch")

// BatchError says which turns of a PublishBatch were not stored.
type BatchError struct {
	// Failed maps the index of each turn that was not stored to why.
	Failed map[int]error
	// First is the lowest index in Failed.
	First int
}

func (e *BatchError) Error() string {
	return fmt.Sprintf("%d of the batch's turns were not stored; turn %d: %v", len(e.Failed), e.First, e.Failed[e.First])
}

// Unwrap returns the first failure.
func (e *BatchError) Unwrap() error { return e.Failed[e.First] }

// PublishBatch stores turns, in order, at the cost of about one round trip: as JetStream atomic
// batches (PublishAtomic: all or nothing, one disk sync per batch on a server that syncs every
// write), or message by message when the stream refuses the batch (a turn it stored before) or
// does not take atomic batches (PublishAll). On a server that requires authentication it sends
// them message by message (PublishAll): there agentmem's admission takes an agent's turns one
// by one, so a batch gains nothing, and the batch's turns before the last go without a reply
// subject, so none would say so if admission missed them (while it restarts). Every turn is
// checked first: when one is invalid nothing is sent. It returns one Ack per turn (the zero Ack
// for a turn that was not stored) and, when some were not, a *BatchError; sending the whole batch
// again is safe (the stored turns come back as duplicates).
func (c *Client) PublishBatch(ctx context.Context, turns []Turn) (_ []Ack, err error) {
	msgs := make([]*nats.Msg, len(turns))
	ids := make([]string, len(turns))
	for i, t := range turns {
		if t.ID == "" {
			t.ID = uuid.NewString()
		}
		if t.Time.IsZero() {
			t.Time = time.Now()
		}
		body := events.Turn{Role: t.Role, Content: t.Content, User: t.User, Tool: t.Tool, Metadata: t.Metadata}
		if err := body.Validate(); err != nil {
			return nil, fmt.Errorf("turn %d: %w", i, err)
		}
		m, err := c.message(ctx, t.Session, t.ID, events.TypeTurn, t.Time, body)
		if err != nil {
			return nil, fmt.Errorf("turn %d: %w", i, err)
		}
		msgs[i], ids[i] = m, t.ID
	}
	ctx, span := c.tracer.Start(ctx, "memory.turns publish batch", trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(attribute.String("messaging.system", "nats"), attribute.Int("messaging.batch.message_count", len(msgs)),
			attribute.String("agentmem.tenant", c.opts.Tenant)))
	defer func() { endSpan(span, err) }()
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, max(c.opts.Retry, c.opts.Timeout))
		defer cancel()
	}
	acks := make([]Ack, len(msgs))
	var failed *BatchError
	publish := PublishAtomic
	if c.nc.AuthRequired() {
		publish = PublishAll
	}
	for i, r := range publish(ctx, c.js, msgs, c.opts.Timeout) {
		if r.Err != nil {
			if failed == nil {
				failed = &BatchError{Failed: map[int]error{}, First: i}
			}
			failed.Failed[i] = r.Err
			continue
		}
		acks[i] = Ack{ID: ids[i], Stream: r.Ack.Stream, Sequence: r.Ack.Sequence, Duplicate: r.Ack.Duplicate}
	}
	if failed != nil {
		return acks, failed
	}
	return acks, nil
}

// MaxAtomicBatch is the most messages PublishAtomic sends as one atomic batch: nats-server's
// default limit of a batch.
const MaxAtomicBatch = events.MaxAtomicBatch

// PublishAtomic stores msgs like PublishAll, as JetStream atomic batches of at most
// MaxAtomicBatch messages (nats-server 2.12+, a stream with allow_atomic): each batch is stored
// all or nothing, in order and contiguous, and on a server that syncs every write (sync_interval:
// always) it costs one disk sync instead of one per message (group commit). Fewer than
// events.MinAtomicBatch messages go with PublishAll: staging a batch costs more. A batch the
// server refuses or does not answer (a message id it stored before, a stream without atomic
// publish, too many batches in flight, a timeout or a leader change) is sent again with
// PublishAll: every message carries its Nats-Msg-Id, so what the batch stored comes back as
// duplicates. msgs are not modified. It returns one result per message, in order.
func PublishAtomic(ctx context.Context, js jetstream.JetStream, msgs []*nats.Msg, attempt time.Duration) []Published {
	if len(msgs) < events.MinAtomicBatch {
		return PublishAll(ctx, js, msgs, attempt) // cheaper than staging a batch
	}
	out := make([]Published, 0, len(msgs))
	for start := 0; start < len(msgs); start += MaxAtomicBatch {
		part := msgs[start:min(start+MaxAtomicBatch, len(msgs))]
		res, err := publishAtomic(ctx, js, part, attempt)
		if err != nil {
			res = PublishAll(ctx, js, part, attempt)
			for i := range res {
				res[i].Attempts++
			}
		}
		out = append(out, res...)
	}
	return out
}

// PublishAtomicOnce stores msgs (at most MaxAtomicBatch) as one JetStream atomic batch and
// returns one result per message, or the error that refused or lost the batch, after which any
// or none of them may be stored (their Nats-Msg-Id make a retry safe). It does not fall back to
// PublishAll: callers that group several requests' messages into one batch retry each request on
// its own (the HTTP gateway's group commit).
func PublishAtomicOnce(ctx context.Context, js jetstream.JetStream, msgs []*nats.Msg, attempt time.Duration) ([]Published, error) {
	if len(msgs) == 0 || len(msgs) > MaxAtomicBatch {
		return nil, fmt.Errorf("an atomic batch holds 1 to %d messages, not %d", MaxAtomicBatch, len(msgs))
	}
	return publishAtomic(ctx, js, msgs, attempt)
}

func publishAtomic(ctx context.Context, js jetstream.JetStream, msgs []*nats.Msg, attempt time.Duration) ([]Published, error) {
	batch := make([]*nats.Msg, len(msgs))
	for i, m := range msgs {
		// PublishMsgBatch sets the batch headers on the messages it sends: send copies.
		c := *m
		c.Header = make(nats.Header, len(m.Header)+3)
		for k, v := range m.Header {
			c.Header[k] = v
		}
		c.Reply, c.Sub = "", nil
		batch[i] = &c
	}
	actx, cancel := context.WithTimeout(ctx, attempt)
	defer cancel()
	ack, err := jetstreamext.PublishMsgBatch(actx, js, batch, jetstreamext.BatchFlowControl{AckTimeout: attempt})
	if err != nil {
		return nil, err
	}
	n := uint64(len(msgs))
	if ack.BatchSize != n || ack.Sequence < n {
		return nil, fmt.Errorf("atomic batch of %d acknowledged as %d ending at sequence %d", n, ack.BatchSize, ack.Sequence)
	}
	out := make([]Published, len(msgs))
	first := ack.Sequence - n + 1
	for i := range out {
		out[i] = Published{Ack: &jetstream.PubAck{Stream: ack.Stream, Sequence: first + uint64(i), Domain: ack.Domain}, Attempts: 1}
	}
	return out, nil
}
