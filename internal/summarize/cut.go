package summarize

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/agentmem/agentmem/pkg/memory"
)

// Limits of the command line CutTool keeps.
const (
	// shortLine is the length (in runes) up to which a first line counts as a command even
	// without a prompt sign.
	shortLine = 80
	// maxCommand bounds the command line kept.
	maxCommand = 200
	// minCut is the fewest runes worth cutting: cutting less would save less than the marker
	// costs.
	minCut = 32
)

// CutTool returns the text of tool result e as the summariser sees it: "tool (name): " (or
// "tool: " when e.Metadata has no "tool" string), then the command, then the output with only
// its first head and last tail characters (runes) kept and "… [N chars cut] …" on a line of
// its own in between. The command is e.Metadata["command"] when it is a string, else the first
// line of a multi-line output when it looks like one: it starts with "$ " or "> ", or it is at
// most 80 characters long; the command is kept whole up to 200 characters. Output that is at
// most head+tail characters long (or only a little longer) is kept whole. Negative head or tail
// count as 0. It never fails.
func CutTool(e memory.Entry, head, tail int) string {
	label, command, output := toolParts(e, head, tail)
	var b strings.Builder
	b.WriteString(label)
	if command != "" {
		b.WriteString(command)
		if output != "" {
			b.WriteByte('\n')
		}
	}
	b.WriteString(output)
	return b.String()
}

// toolParts returns the label, the command (possibly empty) and the cut output of tool result e.
func toolParts(e memory.Entry, head, tail int) (label, command, output string) {
	label = "tool: "
	if name, ok := e.Metadata["tool"].(string); ok && strings.TrimSpace(name) != "" {
		label = "tool (" + oneLine(name) + "): "
	}
	output = strings.TrimSpace(e.Content)
	if cmd, ok := e.Metadata["command"].(string); ok && strings.TrimSpace(cmd) != "" {
		command = oneLine(cmd)
	} else if first, rest, multi := strings.Cut(output, "\n"); multi && looksLikeCommand(first) {
		command, output = strings.TrimSpace(first), strings.TrimSpace(rest)
	}
	return label, truncate(command, maxCommand), cutMiddle(output, head, tail)
}

// truncate returns s cut to its first n runes followed by "…" when it is longer than n runes.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return s[:byteOffset(s, n)] + "…"
}

// looksLikeCommand reports whether the first line of a tool's output is probably the command
// that produced it.
func looksLikeCommand(line string) bool {
	line = strings.TrimSpace(line)
	if line == "" {
		return false
	}
	return strings.HasPrefix(line, "$ ") || strings.HasPrefix(line, "> ") ||
		utf8.RuneCountInString(line) <= shortLine
}

// oneLine joins the lines of s with spaces.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// cutMiddle keeps the first head and the last tail runes of s with a cut marker line between
// them, when that removes at least minCut runes; otherwise it returns s. The cut moves to a line
// break when there is one in the last fifth of the head or the first fifth of the tail, so that
// the lines kept are whole.
func cutMiddle(s string, head, tail int) string {
	head, tail = max(head, 0), max(tail, 0)
	n := utf8.RuneCountInString(s)
	if n-head-tail < minCut {
		return s
	}
	headEnd := byteOffset(s, head)
	if nl := strings.LastIndexByte(s[:headEnd], '\n'); nl >= 0 && nl >= byteOffset(s, head-head/5) {
		headEnd = nl
	}
	tailStart := byteOffset(s, n-tail)
	if nl := strings.IndexByte(s[tailStart:], '\n'); nl >= 0 && tailStart+nl < byteOffset(s, n-tail+tail/5) {
		tailStart += nl + 1
	}
	cut := utf8.RuneCountInString(s[headEnd:tailStart])
	return strings.TrimRight(s[:headEnd], "\n") + "\n" + cutMarker(cut) + "\n" + strings.TrimLeft(s[tailStart:], "\n")
}

// byteOffset returns the byte offset of the rune with index runes in s (len(s) past the end).
func byteOffset(s string, runes int) int {
	i := 0
	for off := range s {
		if i == runes {
			return off
		}
		i++
	}
	return len(s)
}

// cutMarker is the line that stands for n cut characters.
func cutMarker(n int) string { return fmt.Sprintf("… [%d chars cut] …", n) }

var cutMarkerRE = regexp.MustCompile(`^… \[\d+ chars cut\] …$`)

// isCutMarker reports whether a sentence is a cut marker line.
func isCutMarker(s string) bool { return cutMarkerRE.MatchString(s) }

// roleLabel returns the label of a non-tool entry ("user: ", "earlier summary: ", …).
func roleLabel(e memory.Entry) string {
	switch {
	case e.Type == memory.Summary:
		return "earlier summary: "
	case e.Type == memory.Fact:
		return "fact: "
	case e.Role != "":
		return oneLine(e.Role) + ": "
	default:
		return "message: "
	}
}

// entryText returns the text of e as the summariser sees it, without position or time: its
// label, then its content, cut (tool results hard, conversation lightly, summaries never).
func (s *Summarizer) entryText(e memory.Entry) string {
	switch {
	case isTool(e):
		return CutTool(e, s.cfg.ToolHeadChars, s.cfg.ToolTailChars)
	case e.Type == memory.Summary:
		return roleLabel(e) + stripMarker(e.Content)
	default:
		head, tail := s.cfg.conversationCut()
		return roleLabel(e) + cutMiddle(strings.TrimSpace(e.Content), head, tail)
	}
}

// formatEntry returns entry e at position pos (1-based) as the LLM sees it: "[pos] " and, when
// e has a timestamp, its UTC minute, then entryText.
func (s *Summarizer) formatEntry(pos int, e memory.Entry) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[%d] ", pos)
	if !e.Timestamp.IsZero() {
		b.WriteString(e.Timestamp.UTC().Format("2006-01-02 15:04 "))
	}
	b.WriteString(s.entryText(e))
	return b.String()
}
