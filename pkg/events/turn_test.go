package events

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestTurnValidate(t *testing.T) {
	tests := []struct {
		name  string
		turn  Turn
		field string // "" when valid
	}{
		{"user", Turn{Role: "user", Content: "hi", User: "u1"}, ""},
		{"assistant", Turn{Role: "assistant", Content: "hello"}, ""},
		{"system", Turn{Role: "system", Content: "be brief"}, ""},
		{"tool", Turn{Role: "tool", Content: `{"ok":true}`, Tool: "search"}, ""},
		{"unicode content", Turn{Role: "user", Content: "我喜欢 Go"}, ""},
		{"empty role", Turn{Content: "hi"}, "role"},
		{"unknown role", Turn{Role: "bot", Content: "hi"}, "role"},
		{"upper-case role", Turn{Role: "User", Content: "hi"}, "role"},
		{"empty content", Turn{Role: "user"}, "content"},
		{"blank content", Turn{Role: "user", Content: " \n\t "}, "content"},
		{"bad user", Turn{Role: "user", Content: "hi", User: "u.1"}, "user"},
		{"long user", Turn{Role: "user", Content: "hi", User: strings.Repeat("u", 65)}, "user"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.turn.Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Validate() = %v", err)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field || !errors.Is(err, ErrInvalid) {
				t.Fatalf("Validate() = %v, want a *FieldError for %s", err, tt.field)
			}
		})
	}
}

func TestSessionEndedValidate(t *testing.T) {
	if err := (SessionEnded{User: "u1"}).Validate(); err != nil {
		t.Error(err)
	}
	if err := (SessionEnded{}).Validate(); err != nil {
		t.Error(err)
	}
	var fe *FieldError
	if err := (SessionEnded{User: "u 1"}).Validate(); !errors.As(err, &fe) || fe.Field != "user" {
		t.Errorf("Validate() = %v", err)
	}
}

// jsonKeys returns the top-level keys v encodes to.
func jsonKeys(t *testing.T, v any) map[string]bool {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for k := range m {
		keys[k] = true
	}
	return keys
}

func assertKeys(t *testing.T, v any, want ...string) {
	t.Helper()
	got := jsonKeys(t, v)
	for _, k := range want {
		if !got[k] {
			t.Errorf("%T: JSON lacks %q (has %v)", v, k, got)
		}
		delete(got, k)
	}
	for k := range got {
		t.Errorf("%T: unexpected JSON key %q", v, k)
	}
}

func TestTurnJSON(t *testing.T) {
	assertKeys(t, Turn{Role: "tool", Content: "x", User: "u", Tool: "t", Metadata: map[string]any{"a": 1}},
		"role", "content", "user", "tool", "metadata")
	assertKeys(t, Turn{Role: "user", Content: "x"}, "role", "content")
	assertKeys(t, SessionEnded{}, "user")
}
