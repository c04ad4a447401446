package search_test

import (
	"fmt"

	"github.com/agentmem/agentmem/internal/search"
)

func ExampleTerms() {
	fmt.Printf("%q\n", search.Terms("I love writing Go, it's my favourite language"))
	fmt.Printf("%q\n", search.Terms("ＧＯ语言，取件码改成了zq3k0x8ab1"))
	// Output:
	// ["love" "write" "go" "favourite" "language"]
	// ["go" "语" "语言" "言" "取" "取件" "件" "件码" "码" "码改" "改" "改成" "成" "成了" "zq3k0x8ab1"]
}
