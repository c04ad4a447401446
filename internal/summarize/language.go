package summarize

import (
	"strings"
	"unicode"

	"github.com/agentmem/agentmem/pkg/memory"
)

// Languages a summary is written in.
const (
	Chinese = "zh"
	English = "en"
)

// Markers that start a summary's content, by language.
const (
	MarkerChinese = "[历史对话摘要] "
	MarkerEnglish = "[Conversation summary] "
)

// Marker returns the marker that starts a summary in language: MarkerChinese for "zh",
// MarkerEnglish for anything else.
func Marker(language string) string {
	if language == Chinese {
		return MarkerChinese
	}
	return MarkerEnglish
}

// stripMarker removes a summary marker (of either language) and the spaces around it from the
// start of text.
func stripMarker(text string) string {
	t := strings.TrimSpace(text)
	for _, m := range []string{MarkerChinese, MarkerEnglish} {
		if rest, ok := strings.CutPrefix(t, strings.TrimSpace(m)); ok {
			return strings.TrimSpace(rest)
		}
	}
	return t
}

// chineseShare is the share of Han characters among the letters from which a conversation is
// taken to be Chinese. Chinese packs several times more meaning into a character than English
// into a letter, so a fifth is already a conversation held mostly in Chinese with English
// names, code and terms mixed in.
const chineseShare = 0.2

// Language returns "zh" when Han characters are at least a fifth of the letters of the
// conversation text, and "en" otherwise (also when there are no letters). The conversation text
// is every entry but tool results, whose output (code, logs, JSON) says nothing about the
// language the user speaks; when there is nothing else, tool results count too. It never fails.
func Language(entries []memory.Entry) string {
	var han, letters int
	count := func(text string) {
		for _, r := range text {
			if unicode.IsLetter(r) {
				letters++
				if unicode.Is(unicode.Han, r) {
					han++
				}
			}
		}
	}
	for _, e := range entries {
		if !isTool(e) {
			count(stripMarker(e.Content))
		}
	}
	if letters == 0 {
		for _, e := range entries {
			count(e.Content)
		}
	}
	if letters > 0 && float64(han) >= chineseShare*float64(letters) {
		return Chinese
	}
	return English
}

// isTool reports whether e is a tool result.
func isTool(e memory.Entry) bool {
	return e.Type == memory.ToolResult || (e.Type == "" && e.Role == "tool")
}
