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
	"go.opentelemetry.io/otel/trace"

	"github.com/agentmem/agentmem/pkg/events"
)

// Event is a delivered message decoded once: what its subject names and its CloudEvent (the
// zero event for a Read route, which reads the message itself).
type Event struct {
	Msg     jetstream.Msg
	Meta    *jetstream.MsgMetadata
	Address events.EventAddress
	Event   cloudevents.Event
}

// Route handles the events of one type (see On and Read).
type Route struct {
	typ  string
	span string
	// raw routes read the message themselves (Read): no CloudEvent is built for them.
	raw  bool
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

// Read routes every message of its Dispatch (it is the only route) to fn with T read from the
// message by read, without building a CloudEvent: for a hot path whose reader checks the event
// itself (events.ReadAppliedTurn). An error of read is bad input (events.ErrInvalid). The
// handler's context continues the trace the message's headers name.
func Read[T any](read func(e Event) (T, error), fn func(ctx context.Context, e Event, v T) error) Route {
	return Route{raw: true, call: func(ctx context.Context, e Event) error {
		v, err := read(e)
		if err != nil {
			return &unreadable{fmt.Errorf("%w: %w", events.ErrInvalid, err)}
		}
		return fn(ctx, e, v)
	}}
}

// unreadable is a message a Read route could not read: bad input, skipped like a message that
// does not decode.
type unreadable struct{ err error }

func (u *unreadable) Error() string { return u.err.Error() }
func (u *unreadable) Unwrap() error { return u.err }

// Traced returns the route with a consumer span named name around each call (the Trace
// middleware), a child of the trace the event carries; the span records the handler's error.
func (r Route) Traced(name string) Route {
	r.span = name
	return r
}

// Dispatch is the decode-once step of a consumer: it parses each message's subject, decodes its
// CloudEvent and dispatches on its type to a typed route.
type Dispatch struct {
	// Kinds are the subject kinds accepted (events.Kind*); a message on another kind is bad
	// input. Empty accepts every kind.
	Kinds []string
	// Routes are the typed handlers, one per event type (or a single Read route).
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

// Handler returns the handler of d: Decode, then the route of the event's type, each route
// wrapped in its Trace middleware when it is Traced.
func (d Dispatch) Handler() Handler {
	routes := make(map[string]Handler, len(d.Routes))
	var raw Handler
	for _, r := range d.Routes {
		call := r.call
		h := func(ctx context.Context, _ jetstream.Msg) error {
			e, _ := EventOf(ctx)
			return call(ctx, e)
		}
		if r.span != "" {
			h = Trace(d.Tracer, r.span)(h)
		}
		if r.raw {
			raw = h
			continue
		}
		routes[r.typ] = h
	}
	if raw != nil {
		return d.Decode(raw)
	}
	return d.Decode(func(ctx context.Context, m jetstream.Msg) error {
		e, _ := EventOf(ctx)
		if h, ok := routes[e.Event.Type()]; ok {
			return h(ctx, m)
		}
		if d.SkipUnknown {
			return nil
		}
		types := make([]string, len(d.Routes))
		for i, r := range d.Routes {
			types[i] = r.typ
		}
		return fmt.Errorf("%w: unexpected event type %q on %s: want %s", events.ErrInvalid, e.Event.Type(), m.Subject(), strings.Join(types, " or "))
	})
}

// Decode is the decode middleware of d: it parses the subject of each message (checking its
// kind), reads its metadata and, unless d has a Read route, decodes its CloudEvent, and hands
// next a context carrying the result (EventOf) and the trace the event names. A message that
// does not parse or decode (or that a Read route cannot read) is bad input (events.ErrInvalid):
// returned, or acknowledged with SkipInvalid.
func (d Dispatch) Decode(next Handler) Handler {
	raw := len(d.Routes) == 1 && d.Routes[0].raw
	return func(ctx context.Context, m jetstream.Msg) error {
		e, err := d.decode(m, raw)
		if err != nil {
			if d.SkipInvalid && errors.Is(err, events.ErrInvalid) {
				return nil
			}
			return err
		}
		if raw {
			if sc, ok := events.SpanContextOf(m.Headers(), nil); ok {
				ctx = trace.ContextWithRemoteSpanContext(ctx, sc)
			}
		} else {
			ctx = events.TraceContext(ctx, e.Event)
		}
		err = next(context.WithValue(ctx, eventKey{}, &e), m)
		var u *unreadable
		if d.SkipInvalid && errors.As(err, &u) {
			return nil
		}
		return err
	}
}

// decode parses m's subject and metadata and, unless raw, its event.
func (d Dispatch) decode(m jetstream.Msg, raw bool) (Event, error) {
	addr, err := events.ParseEventSubject(m.Subject())
	if err != nil {
		return Event{}, err
	}
	if len(d.Kinds) > 0 && !slices.Contains(d.Kinds, addr.Kind) {
		return Event{}, fmt.Errorf("%w: subject %q: want memory.%s", events.ErrInvalid, m.Subject(), strings.Join(d.Kinds, " or memory."))
	}
	e := Event{Msg: m, Address: addr}
	if !raw {
		if e.Event, err = events.Decode(&nats.Msg{Subject: m.Subject(), Header: m.Headers(), Data: m.Data()}); err != nil {
			return Event{}, err
		}
	}
	if e.Meta, err = m.Metadata(); err != nil {
		return Event{}, err
	}
	return e, nil
}
