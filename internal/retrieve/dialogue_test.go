package retrieve_test

import (
	"context"
	"slices"
	"testing"

	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

// TestDialogueContextAndSpeakers: two people's conversation in each shape a client sends it:
// named in metadata ("name" or "speaker"), as a transcript ("Dave: …", every turn of role user),
// and as the user's and the assistant's turns named only by what they call each other ("Hey
// Dave!", "嗨，小明！"). A question about a person ranks the person's own turn (chat-03) above
// the other's turn addressing them (chat-02), and (where asked) the short reply chat-01 is found
// by the words of the question it answers, from the session's short-term memory and from the
// archive (another session).
func TestDialogueContextAndSpeakers(t *testing.T) {
	named := func(name string) map[string]any { return map[string]any{"name": name} }
	alternating := func(texts ...string) []client.Turn {
		var turns []client.Turn
		for i, text := range texts {
			role := "user"
			if i%2 == 1 {
				role = "assistant"
			}
			turns = append(turns, client.Turn{Role: role, Content: text})
		}
		return turns
	}
	for _, c := range []struct {
		name         string
		turns        []client.Turn
		reply, about string // a question the reply chat-01 answers ("": none asked), one about the person
	}{
		{"metadata", []client.Turn{
			{Content: "Did your brother teach you to play the guitar?", Metadata: named("Calvin")},
			{Content: "No, I learned on my own as a kid.", Metadata: map[string]any{"speaker": "Dave"}},
			{Content: "That's awesome, Dave! I wish I had your hiking pictures too.", Metadata: named("Calvin")},
			{Content: "Thanks! Last weekend I went hiking in the mountains again.", Metadata: named("Dave")},
			{Content: "My brother plays the piano in Berlin.", Metadata: named("Calvin")},
		}, "Did Dave's brother teach him to play guitar?", "Where did Dave go hiking?"},
		{"transcript", []client.Turn{
			{Content: "Calvin: Did your brother teach you to play the guitar?"},
			{Content: "Dave: No, I learned on my own as a kid."},
			{Content: "Calvin: That's awesome, Dave! I wish I had your hiking pictures too."},
			{Content: "Dave: Thanks! Last weekend I went hiking in the mountains again."},
			{Content: "Calvin: My brother plays the piano in Berlin."},
		}, "Did Dave's brother teach him to play guitar?", "Where did Dave go hiking?"},
		{"addressed", alternating(
			"Hey Dave! Did your brother teach you to play the guitar?",
			"Hi Calvin! No, I learned on my own as a kid.",
			"That's awesome, Dave! I wish I had your hiking pictures too.",
			"Thanks! Last weekend I went hiking in the mountains again.",
			"My brother plays the piano in Berlin.",
		), "", "Where did Dave go hiking?"},
		{"addressed in Chinese", alternating(
			"嗨，小明！你哥哥教你弹吉他了吗？",
			"你好，小红！没有，我是小时候自己学的。",
			"太棒了，小明！我也想要你爬山的照片。",
			"谢谢！周末我又去黄山爬山了。",
			"我哥哥在北京弹钢琴。",
		), "", "小明去哪里爬山了？"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := start(t)
			e.seed(t, "chat", "alice", c.turns)
			e.seed(t, "later", "alice", []client.Turn{{Content: "Hello again."}})
			for _, sess := range []string{"chat", "later"} {
				if c.reply != "" {
					reply, err := e.cl.Retrieve(context.Background(), events.RetrieveRequest{Query: c.reply, Session: sess})
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Contains(entryIDs(reply), "chat-01") {
						t.Errorf("from %s: the reply chat-01 is not found: %v", sess, top(reply))
					}
				}
				reply, err := e.cl.Retrieve(context.Background(), events.RetrieveRequest{Query: c.about, Session: sess})
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
