package memory

import (
	"fmt"
	"math"
)

// Budget splits a model's context window into the parts a prompt needs; what
// is left is the conversation budget that short-term memory must fit in.
type Budget struct {
	// ContextWindow is the model's context window in tokens (default 200000).
	ContextWindow int
	// System is reserved for the system prompt (default 500).
	System int
	// Tools is reserved for tool definitions (default 800).
	Tools int
	// Response is reserved for the model's answer (default 2000).
	Response int
	// PressureRatio is the fraction of the conversation budget at which
	// compression is requested (default 0.8).
	PressureRatio float64
}

// DefaultBudget returns the budget of the original design: a 200,000-token
// window minus 500 (system), 800 (tools) and 2,000 (response), leaving 196,700
// for conversation, with compression at 80 %.
func DefaultBudget() Budget {
	return Budget{
		ContextWindow: 200000,
		System:        500,
		Tools:         800,
		Response:      2000,
		PressureRatio: 0.8,
	}
}

// Conversation returns the tokens left for conversation: ContextWindow minus
// System, Tools and Response. It can be below 1 for an invalid budget; see
// Validate.
func (b Budget) Conversation() int {
	return b.ContextWindow - b.System - b.Tools - b.Response
}

// Threshold returns the number of conversation tokens at or above which
// compression is needed: ceil(PressureRatio * Conversation()), 157,360 by
// default. Floating-point noise is ignored, so 0.8 * 196,700 is 157,360 and
// not 157,361.
func (b Budget) Threshold() int {
	x := b.PressureRatio * float64(b.Conversation())
	if r := math.Round(x); math.Abs(x-r) <= 1e-9*math.Max(1, math.Abs(x)) {
		return int(r)
	}
	return int(math.Ceil(x))
}

// NeedsCompression reports whether tokens of conversation reach Threshold().
func (b Budget) NeedsCompression(tokens int) bool {
	return tokens >= b.Threshold()
}

// Validate returns an error naming the bad field when a size is negative,
// PressureRatio is outside (0, 1], or the reservations leave less than one
// token for conversation.
func (b Budget) Validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{
		{"ContextWindow", b.ContextWindow},
		{"System", b.System},
		{"Tools", b.Tools},
		{"Response", b.Response},
	} {
		if f.v < 0 {
			return fmt.Errorf("memory: budget %s is %d, must not be negative", f.name, f.v)
		}
	}
	if !(b.PressureRatio > 0 && b.PressureRatio <= 1) {
		return fmt.Errorf("memory: budget PressureRatio is %v, must be in (0, 1]", b.PressureRatio)
	}
	if b.Conversation() < 1 {
		return fmt.Errorf("memory: budget ContextWindow %d leaves %d tokens for conversation after System %d, Tools %d and Response %d; must leave at least 1",
			b.ContextWindow, b.Conversation(), b.System, b.Tools, b.Response)
	}
	return nil
}
