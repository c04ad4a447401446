package memory

import (
	"math"
	"strings"
	"testing"
)

func TestDefaultBudget(t *testing.T) {
	b := DefaultBudget()
	if err := b.Validate(); err != nil {
		t.Fatalf("DefaultBudget().Validate() = %v", err)
	}
	if got := b.Conversation(); got != 196700 {
		t.Errorf("Conversation() = %d, want 196700", got)
	}
	if got := b.Threshold(); got != 157360 {
		t.Errorf("Threshold() = %d, want 157360", got)
	}
	for tokens, want := range map[int]bool{0: false, 157359: false, 157360: true, 196700: true, 500000: true} {
		if got := b.NeedsCompression(tokens); got != want {
			t.Errorf("NeedsCompression(%d) = %v, want %v", tokens, got, want)
		}
	}
}

func TestBudgetThreshold(t *testing.T) {
	for _, tc := range []struct {
		name   string
		window int
		ratio  float64
		want   int
	}{
		{"exact product", 10, 0.8, 8},
		{"rounds up", 11, 0.8, 9}, // 8.8
		{"just above an integer rounds up", 1001, 0.5, 501},
		{"not an integer rounds up", 3, 0.7, 3}, // 0.7*3 = 2.0999999999999996 -> 3
		{"float noise ignored", 10, 0.3, 3},     // 0.3*10 = 3.0000000000000004 -> 3, not 4
		{"ratio 1", 196700, 1, 196700},
		{"tiny", 1, 0.8, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := Budget{ContextWindow: tc.window, PressureRatio: tc.ratio}
			if got := b.Threshold(); got != tc.want {
				t.Errorf("Threshold() = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestBudgetValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(*Budget)
		field string
	}{
		{"negative window", func(b *Budget) { b.ContextWindow = -1 }, "ContextWindow"},
		{"negative system", func(b *Budget) { b.System = -1 }, "System"},
		{"negative tools", func(b *Budget) { b.Tools = -5 }, "Tools"},
		{"negative response", func(b *Budget) { b.Response = -2 }, "Response"},
		{"zero ratio", func(b *Budget) { b.PressureRatio = 0 }, "PressureRatio"},
		{"negative ratio", func(b *Budget) { b.PressureRatio = -0.1 }, "PressureRatio"},
		{"ratio above one", func(b *Budget) { b.PressureRatio = 1.01 }, "PressureRatio"},
		{"NaN ratio", func(b *Budget) { b.PressureRatio = math.NaN() }, "PressureRatio"},
		{"no room for conversation", func(b *Budget) { b.ContextWindow = 3300 }, "ContextWindow"},
		{"zero window", func(b *Budget) { b.ContextWindow = 0 }, "ContextWindow"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := DefaultBudget()
			tc.edit(&b)
			err := b.Validate()
			if err == nil {
				t.Fatalf("Validate(%+v) = nil, want an error naming %s", b, tc.field)
			}
			if !strings.Contains(err.Error(), tc.field) {
				t.Errorf("error %q does not name %s", err, tc.field)
			}
		})
	}
	ok := Budget{ContextWindow: 3301, System: 500, Tools: 800, Response: 2000, PressureRatio: 1}
	if err := ok.Validate(); err != nil || ok.Conversation() != 1 {
		t.Errorf("one token of conversation: Validate() = %v, Conversation() = %d", err, ok.Conversation())
	}
}
