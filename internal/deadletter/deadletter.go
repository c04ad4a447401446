// Package deadletter writes dead-letter records: a message that was bad input or exhausted its
// deliveries is copied, with the reason a person can act on, to memory.dlq.<tenant>.<session>
// (memory.dlq._ when the subject could not be parsed), where the dead-letter stream keeps it.
// Reader reads them back: one event id's record, or a tenant's newest records.
package deadletter

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/internal/metrics"
	"github.com/agentmem/agentmem/pkg/events"
)

// DefaultMaxBody is how much of the original body a record keeps (64 KiB); BodySize keeps the full size.
const DefaultMaxBody = 64 << 10

// Writer publishes dead-letter records into the dead-letter stream.
type Writer struct {
	js        jetstream.JetStream
	maxBody   int
	metrics   *metrics.Metrics
	component string
}

// NewWriter returns a Writer that keeps at most maxBody bytes of each body (DefaultMaxBody when <= 0).
func NewWriter(js jetstream.JetStream, maxBody int) *Writer {
	if maxBody <= 0 {
		maxBody = DefaultMaxBody
	}
	return &Writer{js: js, maxBody: maxBody}
}

// Instrument returns a copy of w that counts the records it stores (not the duplicates the
// stream drops) in m, under component and each record's Class.
func (w *Writer) Instrument(m *metrics.Metrics, component string) *Writer {
	c := *w
	c.metrics, c.component = m, component
	return &c
}

// Record is what Write needs to know about a message.
type Record struct {
	// Msg is the original message (subject, headers, body).
	Msg *nats.Msg
	// Subject is the subject the publisher used, when it differs from Msg.Subject (partitioned turns).
	Subject string
	// Tenant and Session place the record; empty or invalid ones send it to memory.dlq._.
	Tenant, Session string
	// Stream, Seq, Consumer and Delivered say where the message came from.
	Stream    string
	Seq       uint64
	Consumer  string
	Delivered uint64
	// Reason says what is wrong, for a person to act on.
	Reason string
	// Class is the reason's class, one of the Class constants, for the metrics.
	Class string
	// Key, when set and the message has no stream sequence, deduplicates the record instead
	// (several processes refusing the same message write one record).
	Key string
}

// Reason classes: the short, bounded label a dead letter is counted under in the metrics (its
// Reason is free text).
const (
	ClassMalformed      = "malformed"       // not a CloudEvent, or a subject naming no session
	ClassInvalid        = "invalid"         // a CloudEvent whose data breaks the contract
	ClassTenantMismatch = "tenant_mismatch" // the payload names another tenant than the subject
	ClassMsgID          = "msg_id_mismatch" // Nats-Msg-Id does not match the subject and ce-id
	ClassTooLarge       = "too_large"       // content over the byte limit
	ClassRateLimited    = "rate_limited"    // over the tenant's turn rate
	ClassOwner          = "owner_mismatch"  // another user's session, or no user on a first turn
	ClassUnknownType    = "unknown_type"    // an event type the consumer does not handle
	ClassInternal       = "internal"        // a panic while applying the message
	ClassRejected       = "rejected"        // a worker's handler refused the message for good
	ClassExhausted      = "exhausted"       // JetStream stopped redelivering (max deliveries)
)

// Write stores the record and waits for the stream's acknowledgement. Records are deduplicated
// by the original stream and sequence, so writing the same one twice stores it once.
func (w *Writer) Write(ctx context.Context, r Record) error {
	dl := events.NewDeadLetter(r.Msg, w.maxBody, r.Reason)
	if r.Subject != "" && r.Subject != r.Msg.Subject {
		dl.StoredSubject = r.Msg.Subject
		dl.Subject = r.Subject
	}
	if r.Stream != "" {
		dl.Stream = r.Stream
	}
	if r.Seq != 0 {
		dl.StreamSeq = r.Seq
	}
	if r.Consumer != "" {
		dl.Consumer = r.Consumer
	}
	if r.Delivered != 0 {
		dl.Delivered = r.Delivered
	}
	body, err := json.Marshal(dl)
	if err != nil {
		return fmt.Errorf("encoding dead letter: %w", err)
	}
	msg := nats.NewMsg(events.DeadLetterSubject(r.Tenant, r.Session))
	msg.Data = body
	msg.Header.Set("Content-Type", events.ContentTypeJSON)
	msg.Header.Set("Agentmem-Reason", headerValue(r.Reason, 512))
	if r.Class != "" {
		msg.Header.Set(HeaderClass, headerValue(r.Class, 64))
	}
	if dl.Stream != "" && dl.StreamSeq != 0 {
		msg.Header.Set(events.HeaderMsgID, "dlq."+dl.Stream+"."+strconv.FormatUint(dl.StreamSeq, 10))
	} else if r.Key != "" {
		msg.Header.Set(events.HeaderMsgID, "dlq.key."+r.Key)
	}
	ack, err := w.js.PublishMsg(ctx, msg)
	if err != nil {
		return fmt.Errorf("writing dead letter to %s: %w", msg.Subject, err)
	}
	if !ack.Duplicate {
		w.metrics.DeadLetter(w.component, r.Class)
	}
	return nil
}

// headerValue keeps a reason usable as a header: printable ASCII only, at most n bytes.
func headerValue(s string, n int) string {
	b := make([]byte, 0, min(len(s), n))
	for i := 0; i < len(s) && len(b) < n; i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e {
			c = '?'
		}
		b = append(b, c)
	}
	return string(b)
}
