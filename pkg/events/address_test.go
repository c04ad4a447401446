package events

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestParseEventSubject(t *testing.T) {
	for _, c := range []struct {
		subject string
		want    EventAddress
		err     string
	}{
		{"memory.pressure.acme.s1", EventAddress{Kind: KindPressure, Tenant: "acme", Key: "s1", Partition: -1}, ""},
		{"3.memory.summaries.acme.s1", EventAddress{Kind: KindSummaries, Tenant: "acme", Key: "s1", Partition: 3}, ""},
		{"12.memory.turns.acme.s-2", EventAddress{Kind: KindTurns, Tenant: "acme", Key: "s-2", Partition: 12}, ""},
		{"memory.facts.acme.alice", EventAddress{Kind: KindFacts, Tenant: "acme", Key: "alice", Partition: -1}, ""},
		{"memory.dlq.acme.s1", EventAddress{Kind: KindDLQ, Tenant: "acme", Key: "s1", Partition: -1}, ""},
		{"memory.retrieve.acme", EventAddress{}, "unknown kind"},
		{"memory.pressure.acme", EventAddress{}, "want 2"},
		{"memory.pressure.acme.s1.x", EventAddress{}, "want 2"},
		{"x.memory.pressure.acme.s1", EventAddress{}, "partition"},
		{"01.memory.pressure.acme.s1", EventAddress{}, "partition"},
		{"agentmem.pressure.acme.s1", EventAddress{}, "prefix"},
		{"memory.facts.acme.*", EventAddress{}, "user"},
		{"memory.turns.a%b.s1", EventAddress{}, "tenant"},
		{"", EventAddress{}, "prefix"},
	} {
		got, err := ParseEventSubject(c.subject)
		if c.err == "" {
			if err != nil || got != c.want {
				t.Errorf("%q: %+v, %v; want %+v", c.subject, got, err, c.want)
			}
			continue
		}
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%q: error %v, want one wrapping ErrInvalid that mentions %q", c.subject, err, c.err)
		}
	}
	if _, _, err := ParseKindSubject(KindPressure, "memory.summaries.acme.s1"); err == nil {
		t.Error("a summaries subject parsed as pressure")
	}
	if tenant, sess, err := ParseKindSubject(KindSummaries, "7.memory.summaries.acme.s1"); err != nil || tenant != "acme" || sess != "s1" {
		t.Errorf("got %q %q %v", tenant, sess, err)
	}
}

// Every builder's subject parses back to what built it.
func TestEventSubjectsRoundTrip(t *testing.T) {
	for kind, build := range map[string]func(string, string) (string, error){
		KindTurns: TurnSubject, KindPressure: PressureSubject, KindSummaries: SummarySubject, KindFacts: FactSubject,
	} {
		s, err := build("acme", "k1")
		if err != nil {
			t.Fatal(err)
		}
		tenant, key, err := ParseKindSubject(kind, s)
		if err != nil || tenant != "acme" || key != "k1" {
			t.Errorf("%s: %q parsed to %q %q %v", kind, s, tenant, key, err)
		}
	}
}

func FuzzParseEventSubject(f *testing.F) {
	for _, s := range []string{
		"memory.pressure.acme.s1", "3.memory.summaries.acme.s1", "memory.facts.acme.alice", "memory.dlq.acme.s1",
		"memory.dlq._", "memory.retrieve.acme", "memory.forget.acme", "memory.intake.acme.s1", "01.memory.turns.a.b", "memory.turns.a.b.c", "memory..a.b",
		"0.memory.turns.测试.s", "memory.facts.a.b\x00", "x.y.memory.turns.a.b", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, subject string) {
		fuzzOtherParsers(t, subject)
		a, err := ParseEventSubject(subject)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			if a != (EventAddress{}) {
				t.Fatalf("address %+v on error", a)
			}
			return
		}
		if ValidateToken("tenant", a.Tenant) != nil || ValidateToken("key", a.Key) != nil {
			t.Fatalf("accepted invalid tokens: %+v", a)
		}
		want := a.Subject()
		if a.Partition >= 0 {
			want = fmt.Sprintf("%d.%s", a.Partition, want)
		}
		if want != subject {
			t.Fatalf("ParseEventSubject(%q) = %+v, which rebuilds to %q", subject, a, want)
		}
		back, err := ParseEventSubject(a.Subject())
		if err != nil || back.Kind != a.Kind || back.Tenant != a.Tenant || back.Key != a.Key || back.Partition != -1 {
			t.Fatalf("Subject() %q parses to %+v, %v", a.Subject(), back, err)
		}
		if tenant, key, err := ParseKindSubject(a.Kind, subject); err != nil || tenant != a.Tenant || key != a.Key {
			t.Fatalf("ParseKindSubject(%q, %q) = %q %q %v", a.Kind, subject, tenant, key, err)
		}
	})
}

// fuzzOtherParsers checks the parsers of the other subject families on the same input: an error
// wraps ErrInvalid, a success rebuilds the subject.
func fuzzOtherParsers(t *testing.T, subject string) {
	t.Helper()
	check := func(name string, rebuilt string, buildErr, err error) {
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("%s(%q): error %v does not wrap ErrInvalid", name, subject, err)
			}
			return
		}
		if buildErr != nil || rebuilt != subject {
			t.Fatalf("%s(%q) rebuilds to %q, %v", name, subject, rebuilt, buildErr)
		}
	}
	tenant, err := ParseRetrieveSubject(subject)
	back, berr := RetrieveSubject(tenant)
	check("ParseRetrieveSubject", back, berr, err)
	tenant, err = ParseForgetSubject(subject)
	back, berr = ForgetSubject(tenant)
	check("ParseForgetSubject", back, berr, err)
	tenant, sess, err := ParseIntakeSubject(subject)
	back, berr = IntakeSubject(tenant, sess)
	check("ParseIntakeSubject", back, berr, err)
	tenant, sess, err = ParseDeadLetterSubject(subject)
	check("ParseDeadLetterSubject", DeadLetterSubject(tenant, sess), nil, err)
}
