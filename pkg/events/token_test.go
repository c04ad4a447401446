package events

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateToken(t *testing.T) {
	tests := []struct {
		name, value string
		ok          bool
	}{
		{"simple", "acme", true},
		{"all classes", "Az09_-", true},
		{"64 chars", strings.Repeat("a", 64), true},
		{"single", "x", true},
		{"empty", "", false},
		{"65 chars", strings.Repeat("a", 65), false},
		{"dot", "a.b", false},
		{"space", "a b", false},
		{"wildcard", "*", false},
		{"gt", ">", false},
		{"unicode", "tenänt", false},
		{"cjk", "测试", false},
		{"slash", "a/b", false},
		{"nul", "a\x00b", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateToken("tenant", tt.value)
			if (err == nil) != tt.ok {
				t.Fatalf("ValidateToken(%q) = %v, want ok=%v", tt.value, err, tt.ok)
			}
			if err == nil {
				return
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v does not wrap ErrInvalid", err)
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != "tenant" {
				t.Errorf("error %v is not a *FieldError for tenant", err)
			}
		})
	}
}

func TestFieldErrorMessage(t *testing.T) {
	err := ValidateToken("tenant", "a.b")
	if got, want := err.Error(), `tenant "a.b": must match [A-Za-z0-9_-]{1,64}`; got != want {
		t.Errorf("Error() = %s, want %s", got, want)
	}
	plain := &FieldError{Field: "limit", Message: "must be within 1-200"}
	if got, want := plain.Error(), "limit: must be within 1-200"; got != want {
		t.Errorf("Error() = %s, want %s", got, want)
	}
	if !errors.Is(plain, ErrInvalid) {
		t.Error("FieldError does not wrap ErrInvalid")
	}
	bare := &FieldError{Message: "no field"}
	if got := bare.Error(); got != "no field" {
		t.Errorf("Error() = %s, want %q", got, "no field")
	}
}

func TestFieldErrorTruncatesValue(t *testing.T) {
	long := strings.Repeat("ü", 200)
	msg := ValidateToken("session", long).Error()
	want := `session "` + strings.Repeat("ü", 80) + `…": must match`
	if !strings.HasPrefix(msg, want) {
		t.Errorf("Error() = %s, want prefix %s", msg, want)
	}
	// Control characters are escaped, not printed.
	msg = ValidateToken("user", "a\nb").Error()
	if !strings.Contains(msg, `"a\nb"`) {
		t.Errorf("Error() = %s, want the value escaped", msg)
	}
}
