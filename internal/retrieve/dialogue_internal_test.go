package retrieve

import (
	"strings"
	"testing"

	"github.com/agentmem/agentmem/internal/rank"
)

// TestDialogueDoc: a turn's document gets its speaker from metadata "name" or "speaker", and
// the previous turn as context (and its speaker as addressee) only when another speaker said it:
// another name, or without names another role.
func TestDialogueDoc(t *testing.T) {
	type turn struct {
		role string
		md   map[string]any
		text string
	}
	type want struct{ speaker, context, addressee string }
	tests := []struct {
		name  string
		turns []turn
		want  []want
	}{
		{"named speakers", []turn{
			{"user", map[string]any{"name": "Calvin"}, "Did you learn it alone?"},
			{"user", map[string]any{"speaker": " Dave "}, "Yes."},
			{"user", map[string]any{"name": "Dave"}, "At twelve."},
		}, []want{{"Calvin", "", ""}, {"Dave", "Did you learn it alone?", "Calvin"}, {"Dave", "", ""}}},
		{"names opening the content", []turn{
			{"user", nil, "Calvin: Did you learn it alone?"},
			{"user", nil, "Dave: Yes."},
			{"user", map[string]any{"name": "David"}, "Dave: At twelve."},
			{"user", nil, "小明：你去过长城吗？"},
		}, []want{{"Calvin", "", ""}, {"Dave", "Calvin: Did you learn it alone?", "Calvin"}, {"David", "Dave: Yes.", "Dave"},
			{"小明", "Dave: At twelve.", "David"}}},
		{"roles only", []turn{
			{"user", nil, "Which plant needs least water?"},
			{"assistant", nil, "A cactus."},
			{"assistant", nil, "Or a succulent."},
			{"user", map[string]any{"name": 7}, "Thanks!"},
		}, []want{{"", "", ""}, {"", "Which plant needs least water?", ""}, {"", "", ""}, {"", "Or a succulent.", ""}}},
	}
	for _, tt := range tests {
		var last lastTurn
		for i, tr := range tt.turns {
			d := last.dialogueDoc(rank.Doc{ID: "t", Text: tr.text, Role: tr.role}, tr.md)
			if got := (want{d.Speaker, d.Context, d.Addressee}); got != tt.want[i] {
				t.Errorf("%s, turn %d: got %+v, want %+v", tt.name, i, got, tt.want[i])
			}
		}
	}
	// A long turn is kept as the next one's context by its end only, from a character's start.
	var last lastTurn
	long := strings.Repeat("数", maxTail) + "?"
	last.dialogueDoc(rank.Doc{Text: long, Role: "assistant"}, nil)
	if n := len(last.tail); n > maxTail || !strings.HasSuffix(long, last.tail) || !strings.HasPrefix(last.tail, "数") {
		t.Errorf("tail of a long turn: %d bytes, %.12q…", n, last.tail)
	}
}

// TestPrefixName: a name opening a turn's content is its speaker's; a label, a sentence or a
// colon later in the text is not.
func TestPrefixName(t *testing.T) {
	for content, want := range map[string]string{
		"Dave: I love hiking":           "Dave",
		"Mary Ann: we met in 2019":      "Mary Ann",
		"O'Brien:  hello":               "O'Brien",
		"小明：我喜欢爬山":                      "小明",
		"欧阳娜娜: 你好":                      "欧阳娜娜",
		"Dave:":                         "",
		"Note: buy milk":                "",
		"Q: where?":                     "",
		"USER: hi":                      "",
		"我觉得：挺好":                        "",
		"dave: lower case":              "",
		"The Three Tall Men: a story":   "",
		"I said: no":                    "",
		"Meeting at 10:30 tomorrow":     "",
		"Remember this: the code is 42": "",
		"https://example.com":           "",
		"":                              "",
	} {
		if got := prefixName(content); got != want {
			t.Errorf("prefixName(%q) = %q, want %q", content, got, want)
		}
	}
}
