package retrieve_test

import (
	"context"
	"slices"
	"testing"

	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

// TestDialogueContextAndSpeakers: turns with named speakers (metadata "name" or "speaker"):
// a reply is found by the words of the question it answers, and a question about a person
// ranks the person's own turn above a turn addressing them, from the session's short-term
// memory and from the archive (another session).
func TestDialogueContextAndSpeakers(t *testing.T) {
	e := start(t)
	turns := func() []client.Turn {
		return []client.Turn{
			{Content: "Did your brother teach you to play the guitar?", Metadata: map[string]any{"name": "Calvin"}},
			{Content: "No, I learned on my own as a kid.", Metadata: map[string]any{"speaker": "Dave"}},
			{Content: "That's awesome, Dave! I wish I had your hiking pictures too.", Metadata: map[string]any{"name": "Calvin"}},
			{Content: "Thanks! Last weekend I went hiking in the mountains again.", Metadata: map[string]any{"name": "Dave"}},
			{Content: "My brother plays the piano in Berlin.", Metadata: map[string]any{"name": "Calvin"}},
		}
	}
	e.seed(t, "chat", "alice", turns())
	e.seed(t, "later", "alice", []client.Turn{{Content: "Hello again."}})
	for _, sess := range []string{"chat", "later"} {
		reply, err := e.cl.Retrieve(context.Background(), events.RetrieveRequest{Query: "Did Dave's brother teach him to play guitar?", Session: sess})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(entryIDs(reply), "chat-01") {
			t.Errorf("from %s: the reply chat-01 is not found: %v", sess, top(reply))
		}
		reply, err = e.cl.Retrieve(context.Background(), events.RetrieveRequest{Query: "Where did Dave go hiking?", Session: sess})
		if err != nil {
			t.Fatal(err)
		}
		got := entryIDs(reply)
		if own, addr := slices.Index(got, "chat-03"), slices.Index(got, "chat-02"); own < 0 || (addr >= 0 && addr < own) {
			t.Errorf("from %s: Dave's own turn chat-03 at %d, Calvin's turn addressing him chat-02 at %d: %v", sess, own, addr, top(reply))
		}
	}
}

// TestSpeakersNamedInTheContent: the same conversation sent as a transcript, every turn of role
// user with its speaker's name opening its content ("Dave: …") and no metadata: the speakers are
// told apart by those names just as by metadata.
func TestSpeakersNamedInTheContent(t *testing.T) {
	e := start(t)
	e.seed(t, "chat", "alice", []client.Turn{
		{Content: "Calvin: Did your brother teach you to play the guitar?"},
		{Content: "Dave: No, I learned on my own as a kid."},
		{Content: "Calvin: That's awesome, Dave! I wish I had your hiking pictures too."},
		{Content: "Dave: Thanks! Last weekend I went hiking in the mountains again."},
		{Content: "Calvin: My brother plays the piano in Berlin."},
	})
	e.seed(t, "later", "alice", []client.Turn{{Content: "Hello again."}})
	for _, sess := range []string{"chat", "later"} {
		reply, err := e.cl.Retrieve(context.Background(), events.RetrieveRequest{Query: "Did Dave's brother teach him to play guitar?", Session: sess})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(entryIDs(reply), "chat-01") {
			t.Errorf("from %s: the reply chat-01 is not found: %v", sess, top(reply))
		}
		reply, err = e.cl.Retrieve(context.Background(), events.RetrieveRequest{Query: "Where did Dave go hiking?", Session: sess})
		if err != nil {
			t.Fatal(err)
		}
		got := entryIDs(reply)
		if own, addr := slices.Index(got, "chat-03"), slices.Index(got, "chat-02"); own < 0 || (addr >= 0 && addr < own) {
			t.Errorf("from %s: Dave's own turn chat-03 at %d, Calvin's turn addressing him chat-02 at %d: %v", sess, own, addr, top(reply))
		}
	}
}

// TestSpeakersNamedByHowTheyAddressEachOther: two people's conversation sent as the user's and
// the assistant's turns, with no names but those they call each other by ("Hey Dave!", "Hi
// Calvin!", "嗨，小明！"): a question about Dave ranks Dave's own turn above Calvin's turn
// addressing him, in English and in Chinese.
func TestSpeakersNamedByHowTheyAddressEachOther(t *testing.T) {
	for _, c := range []struct {
		lang, query string
		turns       []string
	}{
		{"en", "Where did Dave go hiking?", []string{
			"Hey Dave! Did your brother teach you to play the guitar?",
			"Hi Calvin! No, I learned on my own as a kid.",
			"That's awesome, Dave! I wish I had your hiking pictures too.",
			"Thanks! Last weekend I went hiking in the mountains again.",
			"My brother plays the piano in Berlin."}},
		{"zh", "小明去哪里爬山了？", []string{
			"嗨，小明！你哥哥教你弹吉他了吗？",
			"你好，小红！没有，我是小时候自己学的。",
			"太棒了，小明！我也想要你爬山的照片。",
			"谢谢！周末我又去黄山爬山了。",
			"我哥哥在北京弹钢琴。"}},
	} {
		t.Run(c.lang, func(t *testing.T) {
			e := start(t)
			var turns []client.Turn
			for i, text := range c.turns {
				role := "user"
				if i%2 == 1 {
					role = "assistant"
				}
				turns = append(turns, client.Turn{Role: role, Content: text})
			}
			e.seed(t, "chat", "alice", turns)
			e.seed(t, "later", "alice", []client.Turn{{Content: "Hello again."}})
			for _, sess := range []string{"chat", "later"} {
				reply, err := e.cl.Retrieve(context.Background(), events.RetrieveRequest{Query: c.query, Session: sess})
				if err != nil {
					t.Fatal(err)
				}
				got := entryIDs(reply)
				if own, addr := slices.Index(got, "chat-03"), slices.Index(got, "chat-02"); own < 0 || (addr >= 0 && addr < own) {
					t.Errorf("from %s: the own turn chat-03 at %d, the turn addressing its speaker chat-02 at %d: %v", sess, own, addr, top(reply))
				}
			}
		})
	}
}

func entryIDs(r events.RetrieveReply) []string {
	var out []string
	for _, e := range r.Entries {
		out = append(out, e.ID)
	}
	return out
}
