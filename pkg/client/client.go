// Package client is what an agent written in Go imports to use agentmem: publish a conversation
// turn, end a session, retrieve memory and the context to put into a prompt, and watch the
// memory events of its tenant. It speaks only the v1 wire contract over NATS (subjects under the
// agent's own tenant); the agent needs no JetStream or KV access of its own.
package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentmem/agentmem/pkg/events"
)

// Options configures a Client.
type Options struct {
	// Tenant is the agent's tenant; every subject the client uses is under it.
	Tenant string
	// Source is the CloudEvents source of published events ("agentmem/client").
	Source string
	// Timeout bounds each attempt of a call (5s; a retrieve's attempt gets its WaitMS more).
	Timeout time.Duration
	// Retry is how long a call keeps trying when it failed for a passing reason, as while a
	// cluster elects a new stream leader (nats-server waits 4-9 s after a leader crashed) or the
	// connection moves to another server. Publish, EndSession and PublishBatch send the same
	// event again, with the same Nats-Msg-Id, so that it is stored once, when no stream answered,
	// the publish timed out or got a 5xx; Retrieve asks again when no retriever answered, none
	// answered in time, or one answered 503 (not a 503 on "after": the retriever waited WaitMS
	// already). It applies when the context has no deadline (30s, longer than an election;
	// negative: one attempt only). Each attempt is bounded by Timeout (a retrieve's by Timeout
	// plus its WaitMS, which the retry adds to as well). A refusal (a 4xx) is never retried.
	Retry time.Duration
	// Structured publishes events in structured content mode instead of binary mode.
	Structured bool
	// TracerProvider makes the client's spans ("memory.turns publish", "memory.retrieve"), whose
	// trace context travels with the event (CloudEvents traceparent) or request (traceparent
	// header) so agentmem's spans join the agent's trace. Default: OpenTelemetry's global
	// provider, a no-op unless the application sets one.
	TracerProvider trace.TracerProvider
}

// DefaultRetry is Options.Retry's default: longer than a stream leader's election after a crash
// (4-9 s) plus an attempt that went to the crashed leader (Timeout).
const DefaultRetry = 30 * time.Second

// Client talks to agentmem for one tenant. It is safe for concurrent use.
type Client struct {
	nc     *nats.Conn
	js     jetstream.JetStream
	opts   Options
	tracer trace.Tracer
}

// New returns a client on an open NATS connection. It fails when the tenant is not a valid token.
func New(nc *nats.Conn, opts Options) (*Client, error) {
	if err := events.ValidateToken("tenant", opts.Tenant); err != nil {
		return nil, err
	}
	if opts.Source == "" {
		opts.Source = "agentmem/client"
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Second
	}
	if opts.Retry == 0 {
		opts.Retry = DefaultRetry
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	tp := opts.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return &Client{nc: nc, js: js, opts: opts, tracer: tp.Tracer("github.com/agentmem/agentmem/pkg/client")}, nil
}

// Turn is one conversation turn to remember.
type Turn struct {
	// ID identifies the turn within its session; a random UUID when empty. Publishing the same id
	// again stores and applies it once.
	ID       string
	Session  string
	User     string
	Role     string // user, assistant, system or tool
	Content  string
	Tool     string // tool name, for role tool
	Metadata map[string]any
	// Time is when the turn happened (default: now).
	Time time.Time
}

// Ack confirms that agentmem stored an event.
type Ack struct {
	ID        string `json:"id"`
	Stream    string `json:"stream"`
	Sequence  uint64 `json:"seq"`
	Duplicate bool   `json:"duplicate"` // the event was stored before: this publish added nothing
}

// Publish stores a turn. It returns once JetStream has stored it; applying it to memory happens
// after (use Retrieve with After to wait for that). It fails on invalid input before sending.
func (c *Client) Publish(ctx context.Context, t Turn) (Ack, error) {
	if t.ID == "" {
		t.ID = uuid.NewString()
	}
	if t.Time.IsZero() {
		t.Time = time.Now()
	}
	body := events.Turn{Role: t.Role, Content: t.Content, User: t.User, Tool: t.Tool, Metadata: t.Metadata}
	if err := body.Validate(); err != nil {
		return Ack{}, err
	}
	return c.publish(ctx, t.Session, t.ID, events.TypeTurn, t.Time, body)
}

// EndSession records that a session ended, so that its facts are extracted. A turn published
// after it reopens the session.
func (c *Client) EndSession(ctx context.Context, session, user string) (Ack, error) {
	return c.publish(ctx, session, uuid.NewString(), events.TypeSessionEnded, time.Now(), events.SessionEnded{User: user})
}

func (c *Client) publish(ctx context.Context, session, id, typ string, at time.Time, data any) (_ Ack, err error) {
	subject, err := events.TurnSubject(c.opts.Tenant, session)
	if err != nil {
		return Ack{}, err
	}
	ctx, span := c.tracer.Start(ctx, "memory.turns publish", trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(attribute.String("messaging.system", "nats"), attribute.String("messaging.destination.name", subject),
			attribute.String("messaging.message.id", id), attribute.String("cloudevents.event_type", typ),
			attribute.String("agentmem.tenant", c.opts.Tenant), attribute.String("agentmem.session", session)))
	defer func() { endSpan(span, err) }()
	msg, err := c.message(ctx, session, id, typ, at, data)
	if err != nil {
		return Ack{}, err
	}
	pa, attempts, err := c.publishRetrying(ctx, msg)
	span.SetAttributes(attribute.Int("agentmem.publish.attempts", attempts))
	if err != nil {
		return Ack{}, fmt.Errorf("publishing to %s (%d attempts): %w", subject, attempts, err)
	}
	return Ack{ID: id, Stream: pa.Stream, Sequence: pa.Sequence, Duplicate: pa.Duplicate}, nil
}

// message is the event to publish on the session's turns subject, with its Nats-Msg-Id and the
// trace context of ctx.
func (c *Client) message(ctx context.Context, session, id, typ string, at time.Time, data any) (*nats.Msg, error) {
	if !c.opts.Structured {
		return events.NewMsg(ctx, c.opts.Tenant, session, id, typ, c.opts.Source, at, data)
	}
	if _, err := events.TurnSubject(c.opts.Tenant, session); err != nil {
		return nil, err
	}
	ev, err := events.NewEvent(id, typ, c.opts.Source, at, data)
	if err != nil {
		return nil, err
	}
	ev.SetSubject(session)
	events.SetTraceContext(ctx, &ev)
	return events.StructuredEventMsg(c.opts.Tenant, session, ev)
}

// publishRetrying publishes msg until it is stored, it is refused, or the deadline passes: the
// context's, else Retry from now.
func (c *Client) publishRetrying(ctx context.Context, msg *nats.Msg) (*jetstream.PubAck, int, error) {
	if c.opts.Retry < 0 {
		ctx, cancel := c.bound(ctx)
		defer cancel()
		pa, err := c.js.PublishMsg(ctx, msg)
		return pa, 1, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, max(c.opts.Retry, c.opts.Timeout))
		defer cancel()
	}
	return PublishStored(ctx, c.js, msg, c.opts.Timeout)
}

// PublishStored publishes msg with JetStream until it is stored, it is refused (a 4xx answer),
// or ctx ends, and returns the acknowledgement and the number of attempts. Each attempt is
// bounded by attempt; a failure that may pass (no stream answered, as while a cluster elects a
// stream leader; a timeout; a 5xx; a connection being re-established) is tried again after a
// backoff from 50ms up to 1s, the same message with the same Nats-Msg-Id, so it is stored once.
// The error is the last attempt's.
func PublishStored(ctx context.Context, js jetstream.JetStream, msg *nats.Msg, attempt time.Duration) (*jetstream.PubAck, int, error) {
	wait := 50 * time.Millisecond
	for n := 1; ; n++ {
		actx, cancel := context.WithTimeout(ctx, attempt)
		pa, err := js.PublishMsg(actx, msg, jetstream.WithRetryAttempts(0))
		cancel()
		if err == nil {
			return pa, n, nil
		}
		if !transient(err) || ctx.Err() != nil {
			return nil, n, err
		}
		select {
		case <-ctx.Done():
			return nil, n, err
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

// transient reports whether a failed publish may succeed when tried again.
func transient(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return apiErr.Code >= 500 || apiErr.Code == 0
	}
	return errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrConnectionReconnecting) || errors.Is(err, nats.ErrDisconnected)
}

func endSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// Retrieve asks the retriever. A request no retriever answered (none running for a moment, as
// while its connection moves to another server), that timed out or that was answered 503 for a
// passing reason is asked again until Retry (see Options). Service errors come back as
// *ServiceError (400 for a bad request, 503 when After was not applied within WaitMS, …).
func (c *Client) Retrieve(ctx context.Context, req events.RetrieveRequest) (_ events.RetrieveReply, err error) {
	var reply events.RetrieveReply
	subject, err := events.RetrieveSubject(c.opts.Tenant)
	if err != nil {
		return reply, err
	}
	body, err := json.Marshal(req)
	if err != nil {
		return reply, fmt.Errorf("encoding request: %w", err)
	}
	attempt := c.opts.Timeout + time.Duration(max(req.WaitMS, 0))*time.Millisecond
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, attempt+max(c.opts.Retry, 0))
		defer cancel()
	}
	ctx, span := c.tracer.Start(ctx, "memory.retrieve", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("agentmem.tenant", c.opts.Tenant), attribute.String("agentmem.session", req.Session)))
	defer func() { endSpan(span, err) }()
	rm := nats.NewMsg(subject)
	rm.Data = body
	events.InjectHeader(ctx, rm.Header)
	if c.opts.Retry < 0 {
		err = c.request(ctx, rm, &reply)
		return reply, err
	}
	msg, attempts, err := Request(ctx, c.nc, rm, attempt)
	span.SetAttributes(attribute.Int("agentmem.request.attempts", attempts))
	if err != nil {
		return reply, fmt.Errorf("requesting %s (%d attempts): %w", rm.Subject, attempts, err)
	}
	err = decodeReply(msg, rm.Subject, &reply)
	return reply, err
}

// Request sends the request rm until a service answers it with something other than a passing
// failure, or ctx ends, and returns the last reply (which may carry a service error: see
// ServiceErrorOf) and the number of attempts. Each attempt is bounded by attempt. A passing
// failure is tried again after a backoff from 50ms up to 1s: no responders (the service is not
// subscribed for a moment, as while its connection moves to another server), no reply within
// attempt, the connection being re-established, or a service error 503 that is not about the
// field "after" (a 503 on "after" says the service waited for that turn already). The error is
// the last attempt's when no reply came.
func Request(ctx context.Context, nc *nats.Conn, rm *nats.Msg, attempt time.Duration) (*nats.Msg, int, error) {
	wait := 50 * time.Millisecond
	for n := 1; ; n++ {
		actx, cancel := context.WithTimeout(ctx, attempt)
		msg, err := nc.RequestMsgWithContext(actx, rm)
		cancel()
		switch {
		case err == nil:
			if se := ServiceErrorOf(msg); se == nil || !se.passing() || ctx.Err() != nil {
				return msg, n, nil
			}
		case !transient(err) || ctx.Err() != nil:
			return nil, n, err
		}
		select {
		case <-ctx.Done():
			if err == nil {
				return msg, n, nil
			}
			return nil, n, err
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

// request sends rm once and decodes the reply into out.
func (c *Client) request(ctx context.Context, rm *nats.Msg, out any) error {
	ctx, cancel := c.bound(ctx)
	defer cancel()
	msg, err := c.nc.RequestMsgWithContext(ctx, rm)
	if err != nil {
		return fmt.Errorf("requesting %s: %w", rm.Subject, err)
	}
	return decodeReply(msg, rm.Subject, out)
}

// decodeReply decodes a service's reply to a request on subject into out: a service error as
// *ServiceError, a reply that is not JSON as an error saying so.
func decodeReply(msg *nats.Msg, subject string, out any) error {
	if se := ServiceErrorOf(msg); se != nil {
		return se
	}
	if err := json.Unmarshal(msg.Data, out); err != nil {
		return fmt.Errorf("decoding the reply on %s: %w", subject, err)
	}
	return nil
}

// Context returns the text to put into a prompt for query: the top memory entries that fit
// in tokens (the retriever's default of 2,000 when tokens is 0). It does not wait for turns
// just published: for read-your-writes call Retrieve with After and WaitMS, whose reply
// carries the same text in Context.
func (c *Client) Context(ctx context.Context, query, session, user string, tokens int) (string, error) {
	req := events.RetrieveRequest{Query: query, Session: session, User: user}
	if tokens > 0 {
		req.ContextTokens = &tokens
	}
	reply, err := c.Retrieve(ctx, req)
	if err != nil {
		return "", err
	}
	return reply.Context, nil
}

// Event is a memory event of the client's tenant: a pressure, summary or fact event.
type Event struct {
	Subject string
	Event   event.Event
}

// Watch calls fn with every pressure, summary and fact event of the tenant published from now
// on, until the returned stop function is called. fn runs on one goroutine, in arrival order;
// an event delivered twice (a worker that retried republishes it) is passed once. The
// subscriptions are active at the server when Watch returns. After stop returns fn is not called
// again (a call in progress finishes). Events are not replayed: what was published before Watch
// is in the streams, not here. Watch buffers 1,024 events; a fn slower than the events for
// longer than that loses some (the connection's error handler reports a slow consumer).
func (c *Client) Watch(fn func(Event)) (stop func() error, err error) {
	var subs []*nats.Subscription
	unsubscribe := func() error {
		var errs []error
		for _, s := range subs {
			errs = append(errs, s.Unsubscribe())
		}
		return errors.Join(errs...)
	}
	ch := make(chan *nats.Msg, 1024)
	for _, root := range []string{"memory.pressure.", "memory.summaries.", "memory.facts."} {
		s, err := c.nc.ChanSubscribe(root+c.opts.Tenant+".>", ch)
		if err != nil {
			_ = unsubscribe()
			return nil, fmt.Errorf("subscribing to %s: %w", root, err)
		}
		subs = append(subs, s)
	}
	if err := c.nc.Flush(); err != nil {
		_ = unsubscribe()
		return nil, fmt.Errorf("registering the subscriptions: %w", err)
	}
	done := make(chan struct{})
	go func() {
		seen := newRecent(1024)
		for {
			select {
			case <-done:
				return
			case m := <-ch:
				select {
				case <-done:
					return
				default:
				}
				ev, err := events.Decode(m)
				if err != nil || !seen.add(m.Subject+" "+ev.ID()) {
					continue
				}
				fn(Event{Subject: m.Subject, Event: ev})
			}
		}
	}()
	var once sync.Once
	return func() error {
		err := unsubscribe()
		once.Do(func() { close(done) })
		return err
	}, nil
}

// recent remembers the last n keys it was given.
type recent struct {
	keys map[string]struct{}
	ring []string
	next int
}

func newRecent(n int) *recent {
	return &recent{keys: make(map[string]struct{}, n), ring: make([]string, n)}
}

// add reports whether key is new, remembering it.
func (r *recent) add(key string) bool {
	if _, ok := r.keys[key]; ok {
		return false
	}
	if old := r.ring[r.next]; old != "" {
		delete(r.keys, old)
	}
	r.ring[r.next] = key
	r.keys[key] = struct{}{}
	r.next = (r.next + 1) % len(r.ring)
	return true
}

func (c *Client) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, c.opts.Timeout)
}
