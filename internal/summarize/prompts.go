package summarize

import (
	"embed"
	"fmt"
	"strings"
)

// prompts holds the system prompts, prompts/<language>/<step>.txt, where step is "map" or
// "reduce".
//
//go:embed prompts/*
var prompts embed.FS

// Steps of a compression.
const (
	stepMap    = "map"
	stepReduce = "reduce"
)

// systemPrompt returns the system prompt of a step in a language. The prompts are compiled in,
// so a missing one is a build mistake (the tests read every one).
func systemPrompt(language, step string) string {
	b, err := prompts.ReadFile("prompts/" + language + "/" + step + ".txt")
	if err != nil {
		panic(fmt.Sprintf("summarize: prompt %s/%s missing: %v", language, step, err))
	}
	return strings.TrimSpace(string(b))
}

// lengthHint says how long maxTokens tokens are, in the unit a writer of the language counts:
// about three quarters of a word per token in English; in Chinese one character per token,
// which stays under the cap by every counter in use.
func lengthHint(language string, maxTokens int) string {
	if language == Chinese {
		return fmt.Sprintf("不超过 %d 个 token（约 %d 个汉字）", maxTokens, maxTokens)
	}
	return fmt.Sprintf("at most %d tokens (about %d words)", maxTokens, max(maxTokens*3/4, 1))
}

// mapMessage is the user message of a map call: the group's formatted entries, positions first
// to last of total, and the cap. carries says that the first entry is the earlier summary.
func mapMessage(language string, lines []string, first, last, total int, carries bool, maxTokens int) string {
	var b strings.Builder
	if language == Chinese {
		fmt.Fprintf(&b, "对话记录（第 %d–%d 条，共 %d 条，按时间顺序）：\n\n", first, last, total)
	} else {
		fmt.Fprintf(&b, "Conversation entries %d–%d of %d, in order:\n\n", first, last, total)
	}
	for _, l := range lines {
		b.WriteString(l)
		b.WriteString("\n\n")
	}
	switch {
	case language == Chinese && carries:
		b.WriteString("第一条是此前对话的摘要，请把其中的内容延续下来。\n")
	case carries:
		b.WriteString("The first entry is the summary of the conversation before these entries: carry its content forward.\n")
	}
	if language == Chinese {
		fmt.Fprintf(&b, "请用中文写出这部分对话的摘要，%s。", lengthHint(language, maxTokens))
	} else {
		fmt.Fprintf(&b, "Write the summary of these entries in English, %s.", lengthHint(language, maxTokens))
	}
	return b.String()
}

// reduceMessage is the user message of the reduce call: the partial summaries in order and the
// cap.
func reduceMessage(language string, partials []string, maxTokens int) string {
	var b strings.Builder
	n := len(partials)
	if language == Chinese {
		fmt.Fprintf(&b, "同一段对话按时间顺序分成 %d 部分的摘要：\n\n", n)
	} else {
		fmt.Fprintf(&b, "Summaries of the %d consecutive parts of one conversation, in order:\n\n", n)
	}
	for i, p := range partials {
		if language == Chinese {
			fmt.Fprintf(&b, "--- 第 %d 部分（共 %d 部分）---\n", i+1, n)
		} else {
			fmt.Fprintf(&b, "--- Part %d of %d ---\n", i+1, n)
		}
		b.WriteString(p)
		b.WriteString("\n\n")
	}
	if language == Chinese {
		fmt.Fprintf(&b, "请把它们合并成一份中文摘要，%s。", lengthHint(language, maxTokens))
	} else {
		fmt.Fprintf(&b, "Merge them into one summary in English, %s.", lengthHint(language, maxTokens))
	}
	return b.String()
}
