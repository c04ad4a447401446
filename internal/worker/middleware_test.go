package worker

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentmem/agentmem/pkg/events"
)

// record returns a middleware that appends name to *log before and "/"+name after the call.
func record(log *[]string, name string) Middleware {
	return func(next Handler) Handler {
		return func(ctx context.Context, m jetstream.Msg) error {
			*log = append(*log, name)
			err := next(ctx, m)
			*log = append(*log, "/"+name)
			return err
		}
	}
}

// Chain runs its first middleware outermost; ChainGroup the same over groups.
func TestChainOrder(t *testing.T) {
	var log []string
	h := Chain(func(context.Context, jetstream.Msg) error { log = append(log, "handler"); return nil },
		record(&log, "a"), record(&log, "b"))
	if err := h(context.Background(), &fakeMsg{}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(log, " "); got != "a b handler /b /a" {
		t.Fatalf("ran %q, want a, then b, then the handler", got)
	}
	log = nil
	groupRecord := func(name string) GroupMiddleware[string] {
		return func(next GroupHandler[string]) GroupHandler[string] {
			return func(ctx context.Context, g []Delivery[string]) ([]error, error) {
				log = append(log, name)
				return next(ctx, g)
			}
		}
	}
	gh := ChainGroup(func(context.Context, []Delivery[string]) ([]error, error) {
		log = append(log, "handler")
		return nil, nil
	},
		groupRecord("a"), groupRecord("b"))
	if _, err := gh(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(log, " "); got != "a b handler" {
		t.Fatalf("ran %q, want a, then b, then the handler", got)
	}
}

// Recover turns a panic into a *PanicError (a retried failure, see TestPanicIsSettledAsARetry);
// RecoverGroup into the outcome of the whole group, and Each into that message's outcome only.
func TestRecover(t *testing.T) {
	err := Recover(func(context.Context, jetstream.Msg) error { panic("boom") })(context.Background(), &fakeMsg{})
	var p *PanicError
	if !errors.As(err, &p) || p.Value != "boom" {
		t.Fatalf("Recover returned %v, want a *PanicError", err)
	}
	_, err = RecoverGroup(func(context.Context, []Delivery[int]) ([]error, error) { panic("boom") })(context.Background(), nil)
	if !errors.As(err, &p) {
		t.Fatalf("RecoverGroup returned %v, want a *PanicError", err)
	}
	group := []Delivery[int]{{Msg: &fakeMsg{subject: "a"}}, {Msg: &fakeMsg{subject: "panic"}}, {Msg: &fakeMsg{subject: "c"}}}
	var handled []string
	outcomes, err := Each[int](func(_ context.Context, m jetstream.Msg) error {
		handled = append(handled, m.Subject())
		if m.Subject() == "panic" {
			panic("boom")
		}
		return nil
	})(context.Background(), group)
	if err != nil || len(outcomes) != 3 || outcomes[0] != nil || !errors.As(outcomes[1], &p) || outcomes[2] != nil {
		t.Fatalf("Each returned %v, %v: want the panic as the second message's outcome only", outcomes, err)
	}
	if strings.Join(handled, " ") != "a panic c" {
		t.Fatalf("Each handled %v, want every message in order", handled)
	}
}

// Timeout gives each call a deadline; d <= 0 none.
func TestTimeout(t *testing.T) {
	deadline := func(mw Middleware) (time.Duration, bool) {
		var left time.Duration
		var ok bool
		_ = mw(func(ctx context.Context, _ jetstream.Msg) error {
			var d time.Time
			d, ok = ctx.Deadline()
			left = time.Until(d)
			return nil
		})(context.Background(), &fakeMsg{})
		return left, ok
	}
	if left, ok := deadline(Timeout(time.Minute)); !ok || left <= 0 || left > time.Minute {
		t.Fatalf("deadline in %v (set: %v), want within a minute", left, ok)
	}
	if _, ok := deadline(Timeout(0)); ok {
		t.Fatal("Timeout(0) set a deadline")
	}
	var gotDeadline bool
	_, _ = TimeoutGroup[int](time.Minute)(func(ctx context.Context, _ []Delivery[int]) ([]error, error) {
		_, gotDeadline = ctx.Deadline()
		return nil, nil
	})(context.Background(), nil)
	if !gotDeadline {
		t.Fatal("TimeoutGroup set no deadline")
	}
	// A handler that waits on its context ends when the timeout does.
	err := Timeout(10*time.Millisecond)(func(ctx context.Context, _ jetstream.Msg) error {
		<-ctx.Done()
		return ctx.Err()
	})(context.Background(), &fakeMsg{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("handler returned %v, want the deadline exceeded", err)
	}
}

// eventMsg is a delivered binary-mode event of typ on subject, in the trace of parent.
func eventMsg(t *testing.T, subject, typ string, parent context.Context) *headersMsg {
	t.Helper()
	ev, err := events.NewEvent("e1", typ, "agentmem/test", time.Now(), map[string]any{"n": 1})
	if err != nil {
		t.Fatal(err)
	}
	events.SetTraceContext(parent, &ev)
	nm, err := events.BinaryMsg(subject, ev)
	if err != nil {
		t.Fatal(err)
	}
	return &headersMsg{fakeMsg: fakeMsg{subject: subject}, msgHeaders: nm.Header, data: nm.Data}
}

// A Traced route runs in a consumer span named as the route says, a child of the event's trace,
// with the event's tenant, session and id; the span records the handler's error.
func TestTraceMiddlewareStartsTheConsumerSpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	parent, parentSpan := tp.Tracer("test").Start(context.Background(), "publish")
	parentSpan.End()
	var inSpan trace.SpanContext
	h := Dispatch{
		Kinds: []string{events.KindPressure},
		Routes: []Route{On(events.TypePressure, func(ctx context.Context, e Event, _ map[string]any) error {
			inSpan = trace.SpanContextFromContext(ctx)
			return errors.New("the LLM is down")
		}).Traced("agentmem.test")},
		Tracer: tp.Tracer("test"),
	}.Handler()
	m := eventMsg(t, "memory.pressure.acme.s1", events.TypePressure, parent)
	if err := h(context.Background(), m); err == nil || err.Error() != "the LLM is down" {
		t.Fatalf("handler returned %v", err)
	}
	var span sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "agentmem.test" {
			span = s
		}
	}
	if span == nil {
		t.Fatal("no agentmem.test span")
	}
	if span.SpanKind() != trace.SpanKindConsumer || span.Parent().SpanID() != parentSpan.SpanContext().SpanID() ||
		span.SpanContext().SpanID() != inSpan.SpanID() {
		t.Fatalf("span kind %v parent %v (handler in %v): want a consumer span, child of the event's trace, around the handler",
			span.SpanKind(), span.Parent().SpanID(), inSpan.SpanID())
	}
	attrs := map[string]string{}
	for _, kv := range span.Attributes() {
		attrs[string(kv.Key)] = kv.Value.AsString()
	}
	if attrs["agentmem.tenant"] != "acme" || attrs["agentmem.session"] != "s1" || attrs["messaging.message.id"] != "e1" {
		t.Fatalf("span attributes %v", attrs)
	}
	if span.Status().Description != "the LLM is down" {
		t.Fatalf("span status %+v, want the handler's error", span.Status())
	}
}

// Decode hands the handler the decoded event; a message that does not decode is bad input,
// skipped with SkipInvalid; a Read route reads the message itself, its reader's error skipped
// the same way.
func TestDecode(t *testing.T) {
	var got Event
	h := Dispatch{Routes: []Route{On(events.TypePressure, func(_ context.Context, e Event, _ map[string]any) error {
		got = e
		return nil
	})}}.Handler()
	if err := h(context.Background(), eventMsg(t, "memory.pressure.acme.s1", events.TypePressure, context.Background())); err != nil {
		t.Fatal(err)
	}
	if got.Event.ID() != "e1" || got.Address.Tenant != "acme" || got.Address.Key != "s1" || got.Meta == nil {
		t.Fatalf("decoded %+v", got)
	}
	bad := &headersMsg{fakeMsg: fakeMsg{subject: "memory.pressure.acme.s1"}, data: []byte("not an event")}
	if err := h(context.Background(), bad); !errors.Is(err, events.ErrInvalid) {
		t.Fatalf("undecodable message: %v, want bad input", err)
	}
	skip := Dispatch{SkipInvalid: true, Routes: []Route{On(events.TypePressure, func(context.Context, Event, map[string]any) error {
		t.Error("handler called")
		return nil
	})}}.Handler()
	if err := skip(context.Background(), bad); err != nil {
		t.Fatalf("SkipInvalid returned %v", err)
	}
	read := Dispatch{SkipInvalid: true, Routes: []Route{Read(func(e Event) (string, error) {
		if string(e.Msg.Data()) != "ok" {
			return "", errors.New("unreadable")
		}
		return "read", nil
	}, func(_ context.Context, e Event, v string) error {
		got = e
		return nil
	})}}.Handler()
	got = Event{}
	if err := read(context.Background(), bad); err != nil || got.Msg != nil {
		t.Fatalf("Read route on an unreadable message: %v (handled: %v), want it skipped", err, got.Msg != nil)
	}
	ok := &headersMsg{fakeMsg: fakeMsg{subject: "memory.turns.acme.s1"}, data: []byte("ok")}
	if err := read(context.Background(), ok); err != nil || got.Msg != ok || got.Address.Key != "s1" {
		t.Fatalf("Read route: %v, handled %+v", err, got)
	}
}

// headersMsg is a fakeMsg with its own headers and body.
type headersMsg struct {
	fakeMsg
	msgHeaders nats.Header
	data       []byte
}

func (m *headersMsg) Headers() nats.Header { return m.msgHeaders }
func (m *headersMsg) Data() []byte         { return m.data }
