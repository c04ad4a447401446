package rank

import (
	"fmt"
	"slices"
	"testing"
)

// chat is a conversation between two named speakers, in English and in Chinese, with other
// sessions as background, for the dialogue fields (Context, Speaker, Addressee).
func chat(lang string) []Doc {
	type turn struct{ speaker, text string }
	sessions := map[string][]turn{
		"en": {
			{"Calvin", "Did your brother teach you to play the guitar?"},
			{"Dave", "No, I learned on my own as a kid."},
			{"Calvin", "That's awesome, Dave! I wish I had your hiking pictures too."},
			{"Dave", "Thanks! Last weekend I went hiking in the mountains again."},
		},
		"zh": {
			{"小张", "你哥哥教过你弹吉他吗？"},
			{"小明", "没有，我是自己学会的。"},
			{"小张", "太厉害了，小明！你上周爬山的照片真好看。"},
			{"小明", "谢谢！这周末我又去爬山，风景很美。"},
		},
	}
	var docs []Doc
	var last *Doc
	for i, tr := range sessions[lang] {
		d := Doc{ID: fmt.Sprintf("%s-%d", lang, i), Text: tr.text, Group: lang + "-chat", Pos: i, Role: "user", Speaker: tr.speaker, Kind: "turn"}
		if last != nil && last.Speaker != d.Speaker {
			d.Context, d.Addressee = last.Text, last.Speaker
		}
		docs = append(docs, d)
		last = &docs[len(docs)-1]
	}
	// Background: other sessions, so that the statistics are not those of four turns.
	for i, text := range []string{
		"I bought a new guitar amplifier yesterday", "My brother lives in Berlin",
		"We played chess in the park", "The mountains were covered in snow",
		"我哥哥住在北京", "我们昨天在公园下棋", "山上全是雪", "我买了一个新的吉他音箱",
	} {
		docs = append(docs, Doc{ID: fmt.Sprintf("bg-%d", i), Text: text, Group: fmt.Sprintf("bg-%d", i), Role: "user", Kind: "turn"})
	}
	return docs
}

func rankOf(hits []Hit, id string) int {
	return slices.IndexFunc(hits, func(h Hit) bool { return h.ID == id })
}

// A reply that shares no word with the question is found by the words of the turn it answers.
func TestContextFindsReply(t *testing.T) {
	for lang, query := range map[string]string{"en": "Did Dave's brother teach him to play guitar?", "zh": "小明的哥哥教他弹吉他吗"} {
		docs := chat(lang)
		reply := lang + "-1"
		ix := NewIndex(Config{})
		ix.Add(docs...)
		hits := ix.Search(query, 10)
		if r := rankOf(hits, reply); r < 0 || r > 2 {
			t.Errorf("%s: the reply %s ranks %d in %v, want among the first three", lang, reply, r, ids(hits))
		}
		off := NewIndex(Config{Context: Off, Speaker: Off})
		off.Add(docs...)
		if r := rankOf(off.Search(query, 10), reply); r >= 0 {
			t.Errorf("%s: without the context field the reply is found (rank %d): the test shows nothing", lang, r)
		}
	}
}

// A question about a person ranks the person's own turn above another's turn that addresses
// the person by name.
func TestSpeakerOwnTurnFirst(t *testing.T) {
	for lang, c := range map[string]struct{ query, own, addressing string }{
		"en": {"Where did Dave go hiking?", "en-3", "en-2"},
		"zh": {"小明去哪里爬山了", "zh-3", "zh-2"},
	} {
		docs := chat(lang)
		rankWith := func(cfg Config) []Hit {
			ix := NewIndex(cfg)
			ix.Add(docs...)
			return ix.Search(c.query, 10)
		}
		hits := rankWith(Config{})
		if o, a := rankOf(hits, c.own), rankOf(hits, c.addressing); o < 0 || (a >= 0 && a < o) {
			t.Errorf("%s: own turn at %d, addressing turn at %d in %v: want the own turn first", lang, o, a, ids(hits))
		}
		hits = rankWith(Config{Speaker: Off, Mention: Off})
		if o, a := rankOf(hits, c.own), rankOf(hits, c.addressing); a < 0 || o < a {
			t.Errorf("%s: without speaker and mention fields own turn at %d, addressing turn at %d: the test shows nothing", lang, o, a)
		}
	}
}

// The fields are removed with their document, by its fields' terms.
func TestDialogueFieldsRemoved(t *testing.T) {
	docs := chat("en")
	ix := NewIndex(Config{})
	ix.Add(docs...)
	before := ix.Bytes()
	ix.RemoveDocs(docs[1], docs[2])
	ix.Add(docs[1], docs[2])
	if got := ix.Bytes(); got != before {
		t.Errorf("Bytes after removing and adding back two turns = %d, want %d", got, before)
	}
	ix.RemoveDocs(docs...)
	if n, b := ix.Len(), ix.Bytes(); n != 0 || b != NewIndex(Config{}).Bytes() {
		t.Errorf("after removing every document: Len %d, Bytes %d; want 0 and an empty index's %d", n, b, NewIndex(Config{}).Bytes())
	}
	if hits := ix.Search("brother guitar Dave", 10); len(hits) != 0 {
		t.Errorf("Search after removing everything = %v", ids(hits))
	}
}

// Only a turn answering a question gets the context field, and only a short one.
func TestContextOnlyShortAnswers(t *testing.T) {
	docs := []Doc{
		{ID: "q", Text: "I repaired the old bicycle yesterday.", Group: "s", Role: "user"},
		{ID: "a", Text: "Nice work.", Group: "s", Role: "assistant", Context: "I repaired the old bicycle yesterday."},
		{ID: "bg", Text: "The weather is nice", Group: "t", Role: "user"},
	}
	ix := NewIndex(Config{})
	ix.Add(docs...)
	if r := rankOf(ix.Search("bicycle", 10), "a"); r >= 0 {
		t.Errorf("a reply to a statement is found by the statement's words (rank %d)", r)
	}
}

// With SessionRepeat, a session's evidence lifts its best turn only: its other turns, which
// match the query less by their own words than another session's turn does, rank after it, and
// the top spreads over the sessions.
// (The mechanics at λ = 1 and δ 0.25, where they show on four turns; the defaults are doc.go's.)
func TestSessionRepeatSpreadsTop(t *testing.T) {
	docs := append(filler(10),
		conversation("a",
			"We spent the spring trip in Paris: the museums of Paris, the cafés of Paris.",
			"Paris in spring is lovely; the Louvre and the Orsay are worth a trip.",
			"On the trip I also bought a print of a Paris street.",
			"A print is a fine souvenir of a trip.")...)
	docs = append(docs, conversation("b",
		"Last month my sister and I saw Rome.",
		"Rome is wonderful.",
		"Can you recommend a good recipe for dinner tonight?",
		"Sure: a vegetable stir fry with rice is quick, cheap and healthy.")...)
	query := "which cities did I visit on a trip: Paris, Rome?"
	rankWith := func(cfg Config) []string {
		ix := NewIndex(cfg)
		ix.Add(docs...)
		return ids(ix.Search(query, 2))
	}
	if got := rankWith(Config{Session: 1, SessionRepeat: 0.25}); !slices.Contains(got, "b-0") {
		t.Errorf("with SessionRepeat 0.25, top 2 = %v, want b-0 among them", got)
	}
	if got := rankWith(Config{Session: 1, SessionRepeat: Off}); slices.Contains(got, "b-0") {
		t.Errorf("without SessionRepeat, top 2 = %v: b-0 is among them, the test shows nothing", got)
	}
}

// TestNamedSpeakerIsAPerson: the agent-turn weight halves an unnamed assistant turn, not a named
// speaker's turn sent with the assistant's role (two people's conversation as user and
// assistant turns).
func TestNamedSpeakerIsAPerson(t *testing.T) {
	score := func(d Doc) float64 {
		ix := NewIndex(Config{})
		ix.Add(Doc{ID: "u", Text: "I went hiking in the Alps.", Role: "user", Speaker: d.Addressee}, d)
		for _, h := range ix.Search("hiking in the Alps", 10) {
			if h.ID == d.ID {
				return h.Relevance
			}
		}
		return 0
	}
	user := score(Doc{ID: "a", Text: "I went hiking in the Alps.", Role: "user"})
	agent := score(Doc{ID: "a", Text: "I went hiking in the Alps.", Role: "assistant"})
	named := score(Doc{ID: "a", Text: "I went hiking in the Alps.", Role: "assistant", Speaker: "Dave", Addressee: "Calvin"})
	if !(agent < user) {
		t.Errorf("an unnamed assistant turn scores %v, a user turn %v: want it lower", agent, user)
	}
	if named != user {
		t.Errorf("a named speaker's assistant turn scores %v, a user turn %v: want them equal", named, user)
	}
}
