package events

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"mime"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/cloudevents/sdk-go/v2/types"
	gojson "github.com/goccy/go-json"
	"github.com/nats-io/nats.go"
)

// The five CloudEvent types of the v1 contract.
const (
	// TypeTurn is a conversation turn, published by an agent on
	// memory.turns.<tenant>.<session>; its data is a Turn.
	TypeTurn = "agentmem.turn.v1"
	// TypeSessionEnded ends a session, on the same subject as its turns; its
	// data is a SessionEnded.
	TypeSessionEnded = "agentmem.session.ended.v1"
	// TypePressure asks for a compression, published by ingest on
	// memory.pressure.<tenant>.<session>; its data is a Pressure.
	TypePressure = "agentmem.pressure.v1"
	// TypeSummary carries a compression result, published by the compressor
	// on memory.summaries.<tenant>.<session>; its data is a Summary.
	TypeSummary = "agentmem.summary.v1"
	// TypeFact carries a change to a long-term fact, published by the
	// extractor on memory.facts.<tenant>.<user>; its data is a FactEvent.
	TypeFact = "agentmem.fact.v1"
)

// TypeEndApplied announces that ingest applied a session end, on memory.ended.<tenant>.<session>
// in the turns stream; its data is an EndApplied. It is not part of the v1 contract: ingest
// publishes it for the extractors, so that they read the session ends without reading every turn.
const TypeEndApplied = "agentmem.session.end_applied.v1"

// Content types and headers of CloudEvents over NATS.
const (
	// ContentTypeJSON is the content-type of a binary-mode event with a JSON
	// body, and the datacontenttype NewEvent sets.
	ContentTypeJSON = "application/json"
	// ContentTypeStructured is the content-type of a structured-mode event,
	// whose body is the whole JSON envelope.
	ContentTypeStructured = "application/cloudevents+json"
	// HeaderMsgID is the JetStream de-duplication header; publishers of
	// turns set it to MsgID(tenant, session, id).
	HeaderMsgID = "Nats-Msg-Id"
)

const (
	ceHeaderPrefix    = "ce-"
	ceContentTypeKey  = "content-type"
	ceSpecVersion     = event.CloudEventsVersionV1
	ceMediaTypeFamily = "application/cloudevents"
)

// NewEvent returns a CloudEvents 1.0 event with the given id, type, source and
// time (no time attribute when t is zero; otherwise t in UTC), and data
// JSON-encoded with datacontenttype application/json. A nil data gives an
// event without data. It fails, wrapping ErrInvalid, when data cannot be
// encoded as JSON or an attribute is empty or not valid text.
func NewEvent(id, typ, source string, t time.Time, data any) (event.Event, error) {
	ev := event.New(ceSpecVersion)
	ev.SetID(id)
	ev.SetType(typ)
	ev.SetSource(source)
	if !t.IsZero() {
		ev.SetTime(t.UTC())
	}
	if data != nil {
		b, err := marshalJSON(data)
		if err != nil {
			return event.Event{}, fmt.Errorf("new %s event: %w", typ, &FieldError{Field: "data", Message: err.Error()})
		}
		ev.SetDataContentType(ContentTypeJSON)
		ev.DataEncoded = b
	}
	if err := checkEvent(ev, ""); err != nil {
		return event.Event{}, fmt.Errorf("new %s event: %w", typ, err)
	}
	return ev, nil
}

// marshalJSON encodes v as compact JSON without HTML escaping.
func marshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// BinaryMsg encodes ev in binary content mode: every attribute as a
// ce-<name> header (specversion, id, source, type, time in RFC 3339 UTC,
// subject, dataschema and the extensions), datacontenttype as the
// content-type header and the data as the body. Header values are
// percent-encoded where the CloudEvents bindings require it: bytes outside
// U+0021..U+007E, space, '"' and '%'. It does not set Nats-Msg-Id.
//
// It fails, wrapping ErrInvalid, when the subject is empty or ev is not a
// valid CloudEvents 1.0 event that Decode would accept.
func BinaryMsg(subject string, ev event.Event) (*nats.Msg, error) {
	if err := checkPublishSubject(subject); err != nil {
		return nil, fmt.Errorf("encoding event: %w", err)
	}
	if err := checkEvent(ev, ""); err != nil {
		return nil, fmt.Errorf("encoding event: %w", err)
	}
	ec := ev.Context.AsV1()
	h := nats.Header{}
	set := func(name, value string) { h[ceHeaderPrefix+name] = []string{percentEncode(value)} }
	set("specversion", ceSpecVersion)
	set("id", ec.ID)
	set("source", ec.Source.String())
	set("type", ec.Type)
	if ec.Time != nil && !ec.Time.IsZero() {
		set("time", types.FormatTime(ec.Time.Time))
	}
	if ec.Subject != nil {
		set("subject", *ec.Subject)
	}
	if ec.DataSchema != nil {
		set("dataschema", ec.DataSchema.String())
	}
	for name, v := range ec.Extensions {
		s, err := types.Format(v)
		if err != nil {
			return nil, fmt.Errorf("encoding event: %w", &FieldError{Field: name, Message: err.Error()})
		}
		set(name, s)
	}
	if ec.DataContentType != nil {
		ct := *ec.DataContentType
		mt, err := mediaTypeOf(ct)
		switch {
		case err != nil:
			return nil, fmt.Errorf("encoding event: %w", &FieldError{Field: "datacontenttype", Message: err.Error()})
		case strings.HasPrefix(mt, ceMediaTypeFamily):
			return nil, fmt.Errorf("encoding event: %w", fieldErrorValue("datacontenttype", ct,
				"a CloudEvents format cannot be the data's content type in binary mode"))
		case !isHeaderText(ct):
			return nil, fmt.Errorf("encoding event: %w", fieldErrorValue("datacontenttype", ct,
				"must be printable ASCII"))
		}
		if data := ev.Data(); len(data) > 0 && isJSONMediaType(mt) && !ev.DataBase64 && !isJSON(data) {
			return nil, fmt.Errorf("encoding event: %w", &FieldError{Field: "data", Message: "not JSON but datacontenttype is " + quoteValue(mt)})
		}
		h[ceContentTypeKey] = []string{ct}
	}
	return &nats.Msg{Subject: subject, Header: h, Data: bytes.Clone(ev.Data())}, nil
}

// StructuredMsg encodes ev in structured content mode: content-type
// application/cloudevents+json and the JSON envelope as the body, attributes
// in a fixed order and extensions sorted by name. It fails, wrapping
// ErrInvalid, when the subject is empty or ev is not a valid CloudEvents 1.0
// event that Decode would accept.
func StructuredMsg(subject string, ev event.Event) (*nats.Msg, error) {
	if err := checkPublishSubject(subject); err != nil {
		return nil, fmt.Errorf("encoding event: %w", err)
	}
	if err := checkEvent(ev, ""); err != nil {
		return nil, fmt.Errorf("encoding event: %w", err)
	}
	body, err := encodeStructured(ev)
	if err != nil {
		return nil, fmt.Errorf("encoding event: %w", err)
	}
	h := nats.Header{ceContentTypeKey: []string{ContentTypeStructured}}
	return &nats.Msg{Subject: subject, Header: h, Data: body}, nil
}

// encodeStructured writes the JSON envelope of a checked event.
func encodeStructured(ev event.Event) ([]byte, error) {
	ec := ev.Context.AsV1()
	var buf bytes.Buffer
	buf.WriteByte('{')
	first := true
	field := func(name string, raw []byte) {
		if !first {
			buf.WriteByte(',')
		}
		first = false
		k, _ := marshalJSON(name)
		buf.Write(k)
		buf.WriteByte(':')
		buf.Write(raw)
	}
	str := func(name, v string) {
		b, _ := marshalJSON(v) // a string always encodes
		field(name, b)
	}
	str("specversion", ceSpecVersion)
	str("id", ec.ID)
	str("source", ec.Source.String())
	str("type", ec.Type)
	if ec.Subject != nil {
		str("subject", *ec.Subject)
	}
	if ec.Time != nil && !ec.Time.IsZero() {
		str("time", types.FormatTime(ec.Time.Time))
	}
	if ec.DataContentType != nil {
		str("datacontenttype", *ec.DataContentType)
	}
	if ec.DataSchema != nil {
		str("dataschema", ec.DataSchema.String())
	}
	names := make([]string, 0, len(ec.Extensions))
	for name := range ec.Extensions {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		switch v := ec.Extensions[name].(type) {
		case bool, int32, string:
			b, _ := marshalJSON(v)
			field(name, b)
		default:
			s, err := types.Format(v)
			if err != nil {
				return nil, &FieldError{Field: name, Message: err.Error()}
			}
			str(name, s)
		}
	}
	if data := ev.Data(); data != nil {
		mt, _ := mediaTypeOf(ev.DataContentType())
		jsonish := mt == "" || isJSONMediaType(mt)
		switch {
		case !ev.DataBase64 && jsonish && utf8.Valid(data) && json.Valid(data):
			field("data", data)
		case !ev.DataBase64 && mt != "" && jsonish:
			return nil, &FieldError{Field: "data", Message: "not JSON but datacontenttype is " + quoteValue(mt)}
		case !ev.DataBase64 && !jsonish && utf8.Valid(data):
			str("data", string(data))
		default:
			str("data_base64", base64.StdEncoding.EncodeToString(data))
		}
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// checkPublishSubject rejects subjects NATS cannot publish to.
func checkPublishSubject(subject string) error {
	if subject == "" || strings.ContainsAny(subject, " \t\r\n") {
		return fieldErrorValue("subject", subject, "must be a NATS subject without whitespace")
	}
	return nil
}

// Decode decodes a CloudEvent from a NATS message in either content mode:
// structured when the content-type is application/cloudevents+json (with or
// without parameters), binary otherwise, which needs a ce-specversion header.
// Binary header values are percent-decoded; a JSON content-type needs a JSON
// body (an empty body is an event without data). The event is validated
// (specversion 1.0, non-empty id, source and type, RFC 3339 time, valid text).
//
// Every error wraps ErrInvalid and says which attribute or header is wrong,
// e.g. "missing ce-id", "ce-time: not RFC 3339: …" or "body is not JSON: …".
// Decode never panics.
func Decode(msg *nats.Msg) (event.Event, error) {
	if msg == nil {
		return event.Event{}, fmt.Errorf("decoding event: %w", invalidError("no message"))
	}
	if ev, ok := fastBinary(msg.Header, msg.Data); ok {
		return ev, nil
	}
	ct, hasCT, err := headerValue(msg.Header, ceContentTypeKey)
	if err != nil {
		return event.Event{}, fmt.Errorf("decoding event: %w", err)
	}
	var mt string
	if hasCT {
		if mt, err = mediaTypeOf(ct); err != nil {
			return event.Event{}, fmt.Errorf("decoding event: %w", fieldErrorValue("content-type", ct, err.Error()))
		}
	}
	var ev event.Event
	switch {
	case mt == ContentTypeStructured:
		ev, err = decodeStructured(msg.Data)
	case strings.HasPrefix(mt, ceMediaTypeFamily):
		err = fieldErrorValue("content-type", ct, "unsupported CloudEvents format (want "+ContentTypeStructured+" or binary mode)")
	default:
		ev, err = decodeBinary(msg.Header, ct, hasCT, mt, msg.Data)
	}
	if err != nil {
		return event.Event{}, fmt.Errorf("decoding event: %w", err)
	}
	return ev, nil
}

// MaybeType reports, from a stored message's headers alone, whether it may be an event of type
// typ: a binary-mode event names its type in its ce-type header, a structured-mode event
// (content-type application/cloudevents+json) only in its body, so it may be of any type. Header
// names are matched without regard to case, as Decode matches them: a consumer that skips the
// other types of a shared stream with it never skips what Decode would read as typ.
func MaybeType(h nats.Header, typ string) bool {
	// The usual case, agentmem's own binary mode, both headers spelled in lower case: answered
	// without looking through the others.
	ct, hasCT := h[ceContentTypeKey]
	ty, hasType := h[ceHeaderPrefix+"type"]
	if hasCT && hasType && len(ct) == 1 && len(ty) == 1 {
		return structuredType(ct[0]) || ty[0] == typ
	}
	for k, vs := range h {
		if len(vs) == 0 {
			continue
		}
		switch {
		case strings.EqualFold(k, ceContentTypeKey):
			if structuredType(vs[0]) {
				return true
			}
		case strings.EqualFold(k, ceHeaderPrefix+"type"):
			if vs[0] == typ {
				return true
			}
		}
	}
	return false
}

// structuredType reports whether a content-type header value names structured mode.
func structuredType(ct string) bool {
	return strings.HasPrefix(strings.ToLower(strings.TrimSpace(ct)), ContentTypeStructured)
}

// headerValue returns the value of the header key, matched without regard
// to case. Repeated headers must agree.
func headerValue(h nats.Header, key string) (string, bool, error) {
	var (
		value string
		found bool
	)
	for k, vs := range h {
		if !strings.EqualFold(k, key) {
			continue
		}
		for _, v := range vs {
			if found && v != value {
				return "", false, &FieldError{Field: key, Message: "repeated with different values"}
			}
			value, found = v, true
		}
	}
	return value, found, nil
}

// decodeBinary builds an event from ce-* headers, the content-type and the
// body.
func decodeBinary(h nats.Header, ct string, hasCT bool, mt string, body []byte) (event.Event, error) {
	attrs := map[string]string{}
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		lk := strings.ToLower(k)
		name, ok := strings.CutPrefix(lk, ceHeaderPrefix)
		if !ok {
			continue
		}
		for _, raw := range h[k] {
			v, err := percentDecode(raw)
			if err != nil {
				return event.Event{}, &FieldError{Field: lk, Message: err.Error()}
			}
			if err := checkText(v); err != nil {
				return event.Event{}, &FieldError{Field: lk, Message: err.Error()}
			}
			if prev, seen := attrs[name]; seen && prev != v {
				return event.Event{}, &FieldError{Field: lk, Message: "repeated with different values"}
			}
			// A copy: a header value shares the memory of the message's whole header block, which
			// a kept id (a retriever's archive, ingest's session cache) would otherwise keep alive.
			attrs[name] = strings.Clone(v)
		}
	}
	sv, ok := attrs["specversion"]
	if !ok {
		return event.Event{}, invalidError("missing ce-specversion")
	}
	if sv != ceSpecVersion {
		return event.Event{}, fieldErrorValue("ce-specversion", sv, "unsupported, want "+ceSpecVersion)
	}
	ev := event.New(ceSpecVersion)
	if err := setAttributes(&ev, attrs, ceHeaderPrefix); err != nil {
		return event.Event{}, err
	}
	if hasCT {
		if !isHeaderText(ct) {
			return event.Event{}, fieldErrorValue("content-type", ct, "must be printable ASCII")
		}
		ev.SetDataContentType(ct)
	}
	if len(body) > 0 {
		jsonBody := isJSONMediaType(mt)
		if jsonBody {
			if err := checkUTF8("data", body); err != nil {
				return event.Event{}, err
			}
			if err := validJSON(body); err != nil {
				return event.Event{}, invalidError("body is not JSON: " + err.Error())
			}
		}
		ev.DataEncoded = bytes.Clone(body)
		ev.DataBase64 = !(jsonBody || (!hasCT && json.Valid(body)))
	}
	if err := checkEvent(ev, ceHeaderPrefix); err != nil {
		return event.Event{}, err
	}
	return ev, nil
}

// setAttributes sets the context attributes and extensions named in attrs
// (specversion excluded) on ev. prefix is "ce-" in binary mode and "" in
// structured mode; it names the attribute in errors.
func setAttributes(ev *event.Event, attrs map[string]string, prefix string) error {
	for _, name := range []string{"id", "source", "type"} {
		v, ok := attrs[name]
		if !ok {
			return invalidError("missing " + prefix + name)
		}
		if strings.TrimSpace(v) == "" {
			return &FieldError{Field: prefix + name, Message: "must not be empty"}
		}
	}
	ev.SetID(attrs["id"])
	ev.SetType(attrs["type"])
	if _, err := url.Parse(attrs["source"]); err != nil {
		return fieldErrorValue(prefix+"source", attrs["source"], "not a URI reference")
	}
	ev.SetSource(attrs["source"])
	names := make([]string, 0, len(attrs))
	for name := range attrs {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		v := attrs[name]
		switch name {
		case "specversion", "id", "source", "type":
		case "time":
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return &FieldError{Field: prefix + name, Message: "not RFC 3339: " + quoteValue(v)}
			}
			ev.SetTime(t)
		case "subject":
			if strings.TrimSpace(v) == "" {
				return &FieldError{Field: prefix + name, Message: "must not be empty"}
			}
			ev.SetSubject(v)
		case "dataschema":
			u, err := url.Parse(v)
			if err != nil || !u.IsAbs() {
				return fieldErrorValue(prefix+name, v, "not an absolute URI")
			}
			ev.SetDataSchema(v)
		case "datacontenttype":
			if prefix != "" {
				return &FieldError{Field: prefix + name, Message: "not allowed in binary mode, use the content-type header"}
			}
			if _, err := mediaTypeOf(v); err != nil {
				return fieldErrorValue(name, v, err.Error())
			}
			ev.SetDataContentType(v)
		default:
			if !isExtensionName(name) {
				return &FieldError{Field: prefix + name, Message: "not a valid extension name, want [a-z0-9]+"}
			}
			ev.SetExtension(name, v)
		}
	}
	return nil
}

// decodeStructured builds an event from a JSON envelope, read with goccy/go-json where it can
// (fastUnmarshal): a batch of structured events over HTTP spent most of its decoding in
// encoding/json.
func decodeStructured(body []byte) (event.Event, error) {
	return decodeStructuredWith(body, fastUnmarshal)
}

// decodeStructuredWith is decodeStructured reading JSON with unmarshal (json.Unmarshal's
// contract); FuzzStructuredAgrees holds fastUnmarshal's events and errors to encoding/json's.
func decodeStructuredWith(body []byte, unmarshal func([]byte, any) error) (event.Event, error) {
	var env map[string]json.RawMessage
	if err := unmarshal(body, &env); err != nil {
		return event.Event{}, invalidError("body is not a JSON object: " + err.Error())
	}
	if at := InvalidUTF8(body); at >= 0 {
		return event.Event{}, envelopeNotUTF8(env, body, at)
	}
	attrs := map[string]string{}
	var data, dataBase64 json.RawMessage
	exts := map[string]any{}
	// An envelope with several bad members gets the error of the first in the order of names,
	// the same every time (a map's order is not).
	var bad *FieldError
	fail := func(e *FieldError) {
		if bad == nil || e.Field < bad.Field {
			bad = e
		}
	}
	for key, raw := range env {
		if bytes.Equal(raw, []byte("null")) {
			continue // an attribute set to null is absent
		}
		switch key {
		case "data":
			data = raw
		case "data_base64":
			dataBase64 = raw
		case "specversion", "id", "source", "type", "subject", "time", "datacontenttype", "dataschema":
			var s string
			if err := unmarshal(raw, &s); err != nil {
				fail(&FieldError{Field: key, Message: "must be a string"})
				continue
			}
			if err := checkText(s); err != nil {
				fail(&FieldError{Field: key, Message: err.Error()})
				continue
			}
			attrs[key] = s
		default:
			if !isExtensionName(key) {
				fail(&FieldError{Field: key, Message: "not a valid extension name, want [a-z0-9]+"})
				continue
			}
			v, err := extensionValue(raw)
			if err != nil {
				fail(&FieldError{Field: key, Message: err.Error()})
				continue
			}
			exts[key] = v
		}
	}
	if bad != nil {
		return event.Event{}, bad
	}
	sv, ok := attrs["specversion"]
	if !ok {
		return event.Event{}, invalidError("missing specversion")
	}
	if sv != ceSpecVersion {
		return event.Event{}, fieldErrorValue("specversion", sv, "unsupported, want "+ceSpecVersion)
	}
	ev := event.New(ceSpecVersion)
	if err := setAttributes(&ev, attrs, ""); err != nil {
		return event.Event{}, err
	}
	for name, v := range exts {
		ev.SetExtension(name, v)
	}
	mt, _ := mediaTypeOf(ev.DataContentType())
	switch {
	case data != nil && dataBase64 != nil:
		return event.Event{}, invalidError("both data and data_base64 are set")
	case dataBase64 != nil:
		var s string
		if err := unmarshal(dataBase64, &s); err != nil {
			return event.Event{}, &FieldError{Field: "data_base64", Message: "must be a string"}
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return event.Event{}, &FieldError{Field: "data_base64", Message: "not base64: " + err.Error()}
		}
		ev.DataEncoded, ev.DataBase64 = b, true
	case data != nil && (mt == "" || isJSONMediaType(mt)):
		ev.DataEncoded = bytes.Clone(data)
	case data != nil:
		var s string
		if err := unmarshal(data, &s); err != nil {
			return event.Event{}, &FieldError{Field: "data", Message: "must be a string for datacontenttype " + quoteValue(mt)}
		}
		ev.DataEncoded = []byte(s)
	}
	if err := checkEvent(ev, ""); err != nil {
		return event.Event{}, err
	}
	return ev, nil
}

// extensionValue converts a JSON extension value to a CloudEvents one:
// string, boolean or integer.
func extensionValue(raw json.RawMessage) (any, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	switch v := v.(type) {
	case string:
		if err := checkText(v); err != nil {
			return nil, err
		}
		return v, nil
	case bool:
		return v, nil
	case json.Number:
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil || f != math.Trunc(f) || f > math.MaxInt32 || f < math.MinInt32 {
			return nil, errors.New("must be a 32-bit integer")
		}
		return int32(f), nil
	default:
		return nil, errors.New("must be a string, boolean or integer")
	}
}

// checkEvent checks what the CloudEvents SDK validates (specversion, id,
// source, type, media type, absolute dataschema) and that every text
// attribute is valid UTF-8 without control characters. prefix names
// attributes in errors ("ce-" for headers).
func checkEvent(ev event.Event, prefix string) error {
	if ev.Context == nil {
		return invalidError("missing event context")
	}
	if sv := ev.SpecVersion(); sv != ceSpecVersion {
		return fieldErrorValue(prefix+"specversion", sv, "unsupported, want "+ceSpecVersion)
	}
	if err := ev.Validate(); err != nil {
		var verr event.ValidationError
		if !errors.As(err, &verr) || len(verr) == 0 {
			return invalidError(err.Error())
		}
		keys := make([]string, 0, len(verr))
		for k := range verr {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		k := keys[0]
		msg := verr[k].Error()
		switch k {
		case "id", "source", "type":
			msg = "must not be empty"
		}
		return &FieldError{Field: prefix + strings.TrimPrefix(k, "extension:"), Message: msg}
	}
	ec := ev.Context.AsV1()
	text := map[string]string{"id": ec.ID, "source": ec.Source.String(), "type": ec.Type}
	if ec.Subject != nil {
		text["subject"] = *ec.Subject
	}
	if ec.DataContentType != nil {
		text["datacontenttype"] = *ec.DataContentType
	}
	for name, v := range ec.Extensions {
		if !isExtensionName(name) {
			return &FieldError{Field: prefix + name, Message: "not a valid extension name, want [a-z0-9]+"}
		}
		if s, ok := v.(string); ok {
			text[name] = s
		}
	}
	// The names are sorted only to say which of several bad attributes comes first.
	for _, v := range text {
		if checkText(v) == nil {
			continue
		}
		for _, name := range slices.Sorted(maps.Keys(text)) {
			if err := checkText(text[name]); err != nil {
				return &FieldError{Field: prefix + name, Message: err.Error()}
			}
		}
	}
	return nil
}

// checkText rejects strings CloudEvents does not allow as attribute values:
// invalid UTF-8 and control characters.
func checkText(s string) error {
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			return fmt.Errorf("not valid UTF-8 at byte %d", i)
		case r < 0x20 || (0x7f <= r && r <= 0x9f):
			return fmt.Errorf("control character %U at byte %d", r, i)
		}
	}
	return nil
}

// isExtensionName reports whether name is a valid CloudEvents extension
// attribute name: lower-case ASCII letters and digits, not a core attribute.
func isExtensionName(name string) bool {
	if name == "" || !isLowerAlnum(name) {
		return false
	}
	switch name {
	case "specversion", "id", "source", "type", "subject", "time", "datacontenttype", "dataschema", "data":
		return false
	}
	return true
}

// mediaTypeOf returns the lower-case media type of a content type.
func mediaTypeOf(ct string) (string, error) {
	switch ct {
	case "":
		return "", nil
	case ContentTypeJSON: // what agentmem's own publishers send: no parameters to parse
		return ct, nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return "", fmt.Errorf("not a media type: %v", err)
	}
	if typ, sub, ok := strings.Cut(mt, "/"); !ok || typ == "" || sub == "" {
		return "", errors.New("not a media type: want type/subtype")
	}
	return mt, nil
}

// isJSONMediaType reports whether a media type (from mediaTypeOf) is JSON:
// application/json, text/json or a +json suffix.
func isJSONMediaType(mt string) bool {
	return mt == "application/json" || mt == "text/json" || strings.HasSuffix(mt, "+json")
}

// isHeaderText reports whether s is printable ASCII (space and tab allowed),
// safe as a raw NATS header value.
func isHeaderText(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\t') || c > 0x7e {
			return false
		}
	}
	return true
}

// percentEncode encodes the bytes of s that the CloudEvents HTTP and NATS
// bindings require to be encoded: those outside U+0021..U+007E, space, '"'
// and '%', as %XX with upper-case hex.
func percentEncode(s string) string {
	const hex = "0123456789ABCDEF"
	n := 0
	for i := 0; i < len(s); i++ {
		if needsPercent(s[i]) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 2*n)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if needsPercent(c) {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0x0f])
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}

func needsPercent(c byte) bool {
	return c <= 0x20 || c >= 0x7f || c == '"' || c == '%'
}

// percentDecode decodes %XX sequences (either case of hex) and checks that
// the result is UTF-8. A '%' not followed by two hex digits is an error.
func percentDecode(s string) (string, error) {
	if !strings.Contains(s, "%") {
		if !utf8.ValidString(s) {
			return "", errors.New("not valid UTF-8")
		}
		return s, nil
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '%' {
			b = append(b, c)
			continue
		}
		if i+2 >= len(s) {
			return "", fmt.Errorf("bad percent-encoding at byte %d", i)
		}
		hi, ok1 := unhex(s[i+1])
		lo, ok2 := unhex(s[i+2])
		if !ok1 || !ok2 {
			return "", fmt.Errorf("bad percent-encoding at byte %d", i)
		}
		b = append(b, hi<<4|lo)
		i += 2
	}
	if !utf8.Valid(b) {
		return "", errors.New("not valid UTF-8 after percent-decoding")
	}
	return string(b), nil
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// DecodeData decodes the JSON data of ev into a T. Unknown fields are
// allowed. It fails, wrapping ErrInvalid, when the event has no data, its
// datacontenttype is not JSON, or the data does not fit T; the *FieldError
// names the offending field when it can (e.g. "tokens"), else "data".
func DecodeData[T any](ev event.Event) (T, error) {
	var v T
	data := ev.Data()
	if len(data) == 0 {
		return v, &FieldError{Field: "data", Message: "missing"}
	}
	mt, err := mediaTypeOf(ev.DataContentType())
	if err != nil {
		return v, fieldErrorValue("datacontenttype", ev.DataContentType(), err.Error())
	}
	if mt != "" && !isJSONMediaType(mt) {
		return v, fieldErrorValue("datacontenttype", ev.DataContentType(), "not JSON")
	}
	if err := checkUTF8("data", data); err != nil {
		return v, err
	}
	if err := json.Unmarshal(data, &v); err != nil {
		var zero T
		return zero, jsonError(err, "data")
	}
	return v, nil
}

// jsonError turns an encoding/json error into a *FieldError naming the
// field when the error says which one, else def.
func jsonError(err error, def string) *FieldError {
	var (
		syn *json.SyntaxError
		typ *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &syn):
		return &FieldError{Field: def, Message: "not JSON: " + err.Error()}
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			field = def
		}
		return &FieldError{Field: field, Message: fmt.Sprintf("must be %s, got %s", jsonKind(typ.Type.Kind().String(), typ.Type.String()), typ.Value)}
	default:
		return &FieldError{Field: def, Message: err.Error()}
	}
}

// jsonKind names the JSON kind a Go kind is decoded from.
func jsonKind(kind, typeName string) string {
	switch kind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "an integer"
	case "float32", "float64":
		return "a number"
	case "slice", "array":
		return "an array"
	case "map", "struct":
		if typeName == "time.Time" {
			return "an RFC 3339 time string"
		}
		return "an object"
	}
	return typeName
}

// isJSON reports whether body is one JSON value, scanned without copying: by goccy/go-json when
// it is valid UTF-8 (ten times faster than encoding/json for a turn; only its "valid" is taken,
// FuzzValidJSONAgrees), else by encoding/json.
func isJSON(body []byte) bool {
	return (utf8.Valid(body) && gojson.Valid(body)) || json.Valid(body)
}

// fastUnmarshal decodes data into v, a pointer, as json.Unmarshal does: with goccy/go-json
// (faster: BenchmarkDecodeStructuredTurn) when data is valid JSON in UTF-8 by gojson.Valid, which
// FuzzValidJSONAgrees holds to encoding/json's verdict; otherwise, or when goccy fails, with
// encoding/json, whose error callers word. v is zeroed first then: goccy may have filled part.
func fastUnmarshal(data []byte, v any) error {
	if p, ok := v.(*string); ok && isPlainString(data) {
		*p = string(data[1 : len(data)-1])
		return nil
	}
	if utf8.Valid(data) && gojson.Valid(data) {
		if gojson.Unmarshal(data, v) == nil {
			return nil
		}
		reflect.ValueOf(v).Elem().SetZero()
	}
	return json.Unmarshal(data, v)
}

// isPlainString reports whether data is a JSON string without escapes, of printable ASCII or
// valid UTF-8: what a string attribute of an envelope usually is, and reads as its own bytes.
func isPlainString(data []byte) bool {
	n := len(data)
	if n < 2 || data[0] != '"' || data[n-1] != '"' {
		return false
	}
	ascii := true
	for _, c := range data[1 : n-1] {
		switch {
		case c == '"' || c == '\\' || c < 0x20:
			return false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return ascii || utf8.Valid(data)
}

// envelopeNotUTF8 names the first member of a structured envelope (in the order of names) whose
// value is not valid UTF-8, with the offset in that value, or else the body, with the offset of
// the first bad byte at in it (a member's name is not valid UTF-8).
func envelopeNotUTF8(env map[string]json.RawMessage, body []byte, at int) *FieldError {
	names := make([]string, 0, len(env))
	for name := range env {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if i := InvalidUTF8(env[name]); i >= 0 {
			return notUTF8(name, i)
		}
	}
	return notUTF8("body", at)
}

// validJSON reports why body is not one JSON value, or nil (isJSON); only a body that fails is
// decoded again for the reason.
func validJSON(body []byte) error {
	if isJSON(body) {
		return nil
	}
	if err := json.Unmarshal(body, new(json.RawMessage)); err != nil {
		return err
	}
	return errors.New("invalid JSON")
}
