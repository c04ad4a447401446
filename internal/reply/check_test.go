package reply

import (
	"errors"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		to string
		ok bool
	}{
		{"_R_.aKPB66.RZ6aDL", true},
		{"_INBOX.abc.def", true},
		{"_INBOX_alpha.abc", true},
		{"", false},
		{"_R_", false},
		{"_INBOX", false},
		{"_INBOX_beta.abc", false},
		{"_INBOX_alphax.abc", false},
		{"$KV.AGENTMEM_SESSIONS.beta.s1", false},
		{"$JS.API.STREAM.DELETE.AGENTMEM_TURNS", false},
		{"memory.turns.beta.s1", false},
		{"memory.retrieve.beta", false},
		{"memory.facts.beta.u1", false},
		{"_R_x.abc", false},
		{"_INBOXES.abc", false},
	} {
		err := Check("alpha", tc.to)
		if (err == nil) != tc.ok {
			t.Errorf("Check(alpha, %q) = %v, want ok=%v", tc.to, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrRefused) {
			t.Errorf("Check(alpha, %q): %v does not wrap ErrRefused", tc.to, err)
		}
	}
}
