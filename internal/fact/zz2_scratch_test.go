package fact

import (
	"fmt"
	"testing"
)

func TestScratch2(t *testing.T) {
	for _, s := range []string{
		"我养了一只猫，叫咪咪。", "我每周去两次健身房", "我最近开始学吉他", "我有两个孩子", "我刚买了一辆特斯拉",
		"我们团队用 Kafka 做消息队列", "我是做前端的", "我在字节跳动上班", "我来自成都", "我的生日是3月5号",
		"我叫了外卖", "我在找工作", "我在努力工作", "你可以叫我小王", "我喜欢的颜色是蓝色", "我不太喜欢吃辣的",
		"我觉得我喜欢这个", "我是说这个不对", "我住在学校宿舍", "我正在开发一个记账小程序", "我们决定下周去爬山。",
		"我也很喜欢看电影，但是我不喜欢恐怖片。", "我最爱的一本书是《三体》", "你觉得我喜欢什么？", "我喜欢Go吗",
		"我的邮箱是 a@b.com", "我住在北京市朝阳区建国路88号", "I live at 221B Baker Street", "My phone number is 555-123-4567",
		"I love Go so much!", "I'm so happy", "I like C# and F#.", "I'm a student at MIT.", "I'm a little confused.",
		"I'm an engineer.", "I love that!", "I like how you explained it.", "I hate to say it, but I like Java.",
		"Would I like Rust?", "I like Go, do you?", "Can you recommend a vegetarian restaurant since I'm vegan?",
		"I live in Paris, can you recommend a restaurant?", "I think I prefer dark mode.", "Maybe I like jazz.",
		"I used to live in Rome.", "I lived in Rome for two years.", "I've lived in Rome since 2019.",
		"We're using Kubernetes for deployment.", "Our backend is written in Rust.", "let's go with option B",
		"Let's pick up where we left off.", "I'm working on it.", "call me when you're done", "Please call me Ishmael.",
		"my name is bob", "I work at home.", "I work at night.", "I worked at IBM.", "I've worked at IBM for 5 years.",
		"I'm working for Stripe now.", "I work as a nurse.", "My favorite food is sushi, by the way.",
		"My favourite thing about you is your patience.", "I don't really like horror movies.", "I can't stand loud music.",
		"I do like spicy food", "I'd like a coffee.", "I would love to visit Japan.",
	} {
		c := Rules([]Turn{{ID: "t1", Role: "user", Content: s}})
		fmt.Printf("%-50q", s)
		for _, x := range c {
			fmt.Printf(" | %s [%s %s %.2f]", x.Content, x.Category, x.Key, x.Confidence)
		}
		fmt.Println()
	}
}
