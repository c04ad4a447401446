package events

import (
	"errors"
	"strings"
	"testing"
)

func TestParseIntakeSubject(t *testing.T) {
	tests := []struct {
		subject, tenant, session, errHas string
	}{
		{"memory.intake.acme.s1", "acme", "s1", ""},
		{"memory.intake.t_1.S-2", "t_1", "S-2", ""},
		{"memory.intake.acme", "", "", "want memory.intake.<tenant>.<session>"},
		{"memory.intake.acme.s1.x", "", "", "want memory.intake.<tenant>.<session>"},
		{"memory.turns.acme.s1", "", "", "want memory.intake.<tenant>.<session>"},
		{"3.memory.intake.acme.s1", "", "", "want memory.intake.<tenant>.<session>"},
		{"", "", "", "want memory.intake.<tenant>.<session>"},
		{"memory.intake.a$b.s1", "", "", `tenant "a$b"`},
		{"memory.intake.acme.>", "", "", `session ">"`},
		{"memory.intake..s1", "", "", `tenant ""`},
	}
	for _, tt := range tests {
		tenant, sess, err := ParseIntakeSubject(tt.subject)
		if tt.errHas == "" {
			if err != nil || tenant != tt.tenant || sess != tt.session {
				t.Errorf("%q: %q %q %v; want %q %q", tt.subject, tenant, sess, err, tt.tenant, tt.session)
			}
			if back, err := IntakeSubject(tenant, sess); err != nil || back != tt.subject {
				t.Errorf("%q rebuilds to %q, %v", tt.subject, back, err)
			}
			continue
		}
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.errHas) || tenant != "" || sess != "" {
			t.Errorf("%q: %q %q %v; want ErrInvalid mentioning %q", tt.subject, tenant, sess, err, tt.errHas)
		}
	}
}
