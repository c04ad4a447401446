package session

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/pkg/events"
)

func TestParseKey(t *testing.T) {
	tests := []struct {
		key    string
		want   Key
		errHas string
	}{
		{"acme.s1", Key{Tenant: "acme", Session: "s1"}, ""},
		{"t_1.S-2", Key{Tenant: "t_1", Session: "S-2"}, ""},
		{"acme", Key{}, "want two tokens"},
		{"acme.s1.chunk", Key{}, "want two tokens"},
		{"", Key{}, "want two tokens"},
		{".s1", Key{}, `tenant ""`},
		{"acme.", Key{}, `session ""`},
		{"a$b.s1", Key{}, `tenant "a$b"`},
		{"acme.s*", Key{}, `session "s*"`},
	}
	for _, tt := range tests {
		got, err := ParseKey(tt.key)
		if tt.errHas == "" {
			if err != nil || got != tt.want {
				t.Errorf("ParseKey(%q) = %+v, %v; want %+v", tt.key, got, err, tt.want)
			}
			if got.String() != tt.key {
				t.Errorf("ParseKey(%q).String() = %q", tt.key, got.String())
			}
			continue
		}
		if err == nil || !errors.Is(err, events.ErrInvalid) || !strings.Contains(err.Error(), tt.errHas) || got != (Key{}) {
			t.Errorf("ParseKey(%q) = %+v, %v; want ErrInvalid mentioning %q", tt.key, got, err, tt.errHas)
		}
	}
}

// A synchronous subscription of SyncQueueLen holds a whole batched reply (the headers and the
// end-of-batch message) even when its reader is slow: below that nats.go would drop messages as a
// slow consumer.
func TestSyncQueueHoldsABatch(t *testing.T) {
	if SyncQueueLen < headersPerRequest+1 {
		t.Fatalf("SyncQueueLen %d is shorter than a batched reply of %d messages", SyncQueueLen, headersPerRequest+1)
	}
}
