package events

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// DeadLetter is the body of a message on memory.dlq.<tenant>.<session> (or
// memory.dlq._): a message a worker gave up on, with enough to act on it.
type DeadLetter struct {
	// Subject is the original subject as published: the unpartitioned form
	// when the stored subject was a partitioned turns subject.
	Subject string `json:"subject"`
	// StoredSubject is the subject the stream stored, when it differs.
	StoredSubject string `json:"stored_subject,omitempty"`
	// Headers are the original headers.
	Headers map[string][]string `json:"headers"`
	// Body is the original body (base64 in JSON), cut to fit the payload
	// limit; BodySize is its full size and Truncated says whether it was cut.
	Body      []byte `json:"body"`
	BodySize  int    `json:"body_size"`
	Truncated bool   `json:"truncated"`
	// Stream, StreamSeq, Consumer and Delivered say where the message came
	// from, when it was a JetStream message.
	Stream    string `json:"stream,omitempty"`
	StreamSeq uint64 `json:"stream_seq,omitempty"`
	Consumer  string `json:"consumer,omitempty"`
	Delivered uint64 `json:"delivered"`
	// Reason says what is wrong, for a person to act on.
	Reason string `json:"reason"`
	// Time is when the message was dead-lettered (UTC).
	Time time.Time `json:"time"`
}

// NewDeadLetter records msg with the reason: subject, headers and body (cut
// to maxBody bytes; a negative maxBody counts as 0), the body's full size and
// the time (now, UTC). Stream, consumer, stream sequence and delivery count
// come from msg.Metadata() when msg is a bound JetStream message and are left
// empty otherwise. A nil msg gives a record with only the reason and time.
func NewDeadLetter(msg *nats.Msg, maxBody int, reason string) DeadLetter {
	if msg == nil {
		return DeadLetter{Headers: map[string][]string{}, Reason: reason, Time: time.Now().UTC()}
	}
	d := newDeadLetter(msg.Subject, msg.Header, msg.Data, maxBody, reason)
	if meta, err := msg.Metadata(); err == nil {
		d.Stream, d.StreamSeq, d.Consumer, d.Delivered = meta.Stream, meta.Sequence.Stream, meta.Consumer, meta.NumDelivered
	}
	return d
}

// NewJetStreamDeadLetter is NewDeadLetter for a message of the jetstream
// package's consumers. A nil msg gives a record with only the reason and
// time.
func NewJetStreamDeadLetter(msg jetstream.Msg, maxBody int, reason string) DeadLetter {
	if msg == nil {
		return DeadLetter{Headers: map[string][]string{}, Reason: reason, Time: time.Now().UTC()}
	}
	d := newDeadLetter(msg.Subject(), msg.Headers(), msg.Data(), maxBody, reason)
	if meta, err := msg.Metadata(); err == nil {
		d.Stream, d.StreamSeq, d.Consumer, d.Delivered = meta.Stream, meta.Sequence.Stream, meta.Consumer, meta.NumDelivered
	}
	return d
}

func newDeadLetter(subject string, h nats.Header, body []byte, maxBody int, reason string) DeadLetter {
	d := DeadLetter{
		Subject:  subject,
		Headers:  make(map[string][]string, len(h)),
		BodySize: len(body),
		Reason:   reason,
		Time:     time.Now().UTC(),
	}
	if addr, err := ParseTurnSubject(subject); err == nil && addr.Partition >= 0 {
		d.Subject, d.StoredSubject = addr.Subject(), subject
	}
	for k, vs := range h {
		d.Headers[k] = slices.Clone(vs)
	}
	maxBody = max(maxBody, 0)
	if len(body) > maxBody {
		body, d.Truncated = body[:maxBody], true
	}
	d.Body = slices.Clone(body)
	if d.Body == nil {
		d.Body = []byte{}
	}
	return d
}

// MarshalWithin encodes d as JSON in at most maxPayload bytes, cutting the
// body further (and marking it truncated) when the whole record would not
// fit. It fails when the record does not fit even with an empty body.
func (d DeadLetter) MarshalWithin(maxPayload int) ([]byte, error) {
	for range 4 {
		b, err := json.Marshal(d)
		if err != nil {
			return nil, fmt.Errorf("encoding dead letter: %w", err)
		}
		if len(b) <= maxPayload {
			return b, nil
		}
		if len(d.Body) == 0 {
			return nil, fmt.Errorf("encoding dead letter: %d bytes without the body, limit %d", len(b), maxPayload)
		}
		// Base64 makes 4 bytes of every 3; flipping truncated to true adds 1.
		over := len(b) - maxPayload + 1
		cut := (over + 3) / 4 * 3
		d.Body = d.Body[:max(len(d.Body)-cut, 0)]
		d.Truncated = true
	}
	return nil, fmt.Errorf("encoding dead letter: does not fit in %d bytes", maxPayload)
}
