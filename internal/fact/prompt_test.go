package fact

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestPromptEnglish(t *testing.T) {
	turns := []Turn{
		{ID: "turn-1", Role: "user", Content: "I live in Paris and I love Go."},
		{ID: "turn-2", Role: "assistant", Content: "Paris is lovely."},
	}
	req := Prompt(turns)
	if !req.JSON || req.Purpose != "extract" {
		t.Errorf("JSON = %v, Purpose = %q; want JSON mode and purpose extract", req.JSON, req.Purpose)
	}
	if req.Temperature == nil || *req.Temperature != 0 {
		t.Errorf("Temperature = %v, want 0", req.Temperature)
	}
	if len(req.Messages) != 2 || req.Messages[0].Role != "system" || req.Messages[1].Role != "user" {
		t.Fatalf("messages = %+v, want system then user", req.Messages)
	}
	system, user := req.Messages[0].Content, req.Messages[1].Content
	if system != strings.TrimSpace(promptEN) {
		t.Error("English conversation did not get the English prompt")
	}
	for _, s := range []string{`"facts"`, `"content"`, `"category"`, `"key"`, `"confidence"`, `"turns"`, "never translate", "Never invent"} {
		if !strings.Contains(system, s) {
			t.Errorf("system prompt lacks %q", s)
		}
	}
	// One JSON object per turn, ids and roles included.
	lines := strings.Split(user, "\n")[1:]
	if len(lines) != len(turns) {
		t.Fatalf("user message has %d turn lines, want %d:\n%s", len(lines), len(turns), user)
	}
	for i, line := range lines {
		var got struct{ ID, Role, Content string }
		if err := json.Unmarshal([]byte(line), &got); err != nil {
			t.Fatalf("turn line %q: %v", line, err)
		}
		if got.ID != turns[i].ID || got.Role != turns[i].Role || got.Content != turns[i].Content {
			t.Errorf("turn line %d = %+v, want %+v", i, got, turns[i])
		}
	}
}

func TestPromptChinese(t *testing.T) {
	turns := []Turn{
		{ID: "c1", Role: "user", Content: "我最喜欢的编程语言是 Go，我住在北京。"},
		{ID: "c2", Role: "assistant", Content: "Great, Go is a nice language and Beijing is a big city with a lot to see."},
		{ID: "c3", Role: "user", Content: "对，我们的项目用 Go <script>。"},
	}
	req := Prompt(turns)
	system, user := req.Messages[0].Content, req.Messages[1].Content
	if system != strings.TrimSpace(promptZH) {
		t.Error("Chinese conversation did not get the Chinese prompt")
	}
	if !strings.Contains(system, "绝不翻译") || !strings.Contains(system, `"facts"`) {
		t.Error("Chinese prompt lacks the no-translation rule or the answer shape")
	}
	for _, id := range []string{`"id":"c1"`, `"id":"c2"`, `"id":"c3"`, "我最喜欢的编程语言是 Go", "<script>"} {
		if !strings.Contains(user, id) {
			t.Errorf("user message lacks %q:\n%s", id, user)
		}
	}
	if !req.JSON || req.Purpose != "extract" {
		t.Errorf("JSON = %v, Purpose = %q", req.JSON, req.Purpose)
	}
}

func TestLanguage(t *testing.T) {
	tests := []struct {
		turns []Turn
		want  string
	}{
		{nil, "en"},
		{[]Turn{{Role: "user", Content: "I love 北京烤鸭 very much, it is my favourite dish"}}, "en"},
		{[]Turn{{Role: "user", Content: "我们用 Go 写后端"}}, "zh"},
		{[]Turn{{Role: "user", Content: "你好"}, {Role: "assistant", Content: "Hello! How can I help you today? Ask me anything."}}, "zh"},
		{[]Turn{{Role: "assistant", Content: "你好，我可以帮你什么？"}}, "zh"},
	}
	for _, tt := range tests {
		if got := language(tt.turns); got != tt.want {
			t.Errorf("language(%+v) = %q, want %q", tt.turns, got, tt.want)
		}
	}
}

// TestPromptParseRoundTrip: the ids Prompt lists are the ids Parse accepts.
func TestPromptParseRoundTrip(t *testing.T) {
	turns := []Turn{{ID: "x-1", Role: "user", Content: "I prefer tabs."}}
	if !strings.Contains(Prompt(turns).Messages[1].Content, `"id":"x-1"`) {
		t.Fatal("turn id missing from the prompt")
	}
	got, err := Parse(`{"facts":[{"content":"The user prefers tabs","category":"preference","confidence":0.9,"turns":["x-1"]}]}`, turns)
	if err != nil || len(got) != 1 || got[0].Provenance[0] != "x-1" {
		t.Errorf("Parse = %+v, %v", got, err)
	}
}
