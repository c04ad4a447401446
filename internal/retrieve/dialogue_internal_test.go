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
		{"names from how they address each other", []turn{
			{"user", nil, "Hey Mel! Good to see you."},
			{"assistant", nil, "Hi Caroline! How was the support group?"},
			{"user", nil, "It was powerful. I learned so much."},
			{"assistant", nil, "That's awesome, Caroline! I painted a sunrise last week."},
			{"user", map[string]any{"name": "Carrie"}, "Wow."},
		}, []want{{"", "", ""}, {"Mel", "Hey Mel! Good to see you.", ""}, {"Caroline", "Hi Caroline! How was the support group?", "Mel"},
			{"Mel", "It was powerful. I learned so much.", "Caroline"},
			{"Carrie", "That's awesome, Caroline! I painted a sunrise last week.", "Mel"}}},
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

// TestAddressed: the name a turn calls its listener by, after a greeting or before an
// exclamation or question mark; not a word that merely follows, nor a place in a list. In
// Chinese only after a greeting, by two or three Han characters that are no common sentence
// opening nor a group or kin word.
func TestAddressed(t *testing.T) {
	for text, want := range map[string]string{
		"Hey Mel! Good to see you.":           "Mel",
		"Thanks, Dave, that helps.":           "Dave",
		"That's awesome, Dave!":               "Dave",
		"How was the trip, Mel?":              "Mel",
		"Congratulations Jon, well deserved.": "Jon",
		"Hi there! What's up?":                "",
		"Hey! How are you?":                   "",
		"Oh my God!":                          "",
		"I went to London, Paris and Rome.":   "",
		"Thanks, I will!":                     "",
		"Hithere Dave":                        "",
		"We visited Rome, Italy!":             "Italy", // a limit: a place closing an exclamation reads as a name
		"I told her: really, NASA?":           "",
		"":                                    "",
		"嗨，小明！好久不见。":                          "小明",
		"你好小红，最近怎么样？":                         "小红",
		"谢谢你，王小二！":                            "王小二",
		"谢谢你，欧阳娜娜！":                           "", // four characters: not told from a phrase
		"你好，我想问一个问题。":                         "",
		"嗨，大家好！":                              "",
		"你好！":                                 "",
		"谢谢，这很有用。":                            "",
		"好的，没问题！":                             "",
	} {
		if got := addressed(text); got != want {
			t.Errorf("addressed(%q) = %q, want %q", text, got, want)
		}
	}
}

// BenchmarkDialogueDoc: the speaker rules on a turn of 600 bytes with no name, as most turns of
// an agent's user are (prefixName, and addressed while no role is named).
func BenchmarkDialogueDoc(b *testing.B) {
	text := strings.Repeat("I'm looking for some recommendations on throw pillows for my couch, any ideas? ", 8)
	var last lastTurn
	for i := 0; b.Loop(); i++ {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		last.dialogueDoc(rank.Doc{ID: "t", Text: text, Role: role}, nil)
	}
}
