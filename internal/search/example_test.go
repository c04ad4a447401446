package search_test

import (
	"fmt"

	"github.com/agentmem/agentmem/internal/search"
)

func ExampleIndex_Search() {
	ix := search.NewIndex()
	ix.Add("go", "I love writing Go, it's my favourite language")
	ix.Add("pizza", "My sister's favourite food is pizza")
	ix.Add("rust", "Bob likes Rust")
	ix.Add("zh-go", "我最喜欢的编程语言是 Go")
	ix.Add("zh-pizza", "我妹妹最喜欢的食物是披萨")

	for _, q := range []string{"What is my favourite programming language?", "我最喜欢的编程语言是什么？"} {
		for _, h := range ix.Search(q, 2) {
			fmt.Printf("%s %.2f\n", h.ID, h.Score)
		}
	}
	// Output:
	// go 0.27
	// pizza 0.11
	// zh-go 0.35
	// zh-pizza 0.09
}

func ExampleTerms() {
	fmt.Printf("%q\n", search.Terms("I love writing Go, it's my favourite language"))
	fmt.Printf("%q\n", search.Terms("ＧＯ语言，取件码改成了zq3k0x8ab1"))
	// Output:
	// ["love" "write" "go" "favourite" "language"]
	// ["go" "语" "语言" "言" "取" "取件" "件" "件码" "码" "码改" "改" "改成" "成" "成了" "zq3k0x8ab1"]
}
