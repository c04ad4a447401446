package events

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestSubjectBuilders(t *testing.T) {
	long := strings.Repeat("a", 65)
	tests := []struct {
		name  string
		build func() (string, error)
		want  string
		field string // field of the error, "" when the build succeeds
	}{
		{"turn", func() (string, error) { return TurnSubject("acme", "s1") }, "memory.turns.acme.s1", ""},
		{"pressure", func() (string, error) { return PressureSubject("acme", "s-1") }, "memory.pressure.acme.s-1", ""},
		{"summary", func() (string, error) { return SummarySubject("acme", "s_1") }, "memory.summaries.acme.s_1", ""},
		{"fact", func() (string, error) { return FactSubject("acme", "u1") }, "memory.facts.acme.u1", ""},
		{"retrieve", func() (string, error) { return RetrieveSubject("acme") }, "memory.retrieve.acme", ""},
		{"forget", func() (string, error) { return ForgetSubject("acme") }, "memory.forget.acme", ""},
		{"turn bad tenant", func() (string, error) { return TurnSubject("a.b", "s1") }, "", "tenant"},
		{"turn bad session", func() (string, error) { return TurnSubject("acme", "*") }, "", "session"},
		{"turn empty session", func() (string, error) { return TurnSubject("acme", "") }, "", "session"},
		{"pressure long session", func() (string, error) { return PressureSubject("acme", long) }, "", "session"},
		{"summary unicode tenant", func() (string, error) { return SummarySubject("äcme", "s1") }, "", "tenant"},
		{"fact bad user", func() (string, error) { return FactSubject("acme", "u 1") }, "", "user"},
		{"retrieve wildcard", func() (string, error) { return RetrieveSubject(">") }, "", "tenant"},
		{"forget empty", func() (string, error) { return ForgetSubject("") }, "", "tenant"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.build()
			if tt.field == "" {
				if err != nil || got != tt.want {
					t.Fatalf("got %q, %v; want %q", got, err, tt.want)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field || !errors.Is(err, ErrInvalid) {
				t.Fatalf("got %q, %v; want a *FieldError for %s", got, err, tt.field)
			}
		})
	}
}

func TestDeadLetterSubject(t *testing.T) {
	tests := []struct{ tenant, session, want string }{
		{"acme", "s1", "memory.dlq.acme.s1"},
		{"a.b", "s1", "memory.dlq._"},
		{"acme", "", "memory.dlq._"},
		{"", "", "memory.dlq._"},
		{"acme", strings.Repeat("s", 65), "memory.dlq._"},
	}
	for _, tt := range tests {
		if got := DeadLetterSubject(tt.tenant, tt.session); got != tt.want {
			t.Errorf("DeadLetterSubject(%q, %q) = %q, want %q", tt.tenant, tt.session, got, tt.want)
		}
	}
}

func TestMsgID(t *testing.T) {
	if got := MsgID("acme", "s1", "01J9"); got != "acme.s1.01J9" {
		t.Errorf("MsgID = %q", got)
	}
}

func TestParseTurnSubject(t *testing.T) {
	long := strings.Repeat("x", 65)
	tests := []struct {
		name    string
		subject string
		want    TurnAddress
		errHas  string // substring of the error; "" when parsing succeeds
	}{
		{"plain", "memory.turns.acme.s1", TurnAddress{"acme", "s1", -1}, ""},
		{"partitioned", "3.memory.turns.acme.s1", TurnAddress{"acme", "s1", 3}, ""},
		{"partition zero", "0.memory.turns.acme.s-1", TurnAddress{"acme", "s-1", 0}, ""},
		{"partition large", "1023.memory.turns.a_b.C-9", TurnAddress{"a_b", "C-9", 1023}, ""},
		{"64-char tokens", "memory.turns." + long[:64] + "." + long[:64], TurnAddress{long[:64], long[:64], -1}, ""},
		{"wrong prefix", "memory.turn.acme.s1", TurnAddress{}, "want prefix memory.turns"},
		{"other root", "memory.pressure.acme.s1", TurnAddress{}, "want prefix memory.turns"},
		{"no memory", "turns.acme.s1", TurnAddress{}, "want prefix memory.turns"},
		{"empty", "", TurnAddress{}, "want prefix memory.turns"},
		{"prefix only", "memory.turns", TurnAddress{}, "has 0 tokens"},
		{"too few", "memory.turns.acme", TurnAddress{}, "has 1 tokens"},
		{"too many", "memory.turns.acme.s1.x", TurnAddress{}, "has 3 tokens"},
		{"partitioned too few", "2.memory.turns.acme", TurnAddress{}, "has 1 tokens"},
		{"partitioned too many", "2.memory.turns.acme.s1.x", TurnAddress{}, "has 3 tokens"},
		{"bad partition", "x.memory.turns.acme.s1", TurnAddress{}, `partition "x"`},
		{"negative partition", "-1.memory.turns.acme.s1", TurnAddress{}, `partition "-1"`},
		{"leading zero partition", "01.memory.turns.acme.s1", TurnAddress{}, `partition "01"`},
		{"bad tenant", "memory.turns.a$b.s1", TurnAddress{}, `tenant "a$b"`},
		{"empty tenant", "memory.turns..s1", TurnAddress{}, `tenant ""`},
		{"bad session", "memory.turns.acme.s*", TurnAddress{}, `session "s*"`},
		{"wildcard session", "3.memory.turns.acme.>", TurnAddress{}, `session ">"`},
		{"65-char tenant", "memory.turns." + long + ".s1", TurnAddress{}, "tenant"},
		{"65-char session", "1.memory.turns.acme." + long, TurnAddress{}, "session"},
		{"unicode tenant", "memory.turns.测试.s1", TurnAddress{}, `tenant "测试"`},
		{"unicode session", "memory.turns.acme.sü", TurnAddress{}, `session "sü"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseTurnSubject(tt.subject)
			if tt.errHas == "" {
				if err != nil || got != tt.want {
					t.Fatalf("ParseTurnSubject(%q) = %+v, %v; want %+v", tt.subject, got, err, tt.want)
				}
				if s := got.Subject(); s != "memory.turns."+tt.want.Tenant+"."+tt.want.Session {
					t.Errorf("Subject() = %q", s)
				}
				return
			}
			if err == nil {
				t.Fatalf("ParseTurnSubject(%q) = %+v, want an error", tt.subject, got)
			}
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.errHas) {
				t.Fatalf("ParseTurnSubject(%q) error = %v, want ErrInvalid containing %q", tt.subject, err, tt.errHas)
			}
			if got != (TurnAddress{}) {
				t.Errorf("address on error = %+v, want zero", got)
			}
		})
	}
}

func TestParseTenantSubject(t *testing.T) {
	tests := []struct {
		prefix, subject, want, errHas string
	}{
		{"memory.retrieve", "memory.retrieve.acme", "acme", ""},
		{"memory.forget", "memory.forget.t_1", "t_1", ""},
		{"memory.retrieve", "memory.forget.acme", "", "want prefix memory.retrieve"},
		{"memory.retrieve", "memory.retrieve", "", "want prefix"},
		{"memory.retrieve", "memory.retrieveacme", "", "want prefix"},
		{"memory.retrieve", "memory.retrieve.acme.x", "", "exactly one token"},
		{"memory.retrieve", "memory.retrieve.", "", `tenant ""`},
		{"memory.retrieve", "memory.retrieve.*", "", `tenant "*"`},
		{"", "acme", "", "want prefix"},
	}
	for _, tt := range tests {
		got, err := ParseTenantSubject(tt.prefix, tt.subject)
		if tt.errHas == "" {
			if err != nil || got != tt.want {
				t.Errorf("ParseTenantSubject(%q, %q) = %q, %v; want %q", tt.prefix, tt.subject, got, err, tt.want)
			}
			continue
		}
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.errHas) {
			t.Errorf("ParseTenantSubject(%q, %q) = %q, %v; want error containing %q", tt.prefix, tt.subject, got, err, tt.errHas)
		}
	}
}

func FuzzParseTurnSubject(f *testing.F) {
	for _, s := range []string{
		"memory.turns.acme.s1", "7.memory.turns.acme.s1", "memory.turns.acme", "x.memory.turns.a.b",
		"memory.turns.a.b.c", "memory.turns..", "0.memory.turns.测试.s", "memory.turns.a.b\x00", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, subject string) {
		addr, err := ParseTurnSubject(subject)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		if ValidateToken("tenant", addr.Tenant) != nil || ValidateToken("session", addr.Session) != nil {
			t.Fatalf("accepted invalid tokens: %+v", addr)
		}
		want := addr.Subject()
		if addr.Partition >= 0 {
			want = fmt.Sprintf("%d.%s", addr.Partition, want)
		}
		if want != subject {
			t.Fatalf("ParseTurnSubject(%q) = %+v, which rebuilds to %q", subject, addr, want)
		}
		back, err := ParseTurnSubject(addr.Subject())
		if err != nil || back.Tenant != addr.Tenant || back.Session != addr.Session || back.Partition != -1 {
			t.Fatalf("Subject() %q parses to %+v, %v", addr.Subject(), back, err)
		}
	})
}

func TestParseServiceSubjects(t *testing.T) {
	tests := []struct {
		name    string
		parse   func(string) (string, error)
		subject string
		want    string
		errHas  string
	}{
		{"retrieve", ParseRetrieveSubject, "memory.retrieve.acme", "acme", ""},
		{"retrieve other root", ParseRetrieveSubject, "memory.forget.acme", "", "want prefix memory.retrieve"},
		{"retrieve two tokens", ParseRetrieveSubject, "memory.retrieve.acme.s1", "", "exactly one token"},
		{"retrieve wildcard", ParseRetrieveSubject, RetrieveSubjects, "", `tenant "*"`},
		{"retrieve empty", ParseRetrieveSubject, "", "", "want prefix"},
		{"forget", ParseForgetSubject, "memory.forget.t-1", "t-1", ""},
		{"forget other root", ParseForgetSubject, "memory.retrieve.acme", "", "want prefix memory.forget"},
		{"forget bad tenant", ParseForgetSubject, "memory.forget.a$b", "", `tenant "a$b"`},
		{"forget no tenant", ParseForgetSubject, "memory.forget", "", "want prefix"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.parse(tt.subject)
			if tt.errHas == "" {
				if err != nil || got != tt.want {
					t.Fatalf("%q: %q, %v; want %q", tt.subject, got, err, tt.want)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.errHas) {
				t.Fatalf("%q: %q, %v; want ErrInvalid mentioning %q", tt.subject, got, err, tt.errHas)
			}
		})
	}
	for _, build := range []func(string) (string, error){RetrieveSubject, ForgetSubject} {
		s, err := build("acme")
		if err != nil {
			t.Fatal(err)
		}
		r, errR := ParseRetrieveSubject(s)
		f, errF := ParseForgetSubject(s)
		if (errR == nil) == (errF == nil) || r+f != "acme" {
			t.Errorf("%q parsed as retrieve %q %v, forget %q %v", s, r, errR, f, errF)
		}
	}
}

func TestParseDeadLetterSubject(t *testing.T) {
	tests := []struct {
		subject, tenant, session, errHas string
	}{
		{"memory.dlq.acme.s1", "acme", "s1", ""},
		{"memory.dlq._", "", "", ""},
		{"memory.dlq.acme", "", "", "want 2"},
		{"memory.dlq.acme.s1.x", "", "", "want 2"},
		{"memory.dlq.a%b.s1", "", "", `tenant "a%b"`},
		{"memory.dlq.acme.*", "", "", `session "*"`},
		{"3.memory.dlq.acme.s1", "", "", "want prefix memory.dlq"},
		{"memory.turns.acme.s1", "", "", "want prefix memory.dlq"},
		{"memory.dlq", "", "", "want prefix memory.dlq"},
		{"", "", "", "want prefix memory.dlq"},
	}
	for _, tt := range tests {
		tenant, sess, err := ParseDeadLetterSubject(tt.subject)
		if tt.errHas == "" {
			if err != nil || tenant != tt.tenant || sess != tt.session {
				t.Errorf("%q: %q %q %v; want %q %q", tt.subject, tenant, sess, err, tt.tenant, tt.session)
			}
			if back := DeadLetterSubject(tenant, sess); back != tt.subject {
				t.Errorf("%q rebuilds to %q", tt.subject, back)
			}
			continue
		}
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.errHas) {
			t.Errorf("%q: %q %q %v; want ErrInvalid mentioning %q", tt.subject, tenant, sess, err, tt.errHas)
		}
	}
}
