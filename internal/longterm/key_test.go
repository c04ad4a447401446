package longterm_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/internal/longterm"
	"github.com/agentmem/agentmem/pkg/events"
)

func TestParseKey(t *testing.T) {
	for _, tt := range []struct {
		key  string
		want longterm.Key
	}{
		{longterm.FactKey("acme", "alice", "f_1"), longterm.Key{Tenant: "acme", User: "alice", Kind: "f", ID: "f_1"}},
		{longterm.SummaryKey("acme", "alice", "sum_ab"), longterm.Key{Tenant: "acme", User: "alice", Kind: "s", ID: "sum_ab"}},
		{longterm.SessionKey("t-1", "u_2", "s1"), longterm.Key{Tenant: "t-1", User: "u_2", Kind: "x", ID: "s1"}},
		{"acme.alice.k.0f1e", longterm.Key{Tenant: "acme", User: "alice", Kind: "k", ID: "0f1e"}},
		{"acme.alice.f.a.b", longterm.Key{Tenant: "acme", User: "alice", Kind: "f", ID: "a.b"}},
		{"acme.alice.n.ent_1", longterm.Key{Tenant: "acme", User: "alice", Kind: "n", ID: "ent_1"}},
		{"acme.alice.a.ent_2", longterm.Key{Tenant: "acme", User: "alice", Kind: "a", ID: "ent_2"}},
		{"acme.alice.e.edge_1", longterm.Key{Tenant: "acme", User: "alice", Kind: "e", ID: "edge_1"}},
		{"acme.alice.r.key_1", longterm.Key{Tenant: "acme", User: "alice", Kind: "r", ID: "key_1"}},
	} {
		got, err := longterm.ParseKey(tt.key)
		if err != nil || got != tt.want {
			t.Errorf("ParseKey(%q) = %+v, %v; want %+v", tt.key, got, err, tt.want)
		}
	}
	for _, tt := range []struct{ key, errHas string }{
		{"acme.alice.f", "want <tenant>.<user>.<kind>.<id>"},
		{"acme.alice", "want <tenant>.<user>.<kind>.<id>"},
		{"", "want <tenant>.<user>.<kind>.<id>"},
		{"a*b.alice.f.x", `tenant "a*b"`},
		{"acme..f.x", `user ""`},
		{"acme.alice.z.x", `kind: "z" is not one of`},
		{"acme.alice.f.", "id: must not be empty"},
	} {
		got, err := longterm.ParseKey(tt.key)
		if err == nil || !errors.Is(err, events.ErrInvalid) || !strings.Contains(err.Error(), tt.errHas) || got != (longterm.Key{}) {
			t.Errorf("ParseKey(%q) = %+v, %v; want ErrInvalid mentioning %q", tt.key, got, err, tt.errHas)
		}
	}
}
