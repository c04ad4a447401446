package events

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func TestStoredTime(t *testing.T) {
	cet := time.FixedZone("CET", 3600)
	stored := time.Date(2026, 12, 1, 9, 0, 0, 5, cet)
	ev, _ := NewEvent("a", TypeTurn, "src", time.Time{}, nil)
	if got := StoredTime(ev, stored); !got.Equal(stored) || got.Location() != time.UTC {
		t.Errorf("no event time: %v, want %v in UTC", got, stored)
	}
	at := time.Date(2026, 11, 30, 10, 0, 0, 0, cet)
	ev.SetTime(at)
	if got := StoredTime(ev, stored); !got.Equal(at) || got.Location() != time.UTC {
		t.Errorf("event time: %v, want %v in UTC", got, at)
	}
}

func TestDecodeStoredTurn(t *testing.T) {
	cet := time.FixedZone("CET", 3600)
	stored := time.Date(2026, 12, 1, 9, 0, 0, 0, cet)
	at := time.Date(2026, 11, 30, 10, 0, 0, 0, cet)
	msg := func(id, typ string, t time.Time, data any) *nats.Msg {
		m, err := NewMsg(context.Background(), "acme", "s1", id, typ, "src", t, data)
		if err != nil {
			panic(err)
		}
		return m
	}
	bad := msg("t3", TypeTurn, at, Turn{Role: RoleUser, Content: "x"})
	bad.Data = []byte(`{"role":"user","content":7}`)
	tests := []struct {
		name     string
		msg      *nats.Msg
		id       string
		time     time.Time
		notTurn  bool
		invalid  bool
		contains string
	}{
		{name: "with time", msg: msg("t1", TypeTurn, at, Turn{Role: RoleUser, Content: "hello", Tool: ""}), id: "t1", time: at},
		{name: "without time", msg: msg("t2", TypeTurn, time.Time{}, Turn{Role: RoleTool, Content: "42", Tool: "calc"}), id: "t2", time: stored},
		{name: "session end", msg: msg("e1", TypeSessionEnded, at, SessionEnded{User: "u"}), notTurn: true, contains: TypeSessionEnded},
		{name: "data not a turn", msg: bad, invalid: true, contains: "content"},
		{name: "not an event", msg: &nats.Msg{Subject: "memory.turns.acme.s1", Data: []byte("hello")}, invalid: true, contains: "ce-specversion"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeStoredTurn(tt.msg.Subject, tt.msg.Header, tt.msg.Data, stored)
			switch {
			case tt.notTurn || tt.invalid:
				if err == nil || errors.Is(err, ErrNotTurn) != tt.notTurn || errors.Is(err, ErrInvalid) != tt.invalid ||
					!strings.Contains(err.Error(), tt.contains) {
					t.Fatalf("got %+v, %v; want not-turn %v, invalid %v, mentioning %q", got, err, tt.notTurn, tt.invalid, tt.contains)
				}
			case err != nil:
				t.Fatal(err)
			default:
				if got.ID != tt.id || got.Event.ID() != tt.id || !got.Time.Equal(tt.time) || got.Time.Location() != time.UTC || got.Seq != 0 {
					t.Errorf("got id %q time %v seq %d; want %q %v", got.ID, got.Time, got.Seq, tt.id, tt.time)
				}
			}
		})
	}
}

// ReadStoredTurn reads what a real stream stored: the stream's time stands in for a missing event
// time, and the sequence comes with the turn.
func TestReadStoredTurnFromStream(t *testing.T) {
	nc := runJetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "TURNS", Subjects: []string{TurnsSubjects}, AllowDirect: true})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	for _, m := range []struct {
		id, typ string
		t       time.Time
		data    any
	}{
		{"t1", TypeTurn, at, Turn{Role: RoleUser, Content: "hello", User: "u"}},
		{"t2", TypeTurn, time.Time{}, Turn{Role: RoleAssistant, Content: "hi"}},
		{"e1", TypeSessionEnded, time.Time{}, SessionEnded{User: "u"}},
	} {
		msg, err := NewMsg(ctx, "acme", "s1", m.id, m.typ, "src", m.t, m.data)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := js.PublishMsg(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	raw := func(seq uint64) *jetstream.RawStreamMsg {
		m, err := stream.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	got, err := ReadStoredTurn(raw(1))
	if err != nil || got.ID != "t1" || got.Seq != 1 || !got.Time.Equal(at) || got.Turn.Content != "hello" || got.Turn.User != "u" {
		t.Errorf("seq 1: %+v, %v", got, err)
	}
	m2 := raw(2)
	got, err = ReadStoredTurn(m2)
	if err != nil || got.ID != "t2" || got.Seq != 2 || !got.Time.Equal(m2.Time) || got.Time.Location() != time.UTC || got.Turn.Role != RoleAssistant {
		t.Errorf("seq 2: %+v, %v; want the stored time %v", got, err, m2.Time)
	}
	if _, err := ReadStoredTurn(raw(3)); !errors.Is(err, ErrNotTurn) || errors.Is(err, ErrInvalid) {
		t.Errorf("session end: %v, want ErrNotTurn only", err)
	}
	if ev, err := DecodeRaw(raw(3)); err != nil || ev.Type() != TypeSessionEnded {
		t.Errorf("DecodeRaw: %v, %v", ev, err)
	}
	if _, err := ReadStoredTurn(nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("nil message: %v", err)
	}
	if _, err := DecodeRaw(nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("DecodeRaw(nil): %v", err)
	}
}

// TestReadAppliedTurnReadsLikeReadStoredTurn: the plain binary-mode turns agentmem's publishers
// write are read without a CloudEvent, the rest through ReadStoredTurn; an applied turn comes out
// the same either way.
func TestReadAppliedTurnReadsLikeReadStoredTurn(t *testing.T) {
	cet := time.FixedZone("CET", 3600)
	stored := time.Date(2026, 12, 1, 9, 0, 0, 0, cet)
	at := time.Date(2026, 11, 30, 10, 0, 0, 123456789, cet)
	raw := func(m *nats.Msg) *jetstream.RawStreamMsg {
		return &jetstream.RawStreamMsg{Subject: m.Subject, Sequence: 42, Header: m.Header, Data: m.Data, Time: stored}
	}
	binary := func(id string, at time.Time, turn Turn) *nats.Msg {
		m, err := NewMsg(context.Background(), "acme", "s1", id, TypeTurn, "src", at, turn)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	structured := func(id string, turn Turn) *nats.Msg {
		ev, err := NewEvent(id, TypeTurn, "src", at, turn)
		if err != nil {
			t.Fatal(err)
		}
		m, err := StructuredEventMsg("acme", "s1", ev)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	full := Turn{Role: RoleTool, Content: "杭州 晴 25°C", User: "alice", Tool: "weather", Metadata: map[string]any{"source": "api", "n": 2.5}}
	for _, tt := range []struct {
		name  string
		msg   *nats.Msg
		plain bool
	}{
		{"binary with time", binary("t1", at, Turn{Role: RoleUser, Content: "hello", User: "alice"}), true},
		{"binary without time", binary("t2", time.Time{}, full), true},
		{"percent-encoded id", binary("t 3%", at, full), false},
		{"structured", structured("t4", full), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := raw(tt.msg)
			want, err := ReadStoredTurn(m)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ReadAppliedTurn(m)
			if err != nil {
				t.Fatal(err)
			}
			if _, plain := plainTurn(m); plain != tt.plain {
				t.Errorf("read without a CloudEvent: %v, want %v", plain, tt.plain)
			}
			if got.ID != want.ID || !got.Time.Equal(want.Time) || got.Time.Location() != time.UTC || got.Seq != 42 ||
				got.Turn.Role != want.Turn.Role || got.Turn.Content != want.Turn.Content || got.Turn.User != want.Turn.User ||
				got.Turn.Tool != want.Turn.Tool || len(got.Turn.Metadata) != len(want.Turn.Metadata) {
				t.Errorf("ReadAppliedTurn %+v\nReadStoredTurn  %+v", got, want)
			}
			for k, v := range want.Turn.Metadata {
				if got.Turn.Metadata[k] != v {
					t.Errorf("metadata %q: %v, want %v", k, got.Turn.Metadata[k], v)
				}
			}
		})
	}
	// A session end on the same subject, and a message that is no event, fail as ReadStoredTurn.
	end, err := NewMsg(context.Background(), "acme", "s1", "e1", TypeSessionEnded, "src", at, SessionEnded{User: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ReadAppliedTurn(raw(end)); !errors.Is(err, ErrNotTurn) {
		t.Errorf("session end: %v, want ErrNotTurn", err)
	}
	if _, err := ReadAppliedTurn(raw(&nats.Msg{Subject: "memory.turns.acme.s1", Data: []byte("hello")})); !errors.Is(err, ErrInvalid) {
		t.Errorf("not an event: %v, want ErrInvalid", err)
	}
	if _, err := ReadAppliedTurn(nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("nil: %v, want ErrInvalid", err)
	}
}

// FuzzFastTurnAgrees: whatever fastTurn decodes, encoding/json decodes alike (every field, the
// metadata included), and so for the tenant field NamedTenant reads; the fast path may decline
// what encoding/json takes, never the reverse.
func FuzzFastTurnAgrees(f *testing.F) {
	for _, s := range []string{
		`{"role":"user","content":"I live in Paris","user":"alice"}`,
		`{"role":"tool","content":"42","tool":"calc","metadata":{"a":[1,2.5,"x",null,true],"b":{"c":"d"}}}`,
		`{"content":"caf\u00e9 \ud83d\ude00 \"q\" \\ \/","role":"assistant"}`,
		`{"content":"a","content":"b"}`,
		`{"Content":"case","ROLE":"user"}`,
		`{"content":"x","metadata":{"n":1e400}}`,
		`{"content":"\ud800"}`,
		`{"content":"x"} `,
		`{"content":1}`,
		`[]`,
		`{"metadata":{"k":"v","k":"w"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"tenant":"beta","content":"x"}`))
	f.Add([]byte(`{"Tenant":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var fastTenant, stdTenant tenantField
		if fastJSON(data, &fastTenant) {
			if err := json.Unmarshal(data, &stdTenant); err != nil || !reflect.DeepEqual(fastTenant, stdTenant) {
				t.Fatalf("%q: the tenant field %v, encoding/json %v (%v)", data, fastTenant.Tenant, stdTenant.Tenant, err)
			}
		}
		fast, ok := fastTurn(data)
		if !ok {
			return
		}
		var std Turn
		if err := json.Unmarshal(data, &std); err != nil {
			t.Fatalf("fastTurn took %q, encoding/json: %v", data, err)
		}
		if !reflect.DeepEqual(fast, std) {
			t.Fatalf("%q: fastTurn %#v, encoding/json %#v", data, fast, std)
		}
	})
}
