package summarize

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentmem/agentmem/pkg/memory"
)

func TestCutTool(t *testing.T) {
	long := func(prefix string, lines int) string {
		var b strings.Builder
		b.WriteString(prefix)
		for i := range lines {
			fmt.Fprintf(&b, "line %04d of the output\n", i)
		}
		return strings.TrimSuffix(b.String(), "\n")
	}
	tool := func(content string, md map[string]any) memory.Entry {
		return memory.Entry{Type: memory.ToolResult, Role: "tool", Content: content, Metadata: md}
	}
	bash := map[string]any{"tool": "bash"}
	for _, tc := range []struct {
		name       string
		e          memory.Entry
		head, tail int
		prefix     string   // the result starts with it
		has, lacks []string // substrings that must and must not be there
		cut        bool
	}{
		{
			name: "short output kept whole", e: tool("$ date\nSat Mar 14 09:00:00 UTC 2026", bash), head: 600, tail: 400,
			prefix: "tool (bash): $ date\nSat Mar 14 09:00:00 UTC 2026",
		},
		{
			name: "shell prompt command", e: tool(long("$ go test ./...\n", 200), bash), head: 600, tail: 400,
			prefix: "tool (bash): $ go test ./...\nline 0000 of the output\n",
			has:    []string{"line 0199 of the output", "line 0020 of the output"},
			lacks:  []string{"line 0100 of the output"}, cut: true,
		},
		{
			name: "sql prompt command", e: tool(long("> SELECT count(*) FROM orders WHERE status = 'open' AND created_at > now() - interval '7 days' GROUP BY region\n", 200), map[string]any{"tool": "psql"}), head: 100, tail: 100,
			prefix: "tool (psql): > SELECT count(*) FROM orders", cut: true,
		},
		{
			name: "short first line is the command", e: tool(long("ls -la /var/log\n", 200), nil), head: 100, tail: 100,
			prefix: "tool: ls -la /var/log\nline 0000", cut: true,
		},
		{
			name: "long first line is output", e: tool(strings.Repeat("x", 100)+"\n"+long("", 200), bash), head: 100, tail: 100,
			prefix: "tool (bash): " + strings.Repeat("x", 100) + "\n", cut: true,
		},
		{
			name: "command from metadata", e: tool(long("", 200), map[string]any{"tool": "http", "command": "GET https://example.com/api"}), head: 100, tail: 100,
			prefix: "tool (http): GET https://example.com/api\nline 0000", cut: true,
		},
		{
			name: "chinese output cut at rune boundaries", e: tool(strings.Repeat("结果正常，没有错误", 300), bash), head: 50, tail: 30,
			prefix: "tool (bash): " + string([]rune(strings.Repeat("结果正常，没有错误", 10))[:50]) + "\n… [2620 chars cut] …\n", cut: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := CutTool(tc.e, tc.head, tc.tail)
			if !utf8.ValidString(got) {
				t.Fatalf("invalid UTF-8: %q", got)
			}
			if !strings.HasPrefix(got, tc.prefix) {
				t.Errorf("got %.200q…, want prefix %q", got, tc.prefix)
			}
			for _, s := range tc.has {
				if !strings.Contains(got, s) {
					t.Errorf("lacks %q", s)
				}
			}
			for _, s := range tc.lacks {
				if strings.Contains(got, s) {
					t.Errorf("keeps %q", s)
				}
			}
			if cut := strings.Contains(got, " chars cut] …"); cut != tc.cut {
				t.Errorf("cut = %v, want %v: %q", cut, tc.cut, got)
			}
			if tc.cut {
				// What is kept is about head+tail plus the label and command.
				if n := utf8.RuneCountInString(got); n > tc.head+tc.tail+200+60 {
					t.Errorf("%d runes kept", n)
				}
			}
		})
	}
}

func TestCutMiddleCounts(t *testing.T) {
	s := strings.Repeat("0123456789", 100) // no line breaks: the cut is exact
	got := cutMiddle(s, 120, 80)
	want := s[:120] + "\n… [800 chars cut] …\n" + s[920:]
	if got != want {
		t.Errorf("got %q", got)
	}
	if got := cutMiddle(s[:220], 120, 80); got != s[:220] {
		t.Error("cut 20 runes: the marker costs more than it saves")
	}
	if got := cutMiddle(s, -1, -1); got != "\n… [1000 chars cut] …\n" {
		t.Errorf("negative head and tail: %q", got)
	}
}

func TestConversationCutLessThanTools(t *testing.T) {
	s := New(Config{}, nil, "")
	content := strings.Repeat("The user talks about their project in detail. ", 60) // ~2,800 chars
	talk := s.entryText(memory.Entry{Type: memory.Conversation, Role: "user", Content: content})
	tool := s.entryText(memory.Entry{Type: memory.ToolResult, Role: "tool", Content: content})
	if strings.Contains(talk, "chars cut") || !strings.Contains(tool, "chars cut") {
		t.Errorf("conversation cut: %v, tool cut: %v", strings.Contains(talk, "chars cut"), strings.Contains(tool, "chars cut"))
	}
	huge := s.entryText(memory.Entry{Type: memory.Conversation, Role: "user", Content: strings.Repeat(content, 3)})
	if !strings.Contains(huge, "chars cut") || utf8.RuneCountInString(huge) > DefaultConversationChars+60 {
		t.Errorf("a conversation entry of %d runes kept %d", 3*len(content), utf8.RuneCountInString(huge))
	}
	summary := s.entryText(memory.Entry{Type: memory.Summary, Content: MarkerEnglish + strings.Repeat(content, 3)})
	if strings.Contains(summary, "chars cut") {
		t.Error("a summary was cut")
	}
}
