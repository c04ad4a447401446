package fact

import (
	_ "embed"
	"encoding/json"
	"strings"

	"github.com/agentmem/agentmem/internal/llm"
)

var (
	//go:embed prompts/en/extract.txt
	promptEN string
	//go:embed prompts/zh/extract.txt
	promptZH string
)

// Prompt builds the LLM extraction request for a conversation. The system prompt
// (prompts/en/extract.txt or prompts/zh/extract.txt, chosen by the conversation's language)
// asks for the JSON object that [Parse] reads: durable facts only (preferences, identity,
// project settings, decisions), in the conversation's language, names never translated,
// nothing invented, nothing transient, no secrets or contact details. The user message lists
// the turns one JSON object per line, {"id","role","content"}, so that the answer can cite
// turn ids and no turn's text can pass for an instruction's structure.
//
// The request asks for JSON mode with temperature 0 (the same conversation should give the
// same facts) and is labelled Purpose "extract". It never fails.
func Prompt(turns []Turn) llm.Request {
	system, intro := promptEN, "Extract the durable facts about the user from this conversation. One turn per line:\n"
	if language(turns) == "zh" {
		system, intro = promptZH, "请从下面的对话中提取关于用户的长期事实。每行一个轮次：\n"
	}
	var b strings.Builder
	b.WriteString(intro)
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	for _, t := range turns {
		// Encoding a struct of strings into a strings.Builder cannot fail (invalid UTF-8
		// is replaced, not rejected).
		_ = enc.Encode(struct {
			ID      string `json:"id"`
			Role    string `json:"role"`
			Content string `json:"content"`
		}{t.ID, t.Role, t.Content})
	}
	temperature := 0.0
	return llm.Request{
		Messages: []llm.Message{
			{Role: "system", Content: strings.TrimSpace(system)},
			{Role: "user", Content: strings.TrimRight(b.String(), "\n")},
		},
		JSON:        true,
		Temperature: &temperature,
		Purpose:     "extract",
	}
}

// language returns "zh" when the conversation is mostly Chinese and "en" otherwise. The
// user's turns decide (the assistant may answer in another language); all turns when the
// user said nothing. A Han character counts as much as three Latin letters, about a word
// each way.
func language(turns []Turn) string {
	count := func(userOnly bool) (han, letters int) {
		for _, t := range turns {
			if userOnly && !strings.EqualFold(strings.TrimSpace(t.Role), "user") {
				continue
			}
			for _, r := range t.Content {
				switch {
				case isCJK(r):
					han++
				case r < 0x250 && ('a' <= r|0x20 && r|0x20 <= 'z' || r >= 0xC0):
					letters++
				}
			}
		}
		return han, letters
	}
	han, letters := count(true)
	if han == 0 && letters == 0 {
		han, letters = count(false)
	}
	if han > 0 && han*3 >= letters {
		return "zh"
	}
	return "en"
}
