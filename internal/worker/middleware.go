package worker

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentmem/agentmem/internal/tracing"
	"github.com/agentmem/agentmem/pkg/events"
)

// Middleware wraps a Handler with a concern every stage shares (recover, timeout, decode,
// trace). It never acknowledges: whatever it returns is settled like the handler's error.
type Middleware func(Handler) Handler

// Chain returns h wrapped in mw: the first middleware is the outermost, so
// Chain(h, a, b)(ctx, m) runs a, then b, then h.
func Chain(h Handler, mw ...Middleware) Handler {
	for i := len(mw) - 1; i >= 0; i-- {
		h = mw[i](h)
	}
	return h
}

// Recover turns a panic in next into a *PanicError, which is settled as a transient failure:
// the message is retried, and dead-lettered on its last delivery. Both modes run it outermost.
func Recover(next Handler) Handler {
	return func(ctx context.Context, m jetstream.Msg) (err error) {
		return Protect(func() error { return next(ctx, m) })
	}
}

// Timeout bounds each call of next to d; d <= 0 leaves the call unbounded.
func Timeout(d time.Duration) Middleware {
	return func(next Handler) Handler {
		if d <= 0 {
			return next
		}
		return func(ctx context.Context, m jetstream.Msg) error {
			ctx, cancel := context.WithTimeout(ctx, d)
			defer cancel()
			return next(ctx, m)
		}
	}
}

// Trace starts a consumer span named name around each call of next, a child of the trace the
// decoded event carries, with the event's tenant, id and (for a session's event) session as
// attributes; the span records next's error. It reads the event Decode put in the context (see
// EventOf): without one, next runs without a span. A nil tracer is the global provider's.
func Trace(tracer trace.Tracer, name string) Middleware {
	if tracer == nil {
		tracer = tracing.Tracer(nil)
	}
	return func(next Handler) Handler {
		return func(ctx context.Context, m jetstream.Msg) error {
			e, ok := EventOf(ctx)
			if !ok {
				return next(ctx, m)
			}
			attrs := []attribute.KeyValue{attribute.String("agentmem.tenant", e.Address.Tenant), attribute.String("messaging.message.id", e.Event.ID())}
			if e.Address.Kind != events.KindFacts {
				attrs = append(attrs, attribute.String("agentmem.session", e.Address.Key))
			}
			sctx, span := tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attrs...))
			err := next(sctx, m)
			tracing.End(span, err)
			return err
		}
	}
}

// eventKey is the context key of the decoded event.
type eventKey struct{}

// EventOf returns the event Decode (a Dispatch) decoded for the handler of ctx.
func EventOf(ctx context.Context) (Event, bool) {
	e, ok := ctx.Value(eventKey{}).(*Event)
	if !ok {
		return Event{}, false
	}
	return *e, true
}

// GroupMiddleware wraps a GroupHandler of the ordered mode, as Middleware wraps a Handler.
type GroupMiddleware[K comparable] func(GroupHandler[K]) GroupHandler[K]

// ChainGroup returns h wrapped in mw, the first outermost (see Chain).
func ChainGroup[K comparable](h GroupHandler[K], mw ...GroupMiddleware[K]) GroupHandler[K] {
	for i := len(mw) - 1; i >= 0; i-- {
		h = mw[i](h)
	}
	return h
}

// RecoverGroup turns a panic in next into a *PanicError, the outcome of every message of the
// group: the group is retried in order. The ordered mode runs it outermost.
func RecoverGroup[K comparable](next GroupHandler[K]) GroupHandler[K] {
	return func(ctx context.Context, group []Delivery[K]) (outcomes []error, err error) {
		err = Protect(func() error {
			outcomes, err = next(ctx, group)
			return err
		})
		return outcomes, err
	}
}

// TimeoutGroup bounds each call of next to d; d <= 0 leaves it unbounded.
func TimeoutGroup[K comparable](d time.Duration) GroupMiddleware[K] {
	return func(next GroupHandler[K]) GroupHandler[K] {
		if d <= 0 {
			return next
		}
		return func(ctx context.Context, group []Delivery[K]) ([]error, error) {
			ctx, cancel := context.WithTimeout(ctx, d)
			defer cancel()
			return next(ctx, group)
		}
	}
}

// Each returns the GroupHandler that hands the messages of a group to h one by one, in stream
// order, with ctx: a feed whose messages are handled on their own (decoded and traced by a
// Dispatch), in order within their group. Each message's outcome is h's error for it.
func Each[K comparable](h Handler) GroupHandler[K] {
	h = Recover(h)
	return func(ctx context.Context, group []Delivery[K]) ([]error, error) {
		outcomes := make([]error, len(group))
		for i, d := range group {
			outcomes[i] = h(ctx, d.Msg)
		}
		return outcomes, nil
	}
}
