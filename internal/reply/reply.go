// Package reply answers NATS service requests from outside the micro handler that received
// them: a handler that hands its request to a goroutine (so that one slow request does not hold
// up the others) must not call the request's Respond or Error methods there, because the micro
// library reads the request's state once the handler returns. It replies to the request's reply
// subject instead, with the same headers the library would set.
package reply

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/agentmem/agentmem/pkg/events"
)

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

// JSON replies with v as JSON.
func JSON(nc *nats.Conn, to string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding reply: %w", err)
	}
	return nc.Publish(to, data)
}

// Error replies with a service error: the Nats-Service-Error-Code and Nats-Service-Error headers
// and the body {"error":{"code","field","message"}}.
func Error(nc *nats.Conn, to string, code int, field, message string) error {
	body, _ := json.Marshal(events.ErrorBody{Error: events.ErrorDetail{Code: code, Field: field, Message: message}})
	desc := message
	if field != "" {
		desc = field + ": " + message
	}
	msg := nats.NewMsg(to)
	msg.Header.Set(micro.ErrorCodeHeader, strconv.Itoa(code))
	msg.Header.Set(micro.ErrorHeader, headerSafe(desc))
	msg.Data = body
	return nc.PublishMsg(msg)
}

// headerSafe keeps a description usable as a header value.
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
	return string(b)
}
