package summarize

import (
	"strings"
	"testing"

	"github.com/agentmem/agentmem/pkg/memory"
)

func TestLanguage(t *testing.T) {
	conv := func(texts ...string) []memory.Entry {
		var out []memory.Entry
		for _, s := range texts {
			out = append(out, memory.Entry{Type: memory.Conversation, Role: "user", Content: s})
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		entries []memory.Entry
		want    string
	}{
		{"empty", nil, English},
		{"no letters", conv("123 !!!"), English},
		{"english", conv("I prefer Go for backend services."), English},
		{"chinese", conv("我喜欢用 Go 写后端服务。"), Chinese},
		{"chinese with english terms", conv("帮我看看这个 Kubernetes deployment 的 readiness probe 为什么一直 failing"), Chinese},
		{"english with a chinese name", conv("My colleague 王伟 will review the pull request tomorrow morning."), English},
		{"japanese kanji counts as han", conv("東京へ行きます"), Chinese},
		{
			"tool output does not decide",
			append(conv("帮我运行测试，看看哪里失败了。"), memory.Entry{Type: memory.ToolResult, Role: "tool",
				Content: strings.Repeat("--- FAIL: TestSomething (0.00s) expected true got false\n", 50)}),
			Chinese,
		},
		{
			"only tool output",
			[]memory.Entry{{Type: memory.ToolResult, Role: "tool", Content: "error: file not found"}},
			English,
		},
		{
			"chinese summary first",
			append([]memory.Entry{{Type: memory.Summary, Content: MarkerChinese + "用户住在杭州，喜欢Go。"}}, conv("ok", "thanks")...),
			Chinese,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Language(tc.entries); got != tc.want {
				t.Errorf("Language = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestMarker(t *testing.T) {
	if Marker(Chinese) != "[历史对话摘要] " || Marker(English) != "[Conversation summary] " || Marker("fr") != MarkerEnglish {
		t.Error("markers changed")
	}
	for in, want := range map[string]string{
		"[历史对话摘要] 用户喜欢Go。":               "用户喜欢Go。",
		"  [Conversation summary]  text": "text",
		"no marker":                      "no marker",
	} {
		if got := stripMarker(in); got != want {
			t.Errorf("stripMarker(%q) = %q, want %q", in, got, want)
		}
	}
}
