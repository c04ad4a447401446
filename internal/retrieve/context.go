package retrieve

import (
	"fmt"
	"strings"

	"github.com/agentmem/agentmem/pkg/events"
	"github.com/agentmem/agentmem/pkg/memory"
)

// contextHeader starts every built context.
const contextHeader = "Relevant memory (most relevant first):\n"

// buildContext renders the ranked entries, best first, as text to put into a prompt, within
// budget tokens (counted with counter). An entry that does not fit is skipped and smaller ones
// after it may still fit. It returns "" and 0 when budget is 0 or nothing fits.
func buildContext(entries []events.RetrievedEntry, budget int, counter memory.Counter) (string, int) {
	if budget <= 0 || len(entries) == 0 {
		return "", 0
	}
	var b strings.Builder
	used := counter.Count(contextHeader)
	if used > budget {
		return "", 0
	}
	b.WriteString(contextHeader)
	n := 0
	for _, e := range entries {
		line := contextLine(e)
		cost := counter.Count(line)
		if used+cost > budget {
			continue
		}
		b.WriteString(line)
		used += cost
		n++
	}
	if n == 0 {
		return "", 0
	}
	text := b.String()
	return text, counter.Count(text)
}

func contextLine(e events.RetrievedEntry) string {
	label := strings.ToLower(e.Type)
	switch memory.Type(e.Type) {
	case memory.Conversation, memory.ToolResult:
		if role, ok := e.Metadata["role"].(string); ok && role != "" {
			label = role
		}
		if tool, ok := e.Metadata["tool"].(string); ok && tool != "" {
			label += " " + tool
		}
	}
	content := strings.Join(strings.Fields(e.Content), " ")
	return fmt.Sprintf("- [%s, %s] %s\n", e.Timestamp.UTC().Format("2006-01-02 15:04 UTC"), label, content)
}
