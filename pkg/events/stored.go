package events

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cloudevents/sdk-go/v2/event"
	gojson "github.com/goccy/go-json"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Reading events back from a stream.
//
// The turns stream is agentmem's archive: compression, extraction, retrieval, the inspector and
// the embedder's backfill read turns back from it by sequence. A turn's time is its event's time
// attribute, or the time JetStream stored it when the publisher set none (see the contract,
// "Time"); StoredTime and ReadStoredTurn apply that rule in one place.

// ErrNotTurn is returned by DecodeStoredTurn and ReadStoredTurn for a valid event of another
// type than agentmem.turn.v1 (a session end shares the turns subject). It does not wrap
// ErrInvalid: the message is not bad input, only not a turn.
var ErrNotTurn = errors.New("events: not a turn")

// StoredTurn is a turn read back from the turns stream.
type StoredTurn struct {
	// Event is the decoded CloudEvent, for its extensions (the trace context).
	Event event.Event
	// ID is the event's id, the turn's identity within its session.
	ID string
	// Turn is the event's data.
	Turn Turn
	// Time is when the turn happened (see StoredTime), in UTC.
	Time time.Time
	// Seq is the message's stream sequence; 0 when DecodeStoredTurn was not given one.
	Seq uint64
}

// StoredTime returns when the event happened: its time attribute, or stored (the time the stream
// stored the message) when it has none; in UTC.
func StoredTime(ev event.Event, stored time.Time) time.Time {
	at := ev.Time()
	if at.IsZero() {
		at = stored
	}
	return at.UTC()
}

// DecodeStoredTurn decodes a turn stored on the turns stream: the message's subject, headers and
// body, and the time the stream stored it. It does not validate the turn (ingest did, before
// applying it). Its error wraps ErrInvalid when the message is not a valid event or its data is
// not a turn, and ErrNotTurn when it is a valid event of another type.
func DecodeStoredTurn(subject string, h nats.Header, data []byte, stored time.Time) (StoredTurn, error) {
	ev, err := Decode(&nats.Msg{Subject: subject, Header: h, Data: data})
	if err != nil {
		return StoredTurn{}, err
	}
	if ev.Type() != TypeTurn {
		return StoredTurn{}, fmt.Errorf("%w: %s", ErrNotTurn, ev.Type())
	}
	turn, err := DecodeData[Turn](ev)
	if err != nil {
		return StoredTurn{}, err
	}
	return StoredTurn{Event: ev, ID: ev.ID(), Turn: turn, Time: StoredTime(ev, stored)}, nil
}

// ReadStoredTurn is DecodeStoredTurn for a message read from the stream with a direct get (as
// archive.Reader does); it also sets Seq. It fails like DecodeStoredTurn, and wraps ErrInvalid
// for a nil message.
func ReadStoredTurn(m *jetstream.RawStreamMsg) (StoredTurn, error) {
	if m == nil {
		return StoredTurn{}, fmt.Errorf("decoding event: %w", invalidError("no message"))
	}
	t, err := DecodeStoredTurn(m.Subject, m.Header, m.Data, m.Time)
	if err != nil {
		return StoredTurn{}, err
	}
	t.Seq = m.Sequence
	return t, nil
}

// ReadAppliedTurn is ReadStoredTurn for a reader that keeps only the turns ingest applied (the
// retriever's archive): a turn in the binary mode agentmem's publishers write (ce-* headers
// without percent-encoding, application/json data) is read from its id, type and time headers
// and its data, without building and checking a CloudEvent again, and Event is left zero. Any
// other message goes through ReadStoredTurn. A message ingest rejected may be read where
// ReadStoredTurn would fail (its id is not applied at its sequence, so the reader drops it);
// for an applied turn both return the same ID, Turn, Time and Seq.
func ReadAppliedTurn(m *jetstream.RawStreamMsg) (StoredTurn, error) {
	if t, ok := plainTurn(m); ok {
		return t, nil
	}
	return ReadStoredTurn(m)
}

// plainTurn reads a binary-mode turn whose headers need no decoding; false for anything else.
func plainTurn(m *jetstream.RawStreamMsg) (StoredTurn, bool) {
	if m == nil {
		return StoredTurn{}, false
	}
	one := func(key string) (string, bool) {
		vs := m.Header[key]
		if len(vs) != 1 || strings.IndexByte(vs[0], '%') >= 0 {
			return "", false
		}
		return vs[0], true
	}
	if v, ok := one(ceHeaderPrefix + "specversion"); !ok || v != ceSpecVersion {
		return StoredTurn{}, false
	}
	if v, ok := one(ceHeaderPrefix + "type"); !ok || v != TypeTurn {
		return StoredTurn{}, false
	}
	if v, ok := one(ceContentTypeKey); !ok || v != ContentTypeJSON {
		return StoredTurn{}, false
	}
	id, ok := one(ceHeaderPrefix + "id")
	if !ok || strings.TrimSpace(id) == "" {
		return StoredTurn{}, false
	}
	at := m.Time
	if _, present := m.Header[ceHeaderPrefix+"time"]; present {
		v, ok := one(ceHeaderPrefix + "time")
		if !ok {
			return StoredTurn{}, false
		}
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return StoredTurn{}, false
		}
		at = t
	}
	turn, ok := fastTurn(m.Data)
	if !ok {
		return StoredTurn{}, false
	}
	// A copy of the id: a header value shares the memory of the message's whole header block.
	return StoredTurn{ID: strings.Clone(id), Turn: turn, Time: at.UTC(), Seq: m.Sequence}, true
}

// fastTurn decodes a turn's JSON data with goccy/go-json, five times faster than encoding/json
// on a turn (a third of what the embedding stage spent per turn, and of a cold archive view's
// reading). Only valid UTF-8 is taken (encoding/json replaces invalid bytes, and every reader
// must see the text ingest kept); anything it does not decode falls back to encoding/json
// through the CloudEvent (ReadStoredTurn). FuzzFastTurnAgrees holds it to encoding/json's result.
func fastTurn(data []byte) (Turn, bool) {
	var turn Turn
	if !fastJSON(data, &turn) {
		return Turn{}, false
	}
	return turn, true
}

// fastJSON decodes data into v with goccy/go-json when data is valid UTF-8, and reports whether
// it did; the caller falls back to encoding/json (and its errors) when it did not. Only the types
// FuzzFastTurnAgrees compares with encoding/json are decoded with it.
func fastJSON(data []byte, v any) bool {
	return utf8.Valid(data) && gojson.Unmarshal(data, v) == nil
}

// DecodeTurn decodes a turn event's data as DecodeData[Turn] does, faster (fastTurn) when the
// data is JSON that goccy/go-json reads.
func DecodeTurn(ev event.Event) (Turn, error) {
	if mt, err := mediaTypeOf(ev.DataContentType()); err == nil && (mt == "" || isJSONMediaType(mt)) {
		if t, ok := fastTurn(ev.Data()); ok {
			return t, nil
		}
	}
	return DecodeData[Turn](ev)
}

// NamedTenant returns the tenant an event names itself, in a "tenant" CloudEvents extension or a
// "tenant" string field of its data; ingest and the HTTP gateway refuse an event naming another
// tenant than its subject's.
func NamedTenant(ext map[string]any, data []byte) (string, bool) {
	if v, ok := ext["tenant"]; ok {
		return fmt.Sprint(v), true
	}
	var d tenantField
	if !fastJSON(data, &d) && json.Unmarshal(data, &d) != nil {
		return "", false
	}
	if d.Tenant == nil {
		return "", false
	}
	return *d.Tenant, true
}

// tenantField is the "tenant" field an event's data may carry.
type tenantField struct {
	Tenant *string `json:"tenant"`
}

// DecodeRaw decodes the event of a message read from a stream with a direct get. It fails like
// Decode.
func DecodeRaw(m *jetstream.RawStreamMsg) (event.Event, error) {
	if m == nil {
		return Decode(nil)
	}
	return Decode(&nats.Msg{Subject: m.Subject, Header: m.Header, Data: m.Data})
}
