package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/deadletter"
	"github.com/agentmem/agentmem/pkg/events"
)

// fakeMsg is a delivered message that records how it was settled.
type fakeMsg struct {
	subject string
	meta    jetstream.MsgMetadata
	calls   []string
}

func (m *fakeMsg) Metadata() (*jetstream.MsgMetadata, error) { return &m.meta, nil }
func (m *fakeMsg) Data() []byte                              { return []byte("data") }
func (m *fakeMsg) Headers() nats.Header                      { return nats.Header{"ce-id": []string{"e1"}} }
func (m *fakeMsg) Subject() string                           { return m.subject }
func (m *fakeMsg) Reply() string                             { return "" }
func (m *fakeMsg) Ack() error                                { return m.record("ack") }
func (m *fakeMsg) DoubleAck(context.Context) error           { return m.record("double-ack") }
func (m *fakeMsg) Nak() error                                { return m.record("nak") }
func (m *fakeMsg) NakWithDelay(d time.Duration) error        { return m.record("nak " + d.String()) }
func (m *fakeMsg) InProgress() error                         { return m.record("in-progress") }
func (m *fakeMsg) Term() error                               { return m.record("term") }
func (m *fakeMsg) TermWithReason(r string) error             { return m.record("term: " + r) }

func (m *fakeMsg) record(call string) error {
	m.calls = append(m.calls, call)
	return nil
}

// fakeLetters records the dead letters written, or fails to write them.
type fakeLetters struct {
	written []deadletter.Record
	fail    bool
}

func (l *fakeLetters) Write(_ context.Context, r deadletter.Record) error {
	if l.fail {
		return errors.New("the dead-letter stream is unavailable")
	}
	l.written = append(l.written, r)
	return nil
}

// The settlement policy, message by message: what a handler's outcome does to the message and
// which dead letter it writes.
func TestSettle(t *testing.T) {
	backoff := func(n uint64) time.Duration { return time.Duration(n) * time.Second }
	type letter struct{ class, reason string }
	for _, tc := range []struct {
		name      string
		err       error
		delivered uint64
		failWrite bool
		want      string  // the settle call the message got
		letter    *letter // the dead letter written, if any
	}{
		{name: "nil acknowledges", want: "ack"},
		{name: "permanent dead-letters as rejected", err: Permanent(errors.New("names no session")),
			want: "term: worker: permanent failure: names no session", letter: &letter{deadletter.ClassRejected, "worker: permanent failure: names no session"}},
		{name: "classed keeps its class", err: Classed(deadletter.ClassMalformed, errors.New("no key")),
			want: "term: no key", letter: &letter{deadletter.ClassMalformed, "no key"}},
		{name: "bad input dead-letters as invalid", err: fmt.Errorf("%w: field content: empty", events.ErrInvalid),
			want: "term: " + events.ErrInvalid.Error() + ": field content: empty", letter: &letter{deadletter.ClassInvalid, events.ErrInvalid.Error() + ": field content: empty"}},
		{name: "recorded terminates without a dead letter", err: Recorded("refused by the handler"), want: "term: refused by the handler"},
		{name: "transient retries with backoff", err: errors.New("the LLM is down"), delivered: 2, want: "nak 2s"},
		{name: "a panic retries with backoff", err: &PanicError{Value: "boom"}, delivered: 3, want: "nak 3s"},
		{name: "the last delivery dead-letters", err: errors.New("the LLM is down"), delivered: 5,
			want:   "term: failed on all 5 deliveries; last error: the LLM is down",
			letter: &letter{deadletter.ClassExhausted, "failed on all 5 deliveries; last error: the LLM is down"}},
		{name: "a dead letter not written leaves the message for redelivery", err: Permanent(errors.New("bad")), delivered: 1,
			failWrite: true, want: "nak 1s"},
		{name: "an exhausted message whose dead letter is not written is retried", err: errors.New("down"), delivered: 5,
			failWrite: true, want: "nak 5s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dlq := &fakeLetters{fail: tc.failWrite}
			s := &settler{name: "test", dlq: dlq, log: zerolog.Nop(), backoff: backoff, maxDeliver: 5,
				place: func(m Subjected) (string, string) { return "acme", strings.TrimPrefix(m.Subject(), "work.") }}
			m := &fakeMsg{subject: "work.s1", meta: jetstream.MsgMetadata{Stream: "WORK", Consumer: "w", NumDelivered: max(tc.delivered, 1),
				Sequence: jetstream.SequencePair{Stream: 7, Consumer: 9}}}
			meta, _ := m.Metadata()
			s.settle(m, meta, tc.err)
			if len(m.calls) != 1 || m.calls[0] != tc.want {
				t.Fatalf("settled with %q, want [%s]", m.calls, tc.want)
			}
			switch {
			case tc.letter == nil && len(dlq.written) > 0:
				t.Fatalf("dead letter %+v written, want none", dlq.written[0])
			case tc.letter != nil:
				if len(dlq.written) != 1 {
					t.Fatalf("%d dead letters written, want 1", len(dlq.written))
				}
				r := dlq.written[0]
				if r.Class != tc.letter.class || r.Reason != tc.letter.reason {
					t.Fatalf("dead letter class %q reason %q, want %q %q", r.Class, r.Reason, tc.letter.class, tc.letter.reason)
				}
				if r.Tenant != "acme" || r.Session != "s1" || r.Stream != "WORK" || r.Seq != 7 || r.Consumer != "w" ||
					r.Delivered != meta.NumDelivered || r.Msg.Subject != "work.s1" || string(r.Msg.Data) != "data" {
					t.Fatalf("dead letter %+v: want the message's place, stream position and body", r)
				}
			}
		})
	}
}

// A consumer without a delivery limit (MaxDeliver -1) retries a transient failure forever.
func TestSettleWithoutADeliveryLimitRetries(t *testing.T) {
	dlq := &fakeLetters{}
	s := &settler{name: "test", dlq: dlq, log: zerolog.Nop(), backoff: Backoff, maxDeliver: -1}
	m := &fakeMsg{subject: "work.s1", meta: jetstream.MsgMetadata{NumDelivered: 1000}}
	meta, _ := m.Metadata()
	s.settle(m, meta, errors.New("down"))
	if len(m.calls) != 1 || m.calls[0] != "nak 5m0s" || len(dlq.written) != 0 {
		t.Fatalf("settled with %q and %d dead letters, want a nak after the longest backoff", m.calls, len(dlq.written))
	}
}

// A panic below Recover is a retried failure: the chain returns it as a *PanicError, which
// settle naks.
func TestPanicIsSettledAsARetry(t *testing.T) {
	h := Chain(func(context.Context, jetstream.Msg) error { panic("boom") }, Recover)
	m := &fakeMsg{subject: "work.s1", meta: jetstream.MsgMetadata{NumDelivered: 1}}
	err := h(context.Background(), m)
	var p *PanicError
	if !errors.As(err, &p) || p.Value != "boom" {
		t.Fatalf("handler returned %v, want the panic as a *PanicError", err)
	}
	s := &settler{name: "test", dlq: &fakeLetters{}, log: zerolog.Nop(), backoff: Backoff, maxDeliver: 5}
	meta, _ := m.Metadata()
	s.settle(m, meta, err)
	if len(m.calls) != 1 || m.calls[0] != "nak 1s" {
		t.Fatalf("settled with %q, want a nak", m.calls)
	}
}
