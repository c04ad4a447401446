package summarize

import (
	"fmt"

	"github.com/agentmem/agentmem/pkg/memory"
)

// Config configures a Summarizer. Zero fields take their defaults.
type Config struct {
	// GroupSize is the number of entries summarised by one map call (default 5).
	GroupSize int
	// Concurrency bounds the map calls in flight (default 4).
	Concurrency int
	// ToolHeadChars and ToolTailChars are the characters (runes) of a tool result's output kept
	// before and after the cut (default 600 and 400).
	ToolHeadChars, ToolTailChars int
	// ConversationChars is the characters (runes) of a conversation entry kept, three fifths from
	// its head and two fifths from its tail (default 4,000). Summaries are never cut.
	ConversationChars int
	// Counter counts tokens (default memory.EstimateCounter{}).
	Counter memory.Counter
}

// Defaults of Config.
const (
	DefaultGroupSize         = 5
	DefaultConcurrency       = 4
	DefaultToolHeadChars     = 600
	DefaultToolTailChars     = 400
	DefaultConversationChars = 4000
)

// withDefaults fills in every zero or negative field (Validate reports negative ones).
func (c Config) withDefaults() Config {
	if c.GroupSize <= 0 {
		c.GroupSize = DefaultGroupSize
	}
	if c.Concurrency <= 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.ToolHeadChars <= 0 {
		c.ToolHeadChars = DefaultToolHeadChars
	}
	if c.ToolTailChars <= 0 {
		c.ToolTailChars = DefaultToolTailChars
	}
	if c.ConversationChars <= 0 {
		c.ConversationChars = DefaultConversationChars
	}
	if c.Counter == nil {
		c.Counter = memory.EstimateCounter{}
	}
	return c
}

// Validate names the first field that cannot work: every number must be zero (the default) or
// positive.
func (c Config) Validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{
		{"GroupSize", c.GroupSize},
		{"Concurrency", c.Concurrency},
		{"ToolHeadChars", c.ToolHeadChars},
		{"ToolTailChars", c.ToolTailChars},
		{"ConversationChars", c.ConversationChars},
	} {
		if f.v < 0 {
			return fmt.Errorf("summarize: %s must not be negative (got %d)", f.name, f.v)
		}
	}
	return nil
}

// conversationCut returns the head and tail kept of a conversation entry.
func (c Config) conversationCut() (head, tail int) {
	head = c.ConversationChars * 3 / 5
	return head, c.ConversationChars - head
}
