package events

import (
	"context"
	"fmt"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
)

// Outgoing events.
//
// Every event of the contract is about a tenant and a key, the session (turns, session ends,
// pressure, summaries) or the user (facts), and travels on the subject of its type with the
// Nats-Msg-Id MsgID(tenant, key, id), so that a retried publish is stored once. NewMsg builds such
// a message from its parts, EventMsg and StructuredEventMsg from an event made elsewhere; none of
// agentmem's publishers sets the subject or the Nats-Msg-Id by hand.

// EventSubject returns the subject an event of type typ about (tenant, key) travels on:
// memory.turns.<tenant>.<session> for turns and session ends, memory.pressure.<tenant>.<session>,
// memory.summaries.<tenant>.<session> and memory.facts.<tenant>.<user>. It fails, wrapping
// ErrInvalid, for a type outside the contract or a token that is not valid.
func EventSubject(typ, tenant, key string) (string, error) {
	switch typ {
	case TypeTurn, TypeSessionEnded:
		return TurnSubject(tenant, key)
	case TypePressure:
		return PressureSubject(tenant, key)
	case TypeSummary:
		return SummarySubject(tenant, key)
	case TypeFact:
		return FactSubject(tenant, key)
	case TypeEndApplied:
		return EndedSubject(tenant, key)
	case TypeEdit:
		return EditSubject(tenant, key)
	}
	return "", fieldErrorValue("type", typ, fmt.Sprintf("no subject for this type: want %s, %s, %s, %s, %s, %s or %s",
		TypeTurn, TypeSessionEnded, TypePressure, TypeSummary, TypeFact, TypeEndApplied, TypeEdit))
}

// NewMsg returns the binary-mode message of a new event about (tenant, key), where key is the
// session, or the user of a fact: the event (NewEvent with id, typ, source, t and data) with key
// as its subject attribute and the trace context of ctx (SetTraceContext), on the subject of its
// type (EventSubject), with Nats-Msg-Id MsgID(tenant, key, id). It fails, wrapping ErrInvalid,
// when NewEvent, EventSubject or BinaryMsg does.
func NewMsg(ctx context.Context, tenant, key, id, typ, source string, t time.Time, data any) (*nats.Msg, error) {
	subject, err := EventSubject(typ, tenant, key)
	if err != nil {
		return nil, err
	}
	ev, err := NewEvent(id, typ, source, t, data)
	if err != nil {
		return nil, err
	}
	ev.SetSubject(key)
	SetTraceContext(ctx, &ev)
	msg, err := BinaryMsg(subject, ev)
	if err != nil {
		return nil, err
	}
	msg.Header.Set(HeaderMsgID, MsgID(tenant, key, id))
	return msg, nil
}

// EventMsg encodes ev, an event about (tenant, key), in binary content mode (BinaryMsg) on the
// subject of its type (EventSubject), with Nats-Msg-Id MsgID(tenant, key, ev.ID()). It leaves
// the event's attributes as they are. It fails, wrapping ErrInvalid, when EventSubject or
// BinaryMsg does.
func EventMsg(tenant, key string, ev event.Event) (*nats.Msg, error) {
	return eventMsg(tenant, key, ev, BinaryMsg)
}

// StructuredEventMsg is EventMsg in structured content mode (StructuredMsg).
func StructuredEventMsg(tenant, key string, ev event.Event) (*nats.Msg, error) {
	return eventMsg(tenant, key, ev, StructuredMsg)
}

func eventMsg(tenant, key string, ev event.Event, encode func(string, event.Event) (*nats.Msg, error)) (*nats.Msg, error) {
	if ev.Context == nil {
		return nil, fmt.Errorf("encoding event: %w", invalidError("missing event context"))
	}
	subject, err := EventSubject(ev.Type(), tenant, key)
	if err != nil {
		return nil, fmt.Errorf("encoding event: %w", err)
	}
	msg, err := encode(subject, ev)
	if err != nil {
		return nil, err
	}
	msg.Header.Set(HeaderMsgID, MsgID(tenant, key, ev.ID()))
	return msg, nil
}
