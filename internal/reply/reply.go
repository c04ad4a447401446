// Package reply is how agentmem's NATS micro services answer. Check decides whether a request
// may be answered at all (only at an inbox of the requesting tenant). A handler that answers
// inside the micro handler (the forget endpoint) uses Error and AddEndpoint: micro's
// Request.Error sets the error headers, and the service's stats (nats micro stats) count every
// request, its processing time and its errors; several instances of the endpoint serve requests
// concurrently. A handler that hands its request to a goroutine (the retriever: a request that
// waits for its turn must not hold up the others, docs/operations.md) must not call the
// request's Respond or Error methods there, because the micro library reads the request's state
// once the handler returns: it answers with From, JSON and ErrorTo, which publish to the reply
// subject with the same headers and body.
package reply

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/agentmem/agentmem/pkg/events"
)

// Error answers req, inside its micro handler, with a service error: code and a description
// (field: message) in micro's Nats-Service-Error-Code and Nats-Service-Error headers, and the
// body {"error":{"code","field","message"}}. The service's stats count it as an error. It fails
// when the answer cannot be sent.
func Error(req micro.Request, code int, field, message string) error {
	desc, body := errorReply(code, field, message)
	return req.Error(strconv.Itoa(code), desc, body)
}

// AddEndpoint adds n instances (at least one) of the endpoint name on subject to svc, all in the
// service's queue group: each is a subscription of its own whose handler runs one request at a
// time, so up to n requests are served at once. The server hands each request to one instance
// at random, busy or not: a request handed to an instance that serves a slow one waits behind
// it. The stats list every instance under name. It fails when an instance cannot be added.
func AddEndpoint(svc micro.Service, name, subject string, n int, h micro.Handler) error {
	for i := range max(n, 1) {
		if err := svc.AddEndpoint(name, h, micro.WithEndpointSubject(subject)); err != nil {
			return fmt.Errorf("adding endpoint %s (instance %d of %d): %w", name, i+1, n, err)
		}
	}
	return nil
}

// Request is what a goroutine needs of a request: its subject, body and reply subject, copied in
// the handler.
type Request struct {
	Subject string
	Data    []byte
	Reply   string
	// Header holds the request's headers (its traceparent), nil when it had none.
	Header nats.Header
}

// From copies what a goroutine needs of req.
func From(req micro.Request) Request {
	return Request{Subject: req.Subject(), Data: req.Data(), Reply: req.Reply(), Header: nats.Header(req.Headers())}
}

// JSON answers at to, from outside the micro handler, with v as JSON.
func JSON(nc *nats.Conn, to string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding reply: %w", err)
	}
	return nc.Publish(to, data)
}

// ErrorTo answers at to, from outside the micro handler, with the service error Error would
// send. The service's stats do not see it.
func ErrorTo(nc *nats.Conn, to string, code int, field, message string) error {
	desc, body := errorReply(code, field, message)
	msg := nats.NewMsg(to)
	msg.Header.Set(micro.ErrorCodeHeader, strconv.Itoa(code))
	msg.Header.Set(micro.ErrorHeader, desc)
	msg.Data = body
	return nc.PublishMsg(msg)
}

// errorReply is the description and body of a service error.
func errorReply(code int, field, message string) (desc string, body []byte) {
	body, _ = json.Marshal(events.ErrorBody{Error: events.ErrorDetail{Code: code, Field: field, Message: message}})
	desc = message
	if field != "" {
		desc = field + ": " + message
	}
	return headerSafe(desc), body
}

// headerSafe keeps a description usable as a header value: no control characters, at most
// 1 KiB, never empty (micro refuses an empty description).
func headerSafe(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c < 0x20 || c == 0x7f {
			b[i] = ' '
		}
	}
	if len(b) > 1024 {
		b = b[:1024]
	}
	if len(b) == 0 {
		return "error"
	}
	return string(b)
}
