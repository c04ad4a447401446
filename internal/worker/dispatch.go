package worker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentmem/agentmem/internal/tracing"
	"github.com/agentmem/agentmem/pkg/events"
)

// Event is a delivered message decoded once: what its subject names and its CloudEvent.
type Event struct {
	Msg     jetstream.Msg
	Meta    *jetstream.MsgMetadata
	Address events.EventAddress
	Event   cloudevents.Event
}

// Route handles the events of one type (see On).
type Route struct {
	typ  string
	span string
	call func(ctx context.Context, e Event) error
}

// On routes events of type typ to fn with their data decoded into T; when T has a
// Validate() error method, the data is validated first. A decode or validation error is bad
// input (events.ErrInvalid): dead-lettered, or skipped with Dispatch.SkipInvalid.
func On[T any](typ string, fn func(ctx context.Context, e Event, data T) error) Route {
	return Route{typ: typ, call: func(ctx context.Context, e Event) error {
		v, err := events.DecodeData[T](e.Event)
		if err != nil {
			return err
		}
		if val, ok := any(v).(interface{ Validate() error }); ok {
			if err := val.Validate(); err != nil {
				return err
			}
		}
		return fn(ctx, e, v)
	}}
}

// Traced returns the route with a consumer span named name around each call, a child of the
// trace the event carries; the span records the handler's error.
func (r Route) Traced(name string) Route {
	r.span = name
	return r
}

// Dispatch is the decode-once middleware of a shared worker.
type Dispatch struct {
	// Kinds are the subject kinds accepted (events.Kind*); a message on another kind is bad
	// input. Empty accepts every kind.
	Kinds []string
	// Routes are the typed handlers, one per event type.
	Routes []Route
	// SkipUnknown acknowledges events of a type without a route (a stage that reads a stream
	// shared with others, e.g. session ends among turns); otherwise they are bad input.
	SkipUnknown bool
	// SkipInvalid acknowledges messages that fail to parse, decode or validate: another stage
	// owns them and dead-letters them (ingest, for the turns stream).
	SkipInvalid bool
	// Tracer starts the routes' spans (nil: the global tracer provider's).
	Tracer trace.Tracer
}

// Handler returns the worker handler of d.
func (d Dispatch) Handler() Handler {
	tracer := d.Tracer
	if tracer == nil {
		tracer = tracing.Tracer(nil)
	}
	return func(ctx context.Context, m jetstream.Msg) error {
		e, route, err := d.decode(m)
		if err != nil {
			if d.SkipInvalid && errors.Is(err, events.ErrInvalid) {
				return nil
			}
			return err
		}
		if route == nil {
			return nil
		}
		if route.span == "" {
			return route.call(events.TraceContext(ctx, e.Event), e)
		}
		sctx, span := tracer.Start(events.TraceContext(ctx, e.Event), route.span, trace.WithSpanKind(trace.SpanKindConsumer),
			trace.WithAttributes(attribute.String("agentmem.tenant", e.Address.Tenant), attribute.String("messaging.message.id", e.Event.ID())))
		if e.Address.Kind != events.KindFacts {
			span.SetAttributes(attribute.String("agentmem.session", e.Address.Key))
		}
		err = route.call(sctx, e)
		tracing.End(span, err)
		return err
	}
}

// decode parses m's subject and event and finds its route (nil: skip it).
func (d Dispatch) decode(m jetstream.Msg) (Event, *Route, error) {
	addr, err := events.ParseEventSubject(m.Subject())
	if err != nil {
		return Event{}, nil, err
	}
	if len(d.Kinds) > 0 && !slices.Contains(d.Kinds, addr.Kind) {
		return Event{}, nil, fmt.Errorf("%w: subject %q: want memory.%s", events.ErrInvalid, m.Subject(), strings.Join(d.Kinds, " or memory."))
	}
	ev, err := events.Decode(&nats.Msg{Subject: m.Subject(), Header: m.Headers(), Data: m.Data()})
	if err != nil {
		return Event{}, nil, err
	}
	meta, err := m.Metadata()
	if err != nil {
		return Event{}, nil, err
	}
	e := Event{Msg: m, Meta: meta, Address: addr, Event: ev}
	for i := range d.Routes {
		if d.Routes[i].typ == ev.Type() {
			return e, &d.Routes[i], nil
		}
	}
	if d.SkipUnknown {
		return e, nil, nil
	}
	types := make([]string, len(d.Routes))
	for i, r := range d.Routes {
		types[i] = r.typ
	}
	return e, nil, fmt.Errorf("%w: unexpected event type %q on %s: want %s", events.ErrInvalid, ev.Type(), m.Subject(), strings.Join(types, " or "))
}
