package events

import (
	"context"
	"net/http"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/cloudevents/sdk-go/v2/extensions"
	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Trace context travels with the events in the CloudEvents distributed-tracing extension: the
// attributes traceparent and tracestate in W3C Trace Context format (ce-traceparent and
// ce-tracestate headers in binary mode, top-level members in structured mode). A request that is
// not a CloudEvent (memory.retrieve.<tenant>, the forget endpoint) carries the same values as
// the plain headers traceparent and tracestate. Both are optional: an event without them starts
// a new trace.
const (
	// TraceParentAttribute is the CloudEvents extension (and request header) holding the W3C
	// traceparent, e.g. "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".
	TraceParentAttribute = extensions.TraceParentExtension
	// TraceStateAttribute holds the W3C tracestate, when there is one.
	TraceStateAttribute = extensions.TraceStateExtension
)

var traceContext = propagation.TraceContext{}

// SetTraceContext writes the span context of ctx into ev's distributed-tracing extension. It
// does nothing when ctx holds no valid span context.
func SetTraceContext(ctx context.Context, ev *event.Event) {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return
	}
	c := propagation.MapCarrier{}
	traceContext.Inject(ctx, c)
	ext := extensions.DistributedTracingExtension{TraceParent: c["traceparent"], TraceState: c["tracestate"]}
	ext.AddTracingAttributes(ev)
}

// TraceContext returns ctx with the remote span context named by ev's distributed-tracing
// extension, or ctx unchanged when ev has none (or an invalid one).
func TraceContext(ctx context.Context, ev event.Event) context.Context {
	ext, ok := extensions.GetDistributedTracingExtension(ev)
	if !ok || ext.TraceParent == "" {
		return ctx
	}
	c := propagation.MapCarrier{"traceparent": ext.TraceParent}
	if ext.TraceState != "" {
		c["tracestate"] = ext.TraceState
	}
	return traceContext.Extract(ctx, c)
}

// SpanContextOf returns the span context named by a stored message's ce-traceparent header (a
// binary-mode event) or, failing that, by its structured body, for linking to it. ok is false
// when the message names none.
func SpanContextOf(h nats.Header, data []byte) (sc trace.SpanContext, ok bool) {
	if tp := h.Get("ce-" + TraceParentAttribute); tp != "" {
		c := propagation.MapCarrier{"traceparent": tp, "tracestate": h.Get("ce-" + TraceStateAttribute)}
		sc = trace.SpanContextFromContext(traceContext.Extract(context.Background(), c))
		return sc, sc.IsValid()
	}
	if h.Get(ceHeaderPrefix+"specversion") != "" {
		return trace.SpanContext{}, false // binary mode: its headers name no trace
	}
	if ev, err := Decode(&nats.Msg{Header: h, Data: data}); err == nil {
		sc = trace.SpanContextFromContext(TraceContext(context.Background(), ev))
		return sc, sc.IsValid()
	}
	return trace.SpanContext{}, false
}

// InjectHeader writes the span context of ctx into a request's traceparent and tracestate
// headers.
func InjectHeader(ctx context.Context, h nats.Header) {
	traceContext.Inject(ctx, headerCarrier(h))
}

// ExtractHeader returns ctx with the remote span context of a request's traceparent header.
func ExtractHeader(ctx context.Context, h nats.Header) context.Context {
	if h == nil {
		return ctx
	}
	return traceContext.Extract(ctx, headerCarrier(h))
}

// headerCarrier reads and writes NATS headers by their exact (lower-case) names, which is how
// W3C Trace Context names them; http.Header would canonicalise them to "Traceparent".
type headerCarrier nats.Header

func (c headerCarrier) Get(key string) string {
	if v := c[key]; len(v) > 0 {
		return v[0]
	}
	return http.Header(c).Get(key)
}

func (c headerCarrier) Set(key, value string) { c[key] = []string{value} }

func (c headerCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}
