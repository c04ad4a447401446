package client

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentmem/agentmem/pkg/events"
)

// ServiceError is an error reply of an agentmem service (the retriever on
// memory.retrieve.<tenant>, the forget endpoint on memory.forget.<tenant>).
type ServiceError struct {
	// Code is the Nats-Service-Error-Code: 400, 404, 429, 500 or 503 (0 when the service sent a
	// code that is not a number).
	Code int
	// Field names the offending request field, when the error body names one.
	Field string
	// Message says what is wrong: the error body's message, else the Nats-Service-Error header.
	Message string
}

func (e *ServiceError) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("agentmem: %d %s: %s", e.Code, e.Field, e.Message)
	}
	return fmt.Sprintf("agentmem: %d %s", e.Code, e.Message)
}

// passing reports whether the error may pass when the request is sent again: a 503 (the service
// is not ready) that is not about the field "after" (the service waited for that turn already).
func (e *ServiceError) passing() bool { return e.Code == 503 && e.Field != "after" }

// ServiceErrorOf decodes the error a service reply carries: the NATS micro error headers
// (Nats-Service-Error-Code, Nats-Service-Error) and, when the body is agentmem's error body
// ({"error":{"code","field","message"}}), its field and message. It returns nil when msg is not an
// error reply.
func ServiceErrorOf(msg *nats.Msg) *ServiceError {
	code := msg.Header.Get(micro.ErrorCodeHeader)
	if code == "" {
		return nil
	}
	se := &ServiceError{Message: msg.Header.Get(micro.ErrorHeader)}
	se.Code, _ = strconv.Atoi(code)
	var eb events.ErrorBody
	if json.Unmarshal(msg.Data, &eb) == nil && eb.Error.Message != "" {
		se.Field, se.Message = eb.Error.Field, eb.Error.Message
	}
	return se
}

// Forget removes everything agentmem holds of user (short-term state, archived turns, facts and
// their history, summaries, vectors, usage) through memory.forget.<tenant>, and returns how many
// items of each kind it removed. It takes seconds: give ctx a deadline of a minute or more (the
// client's Timeout applies when ctx has none). Service errors come back as *ServiceError (400
// for an invalid user, 500 when the removal failed part way: call it again).
func (c *Client) Forget(ctx context.Context, user string) (events.ForgetReply, error) {
	return c.forget(ctx, events.ForgetRequest{User: user})
}

// ForgetFact deletes one fact of user (fact event op "deleted"; it stays in the fact's history).
// Service errors come back as *ServiceError: 404 when the user has no such fact.
func (c *Client) ForgetFact(ctx context.Context, user, factID string) (events.ForgetReply, error) {
	return c.forget(ctx, events.ForgetRequest{User: user, FactID: factID})
}

// Correct supersedes one fact of user by a new fact with content, and returns the reply whose
// Fact is the correcting fact (the corrected one stays in history, superseded). Service errors
// come back as *ServiceError: 404 when the user has no such fact, 400 for empty content.
func (c *Client) Correct(ctx context.Context, user, factID, content string) (events.ForgetReply, error) {
	if content == "" {
		return events.ForgetReply{}, fmt.Errorf("%w: content: a correction needs the corrected fact", events.ErrInvalid)
	}
	return c.forget(ctx, events.ForgetRequest{User: user, FactID: factID, Content: content})
}

func (c *Client) forget(ctx context.Context, req events.ForgetRequest) (_ events.ForgetReply, err error) {
	var reply events.ForgetReply
	if err := req.Validate(); err != nil {
		return reply, err
	}
	subject, err := events.ForgetSubject(c.opts.Tenant)
	if err != nil {
		return reply, err
	}
	body, err := json.Marshal(req)
	if err != nil {
		return reply, fmt.Errorf("encoding request: %w", err)
	}
	ctx, cancel := c.bound(ctx)
	defer cancel()
	ctx, span := c.tracer.Start(ctx, "memory.forget", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("agentmem.tenant", c.opts.Tenant), attribute.String("agentmem.user", req.User)))
	defer func() { endSpan(span, err) }()
	rm := nats.NewMsg(subject)
	rm.Data = body
	events.InjectHeader(ctx, rm.Header)
	err = c.request(ctx, rm, &reply)
	if reply.Forgotten == nil {
		reply.Forgotten = map[string]int{}
	}
	return reply, err
}
