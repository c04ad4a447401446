package fact_test

import (
	"fmt"
	"time"

	"github.com/agentmem/agentmem/internal/fact"
)

func ExampleRules() {
	at := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	turns := []fact.Turn{
		{ID: "t1", Role: "user", Content: "I live in Paris and my favourite programming language is Go. Do I like tea?", Time: at},
		{ID: "t2", Role: "assistant", Content: "Noted! I love Go too.", Time: at.Add(time.Second)},
		{ID: "t3", Role: "user", Content: "我最喜欢的编程语言是 Go，我们决定用 PostgreSQL。", Time: at.Add(time.Minute)},
	}
	for _, c := range fact.Rules(turns) {
		fmt.Printf("%s | %s | %s | %v\n", c.Content, c.Category, c.Key, c.Provenance)
	}
	// Output:
	// The user lives in Paris | identity | user.city | [t1]
	// The user's favourite programming language is Go | preference | user.favorite_language | [t1]
	// 用户最喜欢的编程语言是 Go | preference | user.favorite_language | [t3]
	// 用户和其他人决定用 PostgreSQL | decision |  | [t3]
}

func ExampleNormalize() {
	fmt.Println(fact.Normalize("I  LOVE Ｇｏ!!"))
	fmt.Println(fact.Normalize("用户 最喜欢的编程语言是 Go。"))
	fmt.Println(fact.ID("acme", "u1", "I love Go") == fact.ID("acme", "u1", "i love go!"))
	// Output:
	// i love go
	// 用户最喜欢的编程语言是go
	// true
}
