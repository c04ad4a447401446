// Package tracingtest is an in-process OTLP/HTTP trace collector for tests: it decodes the
// protobuf ExportTraceServiceRequest the real exporter sends to /v1/traces and keeps the spans.
package tracingtest

import (
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// Span is one received span.
type Span struct {
	Service  string
	Name     string
	TraceID  string
	SpanID   string
	Parent   string // "" for a root span
	Attrs    map[string]any
	Links    []Link
	ErrorMsg string // the status message of a span that ended with an error
}

// Link is a span link.
type Link struct {
	TraceID, SpanID string
	Attrs           map[string]any
}

// Collector receives spans over OTLP/HTTP.
type Collector struct {
	URL string // base URL, for tracing.Config.Endpoint

	mu    sync.Mutex
	spans []Span
}

// New starts a collector closed at the end of the test.
func New(t testing.TB) *Collector {
	c := &Collector{}
	srv := httptest.NewServer(http.HandlerFunc(c.serve))
	t.Cleanup(srv.Close)
	c.URL = srv.URL
	return c
}

func (c *Collector) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &req); err != nil {
		http.Error(w, "not an ExportTraceServiceRequest: "+err.Error(), http.StatusBadRequest)
		return
	}
	var got []Span
	for _, rs := range req.GetResourceSpans() {
		service, _ := attrs(rs.GetResource().GetAttributes())["service.name"].(string)
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				sp := Span{
					Service: service, Name: s.GetName(), TraceID: hex.EncodeToString(s.GetTraceId()),
					SpanID: hex.EncodeToString(s.GetSpanId()), Parent: hex.EncodeToString(s.GetParentSpanId()),
					Attrs: attrs(s.GetAttributes()),
				}
				if s.GetStatus().GetCode() == 2 { // STATUS_CODE_ERROR
					sp.ErrorMsg = s.GetStatus().GetMessage()
				}
				for _, l := range s.GetLinks() {
					sp.Links = append(sp.Links, Link{TraceID: hex.EncodeToString(l.GetTraceId()), SpanID: hex.EncodeToString(l.GetSpanId()), Attrs: attrs(l.GetAttributes())})
				}
				got = append(got, sp)
			}
		}
	}
	c.mu.Lock()
	c.spans = append(c.spans, got...)
	c.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func attrs(kvs []*commonpb.KeyValue) map[string]any {
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		m[kv.GetKey()] = value(kv.GetValue())
	}
	return m
}

func value(v *commonpb.AnyValue) any {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return x.IntValue
	case *commonpb.AnyValue_DoubleValue:
		return x.DoubleValue
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	case *commonpb.AnyValue_ArrayValue:
		var out []any
		for _, e := range x.ArrayValue.GetValues() {
			out = append(out, value(e))
		}
		return out
	}
	return nil
}

// Spans returns the spans received so far.
func (c *Collector) Spans() []Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Span(nil), c.spans...)
}

// Named returns the spans received so far with the given name.
func (c *Collector) Named(name string) []Span {
	var out []Span
	for _, s := range c.Spans() {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// Await polls (every 20ms, for at most timeout) until done holds for the spans received, and
// fails the test with what it has otherwise.
func (c *Collector) Await(t testing.TB, timeout time.Duration, what string, done func([]Span) bool) []Span {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		spans := c.Spans()
		if done(spans) {
			return spans
		}
		if time.Now().After(deadline) {
			names := map[string]int{}
			for _, s := range spans {
				names[s.Name]++
			}
			t.Fatalf("%s: not within %v; spans received by name: %v", what, timeout, names)
		}
		tick := time.NewTimer(20 * time.Millisecond)
		<-tick.C
	}
}
