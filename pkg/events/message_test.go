package events

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/trace"
)

// The Nats-Msg-Id of every family is pinned here, byte for byte: the streams deduplicate on it,
// so a change would store a retried or replayed event twice.
func TestNewMsgPinsSubjectAndMsgID(t *testing.T) {
	at := time.Date(2026, 11, 30, 10, 0, 0, 0, time.FixedZone("CET", 3600))
	tests := []struct {
		name, typ, tenant, key, id string
		data                       any
		subject, msgID             string
	}{
		{"turn", TypeTurn, "acme", "s1", "01J9ZQ", Turn{Role: RoleUser, Content: "hi", User: "alice"},
			"memory.turns.acme.s1", "acme.s1.01J9ZQ"},
		{"session end (idle)", TypeSessionEnded, "acme", "s1", "idle-end-42", SessionEnded{User: "alice"},
			"memory.turns.acme.s1", "acme.s1.idle-end-42"},
		{"session end (importer)", TypeSessionEnded, "t_1", "s-2", "import-end-s-2-x", SessionEnded{User: "bob"},
			"memory.turns.t_1.s-2", "t_1.s-2.import-end-s-2-x"},
		{"pressure", TypePressure, "acme", "s1", "pressure-3-sum_0f1e", Pressure{Session: "s1", User: "alice", Tokens: 10, Budget: 12, Ratio: 0.83, EntryIDs: []string{"a"}},
			"memory.pressure.acme.s1", "acme.s1.pressure-3-sum_0f1e"},
		{"pressure re-emitted", TypePressure, "acme", "s1", "pressure-3-sum_0f1e-r2", Pressure{Session: "s1", User: "alice", EntryIDs: []string{"a"}},
			"memory.pressure.acme.s1", "acme.s1.pressure-3-sum_0f1e-r2"},
		{"summary", TypeSummary, "acme", "s1", "sum_0f1e", Summary{Session: "s1", User: "alice", SummaryID: "sum_0f1e", Content: "c"},
			"memory.summaries.acme.s1", "acme.s1.sum_0f1e"},
		{"fact added", TypeFact, "acme", "alice", "fact-added-f_1", FactEvent{Op: FactAdded, Fact: Fact{ID: "f_1", Content: "likes Go"}},
			"memory.facts.acme.alice", "acme.alice.fact-added-f_1"},
		{"fact superseded", TypeFact, "acme", "alice", "fact-superseded-f_1-f_2", FactEvent{Op: FactSuperseded, Fact: Fact{ID: "f_1", Content: "x"}},
			"memory.facts.acme.alice", "acme.alice.fact-superseded-f_1-f_2"},
		{"fact forgotten", TypeFact, "acme", "alice", "forgotten-abc", FactEvent{Op: FactForgotten, Fact: Fact{ID: "user:alice"}},
			"memory.facts.acme.alice", "acme.alice.forgotten-abc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg, err := NewMsg(context.Background(), tt.tenant, tt.key, tt.id, tt.typ, "agentmem://test", at, tt.data)
			if err != nil {
				t.Fatal(err)
			}
			if msg.Subject != tt.subject {
				t.Errorf("subject %q, want %q", msg.Subject, tt.subject)
			}
			if got := msg.Header.Values(HeaderMsgID); len(got) != 1 || got[0] != tt.msgID {
				t.Errorf("Nats-Msg-Id %q, want %q", got, tt.msgID)
			}
			// The message is exactly the one the publishers built by hand before NewMsg.
			ev, err := NewEvent(tt.id, tt.typ, "agentmem://test", at, tt.data)
			if err != nil {
				t.Fatal(err)
			}
			ev.SetSubject(tt.key)
			want, err := BinaryMsg(tt.subject, ev)
			if err != nil {
				t.Fatal(err)
			}
			want.Header.Set(HeaderMsgID, MsgID(tt.tenant, tt.key, tt.id))
			assertSameMsg(t, msg, want)
			back, err := Decode(msg)
			if err != nil {
				t.Fatal(err)
			}
			if back.ID() != tt.id || back.Type() != tt.typ || back.Subject() != tt.key || !back.Time().Equal(at) {
				t.Errorf("decoded id %q type %q subject %q time %v", back.ID(), back.Type(), back.Subject(), back.Time())
			}
			// EventMsg of the same event is the same message.
			again, err := EventMsg(tt.tenant, tt.key, ev)
			if err != nil {
				t.Fatal(err)
			}
			assertSameMsg(t, again, want)
		})
	}
}

func assertSameMsg(t *testing.T, got, want *nats.Msg) {
	t.Helper()
	if got.Subject != want.Subject || string(got.Data) != string(want.Data) {
		t.Errorf("message %q %s, want %q %s", got.Subject, got.Data, want.Subject, want.Data)
	}
	if !maps.EqualFunc(got.Header, want.Header, slices.Equal) {
		t.Errorf("headers %v, want %v", got.Header, want.Header)
	}
}

func TestNewMsgTraceContext(t *testing.T) {
	msg, err := NewMsg(context.Background(), "acme", "s1", "p1", TypePressure, "src", time.Time{}, Pressure{Session: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	if v := msg.Header.Get("ce-" + TraceParentAttribute); v != "" {
		t.Errorf("traceparent %q without a span", v)
	}
	if v := msg.Header.Get("ce-time"); v != "" {
		t.Errorf("ce-time %q for a zero time", v)
	}
	if got, ok := SpanContextOf(msg.Header, nil); ok {
		t.Errorf("span context %v of a binary-mode message without a traceparent", got)
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5, 6}, TraceFlags: trace.FlagsSampled,
	})
	ctx := trace.ContextWithSpanContext(context.Background(), sc)
	msg, err = NewMsg(ctx, "acme", "s1", "p1", TypePressure, "src", time.Time{}, Pressure{Session: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	got, ok := SpanContextOf(msg.Header, msg.Data)
	if !ok || got.TraceID() != sc.TraceID() || got.SpanID() != sc.SpanID() {
		t.Errorf("span context %v %v, want %v", got, ok, sc)
	}
}

func TestNewMsgErrors(t *testing.T) {
	tests := []struct {
		name, tenant, key, id, typ string
		data                       any
		errHas                     string
	}{
		{"unknown type", "acme", "s1", "x", "agentmem.other.v1", nil, `type "agentmem.other.v1"`},
		{"bad tenant", "a.b", "s1", "x", TypeTurn, Turn{}, `tenant "a.b"`},
		{"bad session", "acme", "*", "x", TypeSummary, Summary{}, `session "*"`},
		{"bad user", "acme", "a b", "x", TypeFact, FactEvent{}, `user "a b"`},
		{"empty id", "acme", "s1", "", TypeTurn, Turn{}, "id"},
		{"data not JSON", "acme", "s1", "x", TypeTurn, func() {}, "data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg, err := NewMsg(context.Background(), tt.tenant, tt.key, tt.id, tt.typ, "src", time.Time{}, tt.data)
			if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.errHas) {
				t.Fatalf("NewMsg = %v, %v; want ErrInvalid mentioning %q", msg, err, tt.errHas)
			}
		})
	}
}

func TestEventMsg(t *testing.T) {
	ev, err := NewEvent("t1", TypeTurn, "src", time.Time{}, Turn{Role: RoleUser, Content: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	ev.SetSubject("s1")
	msg, err := StructuredEventMsg("acme", "s1", ev)
	if err != nil {
		t.Fatal(err)
	}
	if msg.Subject != "memory.turns.acme.s1" || msg.Header.Get(HeaderMsgID) != "acme.s1.t1" ||
		msg.Header.Get("content-type") != ContentTypeStructured {
		t.Errorf("structured message %q %v", msg.Subject, msg.Header)
	}
	back, err := Decode(msg)
	if err != nil || back.ID() != "t1" || back.Subject() != "s1" {
		t.Errorf("decoded %v, %v", back, err)
	}
	for name, build := range map[string]func(string, string, event.Event) (*nats.Msg, error){
		"binary": EventMsg, "structured": StructuredEventMsg,
	} {
		if _, err := build("acme", "s1", event.Event{}); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: zero event: %v, want ErrInvalid", name, err)
		}
		if _, err := build("acme", "s.1", ev); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "session") {
			t.Errorf("%s: bad session: %v", name, err)
		}
	}
}

func TestEventSubject(t *testing.T) {
	for typ, want := range map[string]string{
		TypeTurn: "memory.turns.acme.k", TypeSessionEnded: "memory.turns.acme.k", TypePressure: "memory.pressure.acme.k",
		TypeSummary: "memory.summaries.acme.k", TypeFact: "memory.facts.acme.k",
	} {
		got, err := EventSubject(typ, "acme", "k")
		if err != nil || got != want {
			t.Errorf("EventSubject(%s) = %q, %v; want %q", typ, got, err, want)
		}
		a, err := ParseEventSubject(got)
		if err != nil || a.Tenant != "acme" || a.Key != "k" {
			t.Errorf("%q parses to %+v, %v", got, a, err)
		}
	}
	var fe *FieldError
	if _, err := EventSubject("", "acme", "k"); !errors.As(err, &fe) || fe.Field != "type" {
		t.Errorf("empty type: %v", err)
	}
}
