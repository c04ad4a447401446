package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/textproto"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/cloudevents/sdk-go/v2/event"
	gojson "github.com/goccy/go-json"
	"github.com/nats-io/nats.go"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

var fixedTime = time.Date(2026, 11, 30, 10, 0, 0, 123456789, time.UTC)

// fixture is one event of every type, with fixed ids and times.
type fixture struct {
	name    string
	subject string
	ev      event.Event
}

func mustEvent(t testing.TB, id, typ, source string, at time.Time, data any) event.Event {
	t.Helper()
	ev, err := NewEvent(id, typ, source, at, data)
	if err != nil {
		t.Fatalf("NewEvent(%s): %v", typ, err)
	}
	return ev
}

func fixtures(t testing.TB) []fixture {
	t.Helper()
	turn := mustEvent(t, "turn-0001", TypeTurn, "agent/测试 ü", fixedTime, Turn{
		Role: RoleUser, Content: "我喜欢用 Go 写代码 — \"quotes\" & <tags>", User: "u1",
		Metadata: map[string]any{"lang": "zh", "n": 1},
	})
	turn.SetSubject("greeting with spaces ü 测试")
	turn.SetExtension("agentnote", `ünïcode "q" 100%`)
	validTo := fixedTime.Add(48 * time.Hour)
	return []fixture{
		{"turn", "memory.turns.acme.s1", turn},
		{"session_ended", "memory.turns.acme.s1", mustEvent(t, "end-0001", TypeSessionEnded, "agent/demo", fixedTime, SessionEnded{User: "u1"})},
		{"pressure", "memory.pressure.acme.s1", mustEvent(t, "pressure-s1-1", TypePressure, "agentmem/ingest", fixedTime, Pressure{
			Session: "s1", User: "u1", Tokens: 160, Budget: 200, Ratio: 0.8,
			EntryIDs: []string{"sum-0", "turn-0001", "turn-0002"}, FirstSeq: 11, LastSeq: 42,
			Number: 2, SummaryID: "sum-1", SummaryTokens: 40, Provenance: []string{"turn-0000", "turn-0001", "turn-0002"},
		})},
		{"summary", "memory.summaries.acme.s1", mustEvent(t, "sum-1", TypeSummary, "agentmem/compressor", fixedTime, Summary{
			Session: "s1", User: "u1", SummaryID: "sum-1", Content: "The user likes Go. 用户喜欢 Go。",
			Replaces: []string{"sum-0", "turn-0001"}, Provenance: []string{"turn-0000", "turn-0001"},
			Timestamp: fixedTime, Summarizer: "extractive", Usage: Usage{Calls: 2, InputTokens: 300, OutputTokens: 50},
		})},
		{"fact", "memory.facts.acme.u1", mustEvent(t, "fact-evt-1", TypeFact, "agentmem/extractor", fixedTime, FactEvent{
			Op: FactSuperseded, Fact: Fact{
				ID: "fact-abc", Content: "User prefers Go", Category: "preference", Key: "language",
				ValidFrom: fixedTime, ValidTo: &validTo, SupersededBy: "fact-def",
				Provenance: []string{"turn-0001"}, Confidence: 0.9,
			},
		})},
	}
}

// sameEvent fails the test unless got carries the same attributes and data
// as want. Extensions are compared as strings (binary mode carries them so).
func sameEvent(t *testing.T, want, got event.Event) {
	t.Helper()
	checks := []struct{ name, want, got string }{
		{"specversion", want.SpecVersion(), got.SpecVersion()},
		{"id", want.ID(), got.ID()},
		{"source", want.Source(), got.Source()},
		{"type", want.Type(), got.Type()},
		{"subject", want.Subject(), got.Subject()},
		{"dataschema", want.DataSchema(), got.DataSchema()},
		{"datacontenttype", want.DataContentType(), got.DataContentType()},
		{"data", comparableData(want), comparableData(got)},
		{"extensions", fmt.Sprint(want.Extensions()), fmt.Sprint(got.Extensions())},
	}
	for _, c := range checks {
		if c.want != c.got {
			t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
		}
	}
	if !want.Time().Equal(got.Time()) {
		t.Errorf("time = %v, want %v", got.Time(), want.Time())
	}
}

// comparableData returns the event's data for comparison: JSON data
// compacted, since a structured envelope does not keep the whitespace around
// a JSON value, other data as is.
func comparableData(ev event.Event) string {
	mt, _ := mediaTypeOf(ev.DataContentType())
	if (mt == "" || isJSONMediaType(mt)) && json.Valid(ev.Data()) {
		var b bytes.Buffer
		_ = json.Compact(&b, ev.Data())
		return b.String()
	}
	return string(ev.Data())
}

func TestRoundTrip(t *testing.T) {
	encoders := []struct {
		mode   string
		encode func(string, event.Event) (*nats.Msg, error)
	}{
		{"binary", BinaryMsg},
		{"structured", StructuredMsg},
	}
	for _, fx := range fixtures(t) {
		for _, enc := range encoders {
			t.Run(fx.name+"/"+enc.mode, func(t *testing.T) {
				msg, err := enc.encode(fx.subject, fx.ev)
				if err != nil {
					t.Fatalf("encode: %v", err)
				}
				if msg.Subject != fx.subject {
					t.Errorf("subject = %q", msg.Subject)
				}
				assertASCIIHeaders(t, msg.Header)
				got, err := Decode(msg)
				if err != nil {
					t.Fatalf("Decode: %v", err)
				}
				sameEvent(t, fx.ev, got)
				if err := got.Validate(); err != nil {
					t.Errorf("decoded event does not validate: %v", err)
				}
			})
		}
	}
}

// assertASCIIHeaders checks that ce-* values are printable ASCII without
// space, '"' or a raw '%' sequence that is not an escape.
func assertASCIIHeaders(t *testing.T, h nats.Header) {
	t.Helper()
	for k, vs := range h {
		for _, v := range vs {
			for i := 0; i < len(v); i++ {
				c := v[i]
				if c > 0x7e || c < 0x20 {
					t.Errorf("header %s = %q has non-ASCII byte %#x", k, v, c)
				}
				if strings.HasPrefix(k, "ce-") && (c == ' ' || c == '"') {
					t.Errorf("header %s = %q has an unencoded %q", k, v, c)
				}
			}
		}
	}
}

func TestNonASCIIAttributesOnTheWire(t *testing.T) {
	fx := fixtures(t)[0]
	msg, err := BinaryMsg(fx.subject, fx.ev)
	if err != nil {
		t.Fatal(err)
	}
	wantHeaders := map[string]string{
		"ce-subject":   "greeting%20with%20spaces%20%C3%BC%20%E6%B5%8B%E8%AF%95",
		"ce-agentnote": "%C3%BCn%C3%AFcode%20%22q%22%20100%25",
		// The SDK keeps source as a URI reference, already escaped; the
		// binding escapes its '%' again.
		"ce-source": "agent/%25E6%25B5%258B%25E8%25AF%2595%2520%25C3%25BC",
	}
	for k, want := range wantHeaders {
		if got := msg.Header.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	got, err := Decode(msg)
	if err != nil {
		t.Fatal(err)
	}
	if got.Subject() != "greeting with spaces ü 测试" {
		t.Errorf("subject = %q", got.Subject())
	}
	if p := got.Context.AsV1().Source.Path; p != "agent/测试 ü" {
		t.Errorf("source path = %q", p)
	}
	if v := got.Extensions()["agentnote"]; v != `ünïcode "q" 100%` {
		t.Errorf("agentnote = %q", v)
	}
}

func TestDecodeLenientForms(t *testing.T) {
	body := []byte(`{"role":"user","content":"hi"}`)
	tests := []struct {
		name string
		msg  *nats.Msg
	}{
		{"mixed-case header names", &nats.Msg{Header: nats.Header{
			"Ce-Specversion": {"1.0"}, "CE-ID": {"a"}, "Ce-Source": {"x"}, "ce-type": {TypeTurn}, "Content-Type": {"application/json"},
		}, Data: body}},
		{"lower-case percent hex", &nats.Msg{Header: nats.Header{
			"ce-specversion": {"1.0"}, "ce-id": {"a"}, "ce-source": {"x"}, "ce-type": {TypeTurn}, "ce-subject": {"%c3%bc"},
		}, Data: body}},
		{"raw UTF-8 header value", &nats.Msg{Header: nats.Header{
			"ce-specversion": {"1.0"}, "ce-id": {"a"}, "ce-source": {"x"}, "ce-type": {TypeTurn}, "ce-subject": {"ü"},
		}, Data: body}},
		{"identical repeated header", &nats.Msg{Header: nats.Header{
			"ce-specversion": {"1.0", "1.0"}, "ce-id": {"a"}, "Ce-Id": {"a"}, "ce-source": {"x"}, "ce-type": {TypeTurn},
		}, Data: body}},
		{"json content-type with charset", &nats.Msg{Header: nats.Header{
			"ce-specversion": {"1.0"}, "ce-id": {"a"}, "ce-source": {"x"}, "ce-type": {TypeTurn}, "content-type": {"application/json; charset=utf-8"},
		}, Data: body}},
		{"empty body is no data", &nats.Msg{Header: nats.Header{
			"ce-specversion": {"1.0"}, "ce-id": {"a"}, "ce-source": {"x"}, "ce-type": {TypeSessionEnded}, "content-type": {"application/json"},
		}}},
		{"no content-type, opaque body", &nats.Msg{Header: nats.Header{
			"ce-specversion": {"1.0"}, "ce-id": {"a"}, "ce-source": {"x"}, "ce-type": {"t"},
		}, Data: []byte{0xff, 0x00}}},
		{"time with offset", &nats.Msg{Header: nats.Header{
			"ce-specversion": {"1.0"}, "ce-id": {"a"}, "ce-source": {"x"}, "ce-type": {"t"}, "ce-time": {"2026-11-30T11:00:00+01:00"},
		}}},
		{"structured with parameters", &nats.Msg{Header: nats.Header{"Content-Type": {"application/cloudevents+json; charset=UTF-8"}},
			Data: []byte(`{"specversion":"1.0","id":"a","source":"x","type":"t","data":{"k":[1,2]},"n":3,"b":true,"s":"v","z":null}`)}},
		{"structured text data", &nats.Msg{Header: nats.Header{"content-type": {"application/cloudevents+json"}},
			Data: []byte(`{"specversion":"1.0","id":"a","source":"x","type":"t","datacontenttype":"text/plain","data":"hello"}`)}},
		{"structured base64 data", &nats.Msg{Header: nats.Header{"content-type": {"application/cloudevents+json"}},
			Data: []byte(`{"specversion":"1.0","id":"a","source":"x","type":"t","datacontenttype":"application/octet-stream","data_base64":"AAEC"}`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := Decode(tt.msg)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if err := ev.Validate(); err != nil {
				t.Fatalf("decoded event does not validate: %v", err)
			}
			// Whatever was accepted re-encodes and decodes to the same event.
			for _, enc := range []func(string, event.Event) (*nats.Msg, error){BinaryMsg, StructuredMsg} {
				msg, err := enc("memory.turns.a.b", ev)
				if err != nil {
					t.Fatalf("re-encode: %v", err)
				}
				back, err := Decode(msg)
				if err != nil {
					t.Fatalf("re-decode: %v", err)
				}
				sameEvent(t, ev, back)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	valid := func(extra ...string) nats.Header {
		h := nats.Header{"ce-specversion": {"1.0"}, "ce-id": {"a"}, "ce-source": {"x"}, "ce-type": {TypeTurn}, "content-type": {"application/json"}}
		for i := 0; i+1 < len(extra); i += 2 {
			if extra[i+1] == "-" {
				delete(h, extra[i])
				continue
			}
			h[extra[i]] = []string{extra[i+1]}
		}
		return h
	}
	body := []byte(`{"role":"user","content":"hi"}`)
	structured := nats.Header{"content-type": {ContentTypeStructured}}
	tests := []struct {
		name   string
		msg    *nats.Msg
		errHas string
	}{
		{"nil message", nil, "no message"},
		{"nothing", &nats.Msg{}, "missing ce-specversion"},
		{"missing id", &nats.Msg{Header: valid("ce-id", "-"), Data: body}, "missing ce-id"},
		{"missing source", &nats.Msg{Header: valid("ce-source", "-"), Data: body}, "missing ce-source"},
		{"missing type", &nats.Msg{Header: valid("ce-type", "-"), Data: body}, "missing ce-type"},
		{"blank id", &nats.Msg{Header: valid("ce-id", "%20"), Data: body}, "ce-id: must not be empty"},
		{"old specversion", &nats.Msg{Header: valid("ce-specversion", "0.3"), Data: body}, `ce-specversion "0.3"`},
		{"bad time", &nats.Msg{Header: valid("ce-time", "yesterday"), Data: body}, `ce-time: not RFC 3339: "yesterday"`},
		{"date only", &nats.Msg{Header: valid("ce-time", "2026-11-30"), Data: body}, "ce-time: not RFC 3339"},
		{"body not JSON", &nats.Msg{Header: valid(), Data: []byte("{nope")}, "body is not JSON: "},
		{"bad percent", &nats.Msg{Header: valid("ce-subject", "100%"), Data: body}, "ce-subject: bad percent-encoding"},
		{"bad percent hex", &nats.Msg{Header: valid("ce-subject", "%zz"), Data: body}, "ce-subject: bad percent-encoding"},
		{"invalid UTF-8", &nats.Msg{Header: valid("ce-subject", "%FF"), Data: body}, "ce-subject: not valid UTF-8"},
		{"raw invalid UTF-8", &nats.Msg{Header: valid("ce-subject", "\xff"), Data: body}, "ce-subject: not valid UTF-8"},
		{"control character", &nats.Msg{Header: valid("ce-id", "a%0Ab"), Data: body}, "ce-id: control character"},
		{"datacontenttype header", &nats.Msg{Header: valid("ce-datacontenttype", "application/json"), Data: body}, "ce-datacontenttype: not allowed in binary mode"},
		{"bad extension name", &nats.Msg{Header: valid("ce-foo-bar", "x"), Data: body}, "ce-foo-bar: not a valid extension name"},
		{"relative dataschema", &nats.Msg{Header: valid("ce-dataschema", "schema.json"), Data: body}, `ce-dataschema "schema.json": not an absolute URI`},
		{"conflicting headers", &nats.Msg{Header: nats.Header{"ce-specversion": {"1.0"}, "ce-id": {"a", "b"}, "ce-source": {"x"}, "ce-type": {"t"}}}, "ce-id: repeated"},
		{"conflicting content-type", &nats.Msg{Header: nats.Header{"content-type": {"application/json"}, "Content-Type": {"text/plain"}}}, "content-type: repeated"},
		{"bad content-type", &nats.Msg{Header: valid("content-type", ";;"), Data: body}, `content-type ";;": not a media type`},
		{"content-type without subtype", &nats.Msg{Header: valid("content-type", "application+json"), Data: body}, `content-type "application+json": not a media type`},
		{"batch mode", &nats.Msg{Header: nats.Header{"content-type": {"application/cloudevents-batch+json"}}, Data: []byte("[]")}, "unsupported CloudEvents format"},
		{"structured not JSON", &nats.Msg{Header: structured, Data: []byte("{")}, "body is not a JSON object"},
		{"structured array", &nats.Msg{Header: structured, Data: []byte("[1]")}, "body is not a JSON object"},
		{"structured no specversion", &nats.Msg{Header: structured, Data: []byte(`{"id":"a","source":"x","type":"t"}`)}, "missing specversion"},
		{"structured missing id", &nats.Msg{Header: structured, Data: []byte(`{"specversion":"1.0","source":"x","type":"t"}`)}, "missing id"},
		{"structured id number", &nats.Msg{Header: structured, Data: []byte(`{"specversion":"1.0","id":1,"source":"x","type":"t"}`)}, "id: must be a string"},
		{"structured bad time", &nats.Msg{Header: structured, Data: []byte(`{"specversion":"1.0","id":"a","source":"x","type":"t","time":"noon"}`)}, "time: not RFC 3339"},
		{"structured both data", &nats.Msg{Header: structured, Data: []byte(`{"specversion":"1.0","id":"a","source":"x","type":"t","data":1,"data_base64":"AA=="}`)}, "both data and data_base64"},
		{"structured bad base64", &nats.Msg{Header: structured, Data: []byte(`{"specversion":"1.0","id":"a","source":"x","type":"t","data_base64":"!!"}`)}, "data_base64: not base64"},
		{"structured base64 number", &nats.Msg{Header: structured, Data: []byte(`{"specversion":"1.0","id":"a","source":"x","type":"t","data_base64":1}`)}, "data_base64: must be a string"},
		{"structured text data not string", &nats.Msg{Header: structured, Data: []byte(`{"specversion":"1.0","id":"a","source":"x","type":"t","datacontenttype":"text/plain","data":{}}`)}, "data: must be a string"},
		{"structured object extension", &nats.Msg{Header: structured, Data: []byte(`{"specversion":"1.0","id":"a","source":"x","type":"t","ext":{}}`)}, "ext: must be a string, boolean or integer"},
		{"structured fractional extension", &nats.Msg{Header: structured, Data: []byte(`{"specversion":"1.0","id":"a","source":"x","type":"t","ext":1.5}`)}, "ext: must be a 32-bit integer"},
		{"structured upper-case extension", &nats.Msg{Header: structured, Data: []byte(`{"specversion":"1.0","id":"a","source":"x","type":"t","Ext":"v"}`)}, "Ext: not a valid extension name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := Decode(tt.msg)
			if err == nil {
				t.Fatalf("Decode succeeded: %v", ev)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v does not wrap ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tt.errHas) {
				t.Errorf("error = %v, want it to contain %q", err, tt.errHas)
			}
		})
	}
}

func TestEncodeErrors(t *testing.T) {
	good := mustEvent(t, "a", TypeTurn, "x", time.Time{}, Turn{Role: "user", Content: "hi"})
	noID := good.Clone()
	noID.Context.(*event.EventContextV1).ID = ""
	badJSON := good.Clone()
	badJSON.DataEncoded = []byte("{nope")
	ceCT := good.Clone()
	ceCT.SetDataContentType(ContentTypeStructured)
	ctrl := good.Clone()
	ctrl.SetSubject("a\x01b")
	tests := []struct {
		name    string
		subject string
		ev      event.Event
		errHas  string
	}{
		{"empty subject", "", good, "subject"},
		{"subject with space", "a b", good, "subject"},
		{"no context", "s", event.Event{}, "missing event context"},
		{"empty id", "s", noID, "id: must not be empty"},
		{"JSON data not JSON", "s", badJSON, "data: not JSON"},
		{"control character", "s", ctrl, "subject: control character"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for mode, enc := range map[string]func(string, event.Event) (*nats.Msg, error){"binary": BinaryMsg, "structured": StructuredMsg} {
				_, err := enc(tt.subject, tt.ev)
				if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.errHas) {
					t.Errorf("%s: error = %v, want ErrInvalid containing %q", mode, err, tt.errHas)
				}
			}
		})
	}
	if _, err := BinaryMsg("s", ceCT); err == nil || !strings.Contains(err.Error(), "datacontenttype") {
		t.Errorf("BinaryMsg with a CloudEvents datacontenttype: %v", err)
	}
}

func TestNewEvent(t *testing.T) {
	ev, err := NewEvent("id-1", TypeTurn, "agent", time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("X", 3600)), Turn{Role: "user", Content: "<b>"})
	if err != nil {
		t.Fatal(err)
	}
	if ev.SpecVersion() != "1.0" || ev.DataContentType() != ContentTypeJSON {
		t.Errorf("specversion %q, datacontenttype %q", ev.SpecVersion(), ev.DataContentType())
	}
	if got := string(ev.Data()); got != `{"role":"user","content":"<b>"}` {
		t.Errorf("data = %s", got)
	}
	if ev.Time().Location() != time.UTC || !ev.Time().Equal(time.Date(2026, 1, 2, 2, 4, 5, 0, time.UTC)) {
		t.Errorf("time = %v", ev.Time())
	}
	noTime, err := NewEvent("id-1", TypeTurn, "agent", time.Time{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if noTime.Context.AsV1().Time != nil || noTime.Data() != nil {
		t.Errorf("zero time and nil data gave time %v, data %q", noTime.Context.AsV1().Time, noTime.Data())
	}
	msg, err := BinaryMsg("s", noTime)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := msg.Header["ce-time"]; ok {
		t.Error("ce-time set for a zero time")
	}
	for _, tt := range []struct {
		name           string
		id, typ, src   string
		data           any
		field, wantMsg string
	}{
		{"empty id", "", TypeTurn, "a", nil, "id", "must not be empty"},
		{"blank type", "i", " ", "a", nil, "type", "must not be empty"},
		{"empty source", "i", TypeTurn, "", nil, "source", "must not be empty"},
		{"unencodable data", "i", TypeTurn, "a", make(chan int), "data", "unsupported type"},
	} {
		_, err := NewEvent(tt.id, tt.typ, tt.src, time.Time{}, tt.data)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tt.field || !strings.Contains(fe.Message, tt.wantMsg) {
			t.Errorf("%s: error = %v, want field %s", tt.name, err, tt.field)
		}
	}
}

func TestDecodeData(t *testing.T) {
	ev := mustEvent(t, "a", TypePressure, "x", time.Time{}, map[string]any{
		"session": "s1", "user": "u1", "tokens": "many", "extra": true,
	})
	_, err := DecodeData[Pressure](ev)
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "tokens" || !errors.Is(err, ErrInvalid) {
		t.Fatalf("error = %v, want a *FieldError for tokens", err)
	}
	if !strings.Contains(err.Error(), "must be an integer, got string") {
		t.Errorf("error = %v", err)
	}

	ev = mustEvent(t, "a", TypeFact, "x", time.Time{}, map[string]any{"op": "added", "fact": map[string]any{"provenance": "t1"}})
	if _, err := DecodeData[FactEvent](ev); !errors.As(err, &fe) || fe.Field != "fact.provenance" {
		t.Errorf("nested type error = %v, want field fact.provenance", err)
	}

	ev = mustEvent(t, "a", TypeTurn, "x", time.Time{}, []int{1})
	if _, err := DecodeData[Turn](ev); !errors.As(err, &fe) || fe.Field != "data" {
		t.Errorf("array into struct = %v, want field data", err)
	}

	ev = mustEvent(t, "a", TypeTurn, "x", time.Time{}, nil)
	if _, err := DecodeData[Turn](ev); !errors.As(err, &fe) || fe.Field != "data" || fe.Message != "missing" {
		t.Errorf("no data = %v", err)
	}

	ev.SetData("text/plain", "hello")
	if _, err := DecodeData[Turn](ev); !errors.As(err, &fe) || fe.Field != "datacontenttype" {
		t.Errorf("text data = %v", err)
	}

	// Unknown fields are allowed.
	ev = mustEvent(t, "a", TypeTurn, "x", time.Time{}, map[string]any{"role": "user", "content": "hi", "future": 1})
	turn, err := DecodeData[Turn](ev)
	if err != nil || turn.Content != "hi" {
		t.Errorf("DecodeData = %+v, %v", turn, err)
	}
}

// envelope renders a message for a golden file: subject, headers sorted by
// name, a blank line, the body.
func envelope(msg *nats.Msg) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "SUBJECT %s\n", msg.Subject)
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range msg.Header {
			if !yield(k) {
				return
			}
		}
	}) {
		for _, v := range msg.Header[k] {
			fmt.Fprintf(&b, "%s: %s\n", k, v)
		}
	}
	b.WriteString("\n")
	b.Write(msg.Data)
	b.WriteString("\n")
	return b.Bytes()
}

func TestGoldenEnvelopes(t *testing.T) {
	type golden struct {
		file string
		msg  func() (*nats.Msg, error)
	}
	var cases []golden
	for _, fx := range fixtures(t) {
		cases = append(cases, golden{fx.name + ".binary.golden", func() (*nats.Msg, error) { return BinaryMsg(fx.subject, fx.ev) }})
	}
	turn := fixtures(t)[0]
	cases = append(cases, golden{"turn.structured.golden", func() (*nats.Msg, error) { return StructuredMsg(turn.subject, turn.ev) }})
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			msg, err := c.msg()
			if err != nil {
				t.Fatal(err)
			}
			got := envelope(msg)
			path := filepath.Join("testdata", c.file)
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("envelope differs from %s (run go test -update if intended)\ngot:\n%s\nwant:\n%s", path, got, want)
			}
			// Decoding the golden message gives the event again.
			if _, err := Decode(msg); err != nil {
				t.Errorf("Decode: %v", err)
			}
		})
	}
}

func FuzzDecode(f *testing.F) {
	type seed struct {
		ct                                          string
		specversion, id, source, typ, tm, subj, ext string
		body                                        []byte
	}
	seeds := []seed{
		{"application/json", "1.0", "a", "x", TypeTurn, "2026-11-30T10:00:00Z", "s", "v", []byte(`{"role":"user","content":"hi"}`)},
		{"", "1.0", "a", "agent/%25E6", TypeTurn, "", "%C3%BC%20x", "100%25", nil},
		{"application/json; charset=utf-8", "1.0", "turn-1", "urn:a:b", TypeSessionEnded, "2026-11-30T10:00:00.5+02:00", "", "", []byte(`{"user":"u1"}`)},
		{"text/plain", "1.0", "a", "x", "t", "", "", "", []byte("hello")},
		{"application/json", "0.3", "", "", "", "x", "%", "%zz", []byte("{")},
		{ContentTypeStructured, "", "", "", "", "", "", "", []byte(`{"specversion":"1.0","id":"a","source":"x","type":"t","data":{"a":1},"e":"v"}`)},
		{ContentTypeStructured, "", "", "", "", "", "", "", []byte(`{"specversion":"1.0","id":"a","source":"x","type":"t","data_base64":"AAEC","datacontenttype":"application/octet-stream"}`)},
		{ContentTypeStructured, "", "", "", "", "", "", "", []byte(`{"data_base64":1,"specversion":"1.0"}`)},
		{"application/cloudevents+json; charset=utf-8", "", "", "", "", "", "", "", []byte(`{"specversion":"1.0","id":"a","source":"x","type":"t","datacontenttype":"text/plain","data":"hi","time":"2026-11-30T10:00:00Z"}`)},
	}
	for _, fx := range fixtures(f) {
		for _, enc := range []func(string, event.Event) (*nats.Msg, error){BinaryMsg, StructuredMsg} {
			msg, err := enc(fx.subject, fx.ev)
			if err != nil {
				f.Fatal(err)
			}
			h := msg.Header
			seeds = append(seeds, seed{h.Get("content-type"), h.Get("ce-specversion"), h.Get("ce-id"), h.Get("ce-source"),
				h.Get("ce-type"), h.Get("ce-time"), h.Get("ce-subject"), h.Get("ce-agentnote"), msg.Data})
		}
	}
	for _, s := range seeds {
		f.Add(s.ct, s.specversion, s.id, s.source, s.typ, s.tm, s.subj, "ce-fuzzext", s.ext, s.body)
	}
	f.Fuzz(func(t *testing.T, ct, specversion, id, source, typ, tm, subj, extKey, ext string, body []byte) {
		h := nats.Header{}
		for k, v := range map[string]string{
			"content-type": ct, "ce-specversion": specversion, "ce-id": id, "ce-source": source,
			"ce-type": typ, "ce-time": tm, "ce-subject": subj,
		} {
			if v != "" {
				h[k] = []string{v}
			}
		}
		if ext != "" {
			h[extKey] = append(h[extKey], ext) // may repeat or clash with a header above
		}
		ev, err := Decode(&nats.Msg{Subject: "memory.turns.a.b", Header: h, Data: body})
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		if err := ev.Validate(); err != nil {
			t.Fatalf("decoded event does not validate: %v", err)
		}
		if ev.SpecVersion() != "1.0" || strings.TrimSpace(ev.ID()) == "" || strings.TrimSpace(ev.Source()) == "" || strings.TrimSpace(ev.Type()) == "" {
			t.Fatalf("decoded event lacks required attributes: %v", ev)
		}
		if mt, _ := mediaTypeOf(ev.DataContentType()); isJSONMediaType(mt) && len(ev.Data()) > 0 && !ev.DataBase64 && !json.Valid(ev.Data()) {
			t.Fatalf("JSON event with non-JSON data %q", ev.Data())
		}
		// A decoded event encodes in both modes and decodes to itself.
		for mode, enc := range map[string]func(string, event.Event) (*nats.Msg, error){"binary": BinaryMsg, "structured": StructuredMsg} {
			msg, err := enc("memory.turns.a.b", ev)
			if err != nil {
				t.Fatalf("%s re-encode of %v: %v", mode, ev, err)
			}
			back, err := Decode(msg)
			if err != nil {
				t.Fatalf("%s re-decode: %v\n%s", mode, err, envelope(msg))
			}
			sameEvent(t, ev, back)
		}
	})
}

// TestMaybeTypeAgreesWithDecode: whatever header spelling Decode reads as an event of a type,
// MaybeType lets through; binary-mode events of another type, and messages that are no event,
// it does not.
func TestMaybeTypeAgreesWithDecode(t *testing.T) {
	ev, err := NewEvent("e1", TypeSessionEnded, "test", time.Now(), SessionEnded{User: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	binary, err := BinaryMsg("memory.turns.acme.s1", ev)
	if err != nil {
		t.Fatal(err)
	}
	structured, err := StructuredMsg("memory.turns.acme.s1", ev)
	if err != nil {
		t.Fatal(err)
	}
	recase := func(m *nats.Msg, f func(string) string) *nats.Msg {
		h := nats.Header{}
		for k, vs := range m.Header {
			h[f(k)] = vs
		}
		return &nats.Msg{Subject: m.Subject, Header: h, Data: m.Data}
	}
	withParams := recase(structured, func(k string) string { return k })
	withParams.Header["content-type"] = []string{"Application/CloudEvents+JSON; charset=utf-8"}
	for name, m := range map[string]*nats.Msg{
		"binary":                        binary,
		"binary, canonical header case": recase(binary, textproto.CanonicalMIMEHeaderKey),
		"binary, upper case":            recase(binary, strings.ToUpper),
		"structured":                    structured,
		"structured, canonical case":    recase(structured, textproto.CanonicalMIMEHeaderKey),
		"structured, media parameters":  withParams,
	} {
		if _, err := Decode(m); err != nil {
			t.Fatalf("%s: Decode: %v", name, err)
		}
		if !MaybeType(m.Header, TypeSessionEnded) {
			t.Errorf("%s: MaybeType says it cannot be a session end", name)
		}
	}
	if MaybeType(binary.Header, TypeTurn) {
		t.Error("a binary-mode session end may be a turn")
	}
	if MaybeType(nats.Header{"content-type": []string{"application/json"}}, TypeTurn) || MaybeType(nil, TypeTurn) {
		t.Error("a message with no ce-type and no structured content type may be a turn")
	}
}

// FuzzFastBinaryAgrees holds Decode's fast path to the general one: whatever headers and body
// fastBinary accepts, decodeBinary accepts too and decodes to the same event.
func FuzzFastBinaryAgrees(f *testing.F) {
	ev, err := NewEvent("turn-1", TypeTurn, "agent/a", time.Date(2026, 11, 30, 10, 0, 0, 5, time.UTC), Turn{Role: "user", Content: "hi", User: "u"})
	if err != nil {
		f.Fatal(err)
	}
	ev.SetExtension("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	msg, err := BinaryMsg("memory.turns.a.b", ev)
	if err != nil {
		f.Fatal(err)
	}
	h := msg.Header
	f.Add(h.Get("content-type"), h.Get("ce-specversion"), h.Get("ce-id"), h.Get("ce-source"), h.Get("ce-type"), h.Get("ce-time"), "s1",
		"ce-traceparent", h.Get("ce-traceparent"), "Nats-Msg-Id", "a.b.turn-1", false, msg.Data)
	f.Add("application/json", "1.0", "x%41", "urn:a", "t", "", "  padded session  ", "ce-tenant", "acme", "Ce-Id", "y", false, []byte(`{"a":1}`))
	f.Add("application/json", "1.0", "x", "%zz", "t", "2026-01-01T00:00:00+01:00", " ", "ce-data", "v", "CONTENT-TYPE", "text/plain", true, []byte(`[1`))
	f.Add("application/json", "1.0", " ", "::", "t", "x", "%E6%B5%8B", "ce-subject", "s", "ce-datacontenttype", "application/json", false, []byte{})
	f.Add("application/json", "1.0", "a", "b", "t", "2026-01-01T00:00:00Z", "\u0001", "ce-ext\u00e9", "\u0001", "content-type", "application/json", true, []byte("\"\xff\""))
	f.Fuzz(func(t *testing.T, ct, sv, id, source, typ, when, subject, extKey, ext, otherKey, other string, repeat bool, body []byte) {
		h := nats.Header{}
		for k, v := range map[string]string{"content-type": ct, "ce-specversion": sv, "ce-id": id, "ce-source": source, "ce-type": typ, "ce-time": when, "ce-subject": subject} {
			if v != "" {
				h[k] = []string{v}
			}
		}
		h[extKey] = append(h[extKey], ext)
		h[otherKey] = append(h[otherKey], other)
		if repeat {
			h["ce-id"] = append(h["ce-id"], id)
		}
		fast, ok := fastBinary(h, body)
		if !ok {
			return
		}
		full, err := Decode(&nats.Msg{Subject: "memory.turns.a.b", Header: h, Data: body, Sub: nil})
		if err != nil {
			t.Fatalf("the fast path accepted what Decode rejects (%v): %v %q", err, h, body)
		}
		mt, _ := mediaTypeOf(ContentTypeJSON)
		ref, err := decodeBinary(h, ContentTypeJSON, true, mt, body)
		if err != nil {
			t.Fatalf("the fast path accepted what decodeBinary rejects (%v): %v %q", err, h, body)
		}
		if !reflect.DeepEqual(fast, ref) || !reflect.DeepEqual(full, ref) {
			t.Fatalf("fast path decoded\n%#v\nthe general one\n%#v", fast, ref)
		}
	})
}

// BenchmarkDecodeBinaryTurn decodes a turn as agentmem's client publishes it: Decode (the fast
// path) and the general path alone.
func BenchmarkDecodeBinaryTurn(b *testing.B) {
	ev, err := NewEvent("turn-000123", TypeTurn, "agent/support-bot", time.Now(), Turn{Role: "user", Content: strings.Repeat("some words of a turn ", 25), User: "alice"})
	if err != nil {
		b.Fatal(err)
	}
	msg, err := BinaryMsg("memory.turns.acme.s1", ev)
	if err != nil {
		b.Fatal(err)
	}
	msg.Header.Set(HeaderMsgID, MsgID("acme", "s1", ev.ID()))
	b.Run("Decode", func(b *testing.B) {
		for b.Loop() {
			if _, err := Decode(msg); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("general", func(b *testing.B) {
		for b.Loop() {
			if _, err := decodeBinary(msg.Header, ContentTypeJSON, true, ContentTypeJSON, msg.Data); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// FuzzStructuredAgrees: a structured-mode envelope decodes with goccy/go-json (fastUnmarshal) to
// the event, or the error, that encoding/json alone gives.
func FuzzStructuredAgrees(f *testing.F) {
	for _, fx := range fixtures(f) {
		msg, err := StructuredMsg(fx.subject, fx.ev)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(msg.Data)
	}
	for _, s := range []string{
		`{"specversion":"1.0","id":"a","source":"x","type":"t","data":{"a":1},"e":"v","n":7,"b":true}`,
		`{"specversion":"1.0","id":"a","source":"x","type":"t","data_base64":"AAEC","datacontenttype":"application/octet-stream"}`,
		`{"specversion":"1.0","id":"a","source":"x","type":"t","datacontenttype":"text/plain","data":"hi\u00e9","time":"2026-11-30T10:00:00Z"}`,
		`{"specversion":"1.0","id":null,"source":"x","type":"t","subject":"s","data":null}`,
		`{"specversion":"1.0","\u0069d":"a","id":"b","source":"x","type":"t","subject":1,"Bad":2}`,
		`{"specversion":"1.0","id":"a","source":"x","type":"t","data":{"a":tru}}`,
		`{"specversion":"1.0","id":"a","source":"x","type":"t"} {}`,
		`[{"specversion":"1.0"}]`, `{"data_base64":1,"specversion":"1.0"}`, "{\"id\":\"\xff\"}", `{"specversion":"1.0","ext":1.5}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		fast, ferr := decodeStructuredWith(body, fastUnmarshal)
		ref, rerr := decodeStructuredWith(body, json.Unmarshal)
		if (ferr == nil) != (rerr == nil) || (ferr != nil && ferr.Error() != rerr.Error()) {
			t.Fatalf("%q: goccy/go-json gives error %v, encoding/json %v", body, ferr, rerr)
		}
		if !reflect.DeepEqual(fast, ref) {
			t.Fatalf("%q: goccy/go-json decodes\n%#v\nencoding/json\n%#v", body, fast, ref)
		}
	})
}

// BenchmarkDecodeStructuredTurn decodes a turn in structured mode, as the HTTP gateway's batches
// carry it: with goccy/go-json where it can (Decode) and with encoding/json alone.
func BenchmarkDecodeStructuredTurn(b *testing.B) {
	ev, err := NewEvent("turn-000123", TypeTurn, "agent/support-bot", time.Now(), Turn{Role: "user", Content: strings.Repeat("some words of a turn ", 25), User: "alice"})
	if err != nil {
		b.Fatal(err)
	}
	ev.SetSubject("s1")
	msg, err := StructuredMsg("memory.turns.acme.s1", ev)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("Decode", func(b *testing.B) {
		for b.Loop() {
			if _, err := Decode(msg); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			if _, err := decodeStructuredWith(msg.Data, json.Unmarshal); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// FuzzValidJSONAgrees: what goccy/go-json calls valid JSON (of valid UTF-8), encoding/json does
// too; validJSON takes only that verdict from it.
func FuzzValidJSONAgrees(f *testing.F) {
	for _, s := range []string{`{"role":"user","content":"hi","user":"u"}`, ` [1, 2.5e-3, -0, true, null, "\u00e9\n"] `, `{"a":{"b":[]}}`,
		"1\x00", `"\ud800"`, `01`, `1.`, `{"a":1,}`, `[1]]`, `"a` + "\x7f" + `"`, `{"a"  :  "b"}`, "\t\r\n\"x\"", `1e+5`, `-`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if utf8.Valid(data) && gojson.Valid(data) && !json.Valid(data) {
			t.Fatalf("goccy/go-json calls %q valid JSON, encoding/json does not", data)
		}
	})
}

// TestFastBinaryTakesAgentmemsOwnEvents: the events agentmem's publishers write in binary mode
// take the fast path and decode exactly as the general path decodes them.
func TestFastBinaryTakesAgentmemsOwnEvents(t *testing.T) {
	for _, fx := range fixtures(t) {
		t.Run(fx.name, func(t *testing.T) {
			ev := fx.ev.Clone()
			ev.SetExtension("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
			msg, err := BinaryMsg(fx.subject, ev)
			if err != nil {
				t.Fatal(err)
			}
			msg.Header.Set(HeaderMsgID, "a.b.c")
			fast, ok := fastBinary(msg.Header, msg.Data)
			if !ok {
				t.Fatalf("not decoded by the fast path: %v", msg.Header)
			}
			ref, err := decodeBinary(msg.Header, ContentTypeJSON, true, ContentTypeJSON, msg.Data)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(fast, ref) {
				t.Fatalf("fast path decoded\n%#v\nthe general one\n%#v", fast, ref)
			}
			sameEvent(t, ev, fast)
		})
	}
}

// Data without a content type that looks like JSON but holds bytes that are not UTF-8 (which
// encoding/json.Valid lets through inside a string) goes into a structured envelope as
// data_base64, not as "data", which decoding rejects: it decodes back to the same bytes. Found by
// FuzzDecode (binary mode accepts such data when no content type says it is JSON).
func TestStructuredKeepsDataThatIsNotUTF8(t *testing.T) {
	ev := event.New(ceSpecVersion)
	ev.SetID("e1")
	ev.SetSource("test")
	ev.SetType(TypeSessionEnded)
	ev.DataEncoded = []byte("{\"user\":\"\x971\"}")
	msg, err := StructuredMsg("memory.turns.a.b", ev)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(msg)
	if err != nil {
		t.Fatalf("structured re-decode: %v\n%s", err, msg.Data)
	}
	if !bytes.Equal(back.Data(), ev.Data()) {
		t.Fatalf("data %q, want %q", back.Data(), ev.Data())
	}
}
