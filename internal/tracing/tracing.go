// Package tracing sets up OpenTelemetry tracing for an agentmem process: spans exported over
// OTLP/HTTP (protobuf) to a collector, off by default. With no endpoint every tracer is a no-op
// that still passes an incoming trace context on, so a trace started by an agent survives a
// worker that does not record.
//
// One trace follows a turn: the publisher's span (pkg/client) is the parent of ingest's
// "agentmem.ingest.turn"; a turn that crosses the pressure threshold starts
// "agentmem.ingest.pressure", whose context the pressure event carries to the compressor's
// "agentmem.compress" (with the LLM calls as children and links to the trace of every turn it
// summarises); the summary event carries that context to ingest's "agentmem.ingest.summary" and
// the extractor's "agentmem.extract". The context travels in the CloudEvents distributed-tracing
// extension (pkg/events: SetTraceContext, TraceContext). A retrieval is "agentmem.retrieve",
// child of the traceparent header of the request, with the score parts of the entries returned
// as attributes.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Scope is the instrumentation scope of agentmem's own spans.
const Scope = "github.com/agentmem/agentmem"

// Config configures tracing.
type Config struct {
	// Endpoint is the OTLP/HTTP collector's base URL, e.g. http://localhost:4318 (spans go to
	// its /v1/traces); "" turns tracing off.
	Endpoint string
	// SampleRatio is the share of new traces recorded, in [0,1]; a trace begun by a publisher
	// follows the publisher's sampling decision whatever the ratio, so 0 records only the
	// traces publishers sampled. The flag --trace-sample defaults to 1.
	SampleRatio float64
	// Service names the process in the spans' resource (service.name), e.g. "memoryd".
	Service string
	// BatchTimeout is how long spans wait to be exported in a batch (default 5s).
	BatchTimeout time.Duration
}

// Enabled reports whether spans are exported.
func (c Config) Enabled() bool { return c.Endpoint != "" }

// Validate names the first setting that cannot work.
func (c Config) Validate() error {
	if c.SampleRatio < 0 || c.SampleRatio > 1 {
		return fmt.Errorf("tracing: SampleRatio must be in [0,1], got %g", c.SampleRatio)
	}
	if c.Endpoint == "" {
		return nil
	}
	u, err := url.Parse(c.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("tracing: Endpoint must be an http(s) URL such as http://localhost:4318, got %q", c.Endpoint)
	}
	return nil
}

// Provider is a tracer provider and the way to flush and stop it.
type Provider struct {
	trace.TracerProvider
	sdk *sdktrace.TracerProvider
}

// Shutdown exports the spans still buffered and stops the exporter. It is safe on a no-op
// provider.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p == nil || p.sdk == nil {
		return nil
	}
	return p.sdk.Shutdown(ctx)
}

// ForceFlush exports the spans buffered so far.
func (p *Provider) ForceFlush(ctx context.Context) error {
	if p == nil || p.sdk == nil {
		return nil
	}
	return p.sdk.ForceFlush(ctx)
}

// New returns the provider cfg asks for: a no-op one when tracing is off, otherwise one that
// batches spans to the OTLP/HTTP endpoint.
func New(ctx context.Context, cfg Config) (*Provider, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !cfg.Enabled() {
		return &Provider{TracerProvider: noop.NewTracerProvider()}, nil
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(cfg.Endpoint+"/v1/traces"))
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	ratio := cfg.SampleRatio
	service := cfg.Service
	if service == "" {
		service = "agentmem"
	}
	res, err := resource.Merge(resource.Default(), resource.NewWithAttributes(semconv.SchemaURL, semconv.ServiceName(service)))
	if err != nil && !errors.Is(err, resource.ErrSchemaURLConflict) {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	if res == nil {
		res = resource.NewSchemaless(attribute.String("service.name", service))
	}
	batch := cfg.BatchTimeout
	if batch <= 0 {
		batch = 5 * time.Second
	}
	sdk := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(batch)),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))),
		sdktrace.WithResource(res),
	)
	return &Provider{TracerProvider: sdk, sdk: sdk}, nil
}

// Tracer returns agentmem's tracer of tp, or a no-op tracer when tp is nil.
func Tracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	return tp.Tracer(Scope)
}

// End ends span, recording err (if any) as its status.
func End(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
