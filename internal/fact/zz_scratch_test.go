package fact

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"testing"
)

func TestScratch(t *testing.T) {
	for _, s := range []string{
		"I prefer tea over coffee.", "I really like Go, but I hate Java.", "I love it!", "I like your idea.",
		"My favourite programming language is Go.", "my favorite color is blue", "My name is Ana.", "Call me Bob.",
		"I live in Paris.", "I moved to Berlin last year.", "I'm based in London", "I work at Google as an engineer.",
		"I work for myself", "I'm working on a compiler", "I'm a software engineer at Acme.", "I'm a bit tired.",
		"I'm a big fan of jazz", "My birthday is May 3.", "My email is a@b.com", "We decided to use Postgres.",
		"I decided to quit my job", "Let's use SQLite.", "Our project uses Go 1.26.", "We use Redis for caching.",
		"Do I like tea?", "If I moved to Berlin, I would be happy.", "I'm not sure I like it.", "I don't like mushrooms.",
		"I dislike crowds", "I enjoy hiking in the Alps", "I'm vegetarian.", "I'm allergic to peanuts",
		"我喜欢喝茶。", "我最喜欢的编程语言是 Go。", "我不喜欢香菜", "我讨厌下雨天", "我叫小明。", "我的名字是李华",
		"我住在北京", "我搬到了上海", "我在腾讯工作", "我是一名程序员", "我们的项目用 Go", "我们用 Redis 做缓存",
		"我们决定用 PostgreSQL", "我决定辞职了", "我喜欢什么？", "如果我搬到上海，我会很开心", "我喜欢你",
		"I like Go and I live in Berlin.", "I'm from Spain", "I love cooking, because it relaxes me", "I'm also a huge fan of Radiohead",
		"Thanks, I love the suggestions!", "I love to hear that", "I live in a small town near Lyon", "By the way, I work at Deloitte.",
		"I've been working on my thesis about bees for months", "I use Node.js. I like Go.", "我现在住在深圳已经三年了", "我在家工作",
		"我是学生", "我是说这个不对", "我最喜欢的水果是芒果", "我爱吃火锅", "那就用 Postgres 吧",
	} {
		c := Rules([]Turn{{ID: "t1", Role: "user", Content: s}})
		fmt.Printf("%-50q", s)
		for _, x := range c {
			fmt.Printf(" | %s [%s %s %.2f]", x.Content, x.Category, x.Key, x.Confidence)
		}
		fmt.Println()
	}
}

func TestScratchDump(t *testing.T) {
	f, _ := os.Open(longMemEvalPath)
	zr, _ := gzip.NewReader(f)
	var items []lmeItem
	json.NewDecoder(zr).Decode(&items)
	seen := map[string]bool{}
	for _, it := range items {
		if it.QuestionType != "single-session-user" && it.QuestionType != "knowledge-update" {
			continue
		}
		for si, sess := range it.HaystackSessions {
			sid := it.HaystackSessionIDs[si]
			if seen[sid] {
				continue
			}
			seen[sid] = true
			turns := make([]Turn, len(sess))
			for j, tu := range sess {
				turns[j] = Turn{ID: fmt.Sprintf("%s_%d", sid, j), Role: tu.Role, Content: tu.Content}
			}
			for _, c := range Rules(turns) {
				fmt.Printf("%s\t%s\t%s\n", c.Category, c.Key, c.Content)
			}
		}
	}
}

func TestScratchMissed(t *testing.T) {
	f, _ := os.Open(longMemEvalPath)
	zr, _ := gzip.NewReader(f)
	var items []lmeItem
	json.NewDecoder(zr).Decode(&items)
	for _, it := range items {
		if it.QuestionType != "single-session-user" && it.QuestionType != "knowledge-update" {
			continue
		}
		for _, sess := range it.HaystackSessions {
			for _, tu := range sess {
				if tu.HasAnswer {
					c := Rules([]Turn{{ID: "x", Role: "user", Content: tu.Content}})
					fmt.Printf("%d\t%.300s\n", len(c), tu.Content)
				}
			}
		}
	}
}
