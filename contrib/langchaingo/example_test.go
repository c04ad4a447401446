package langchaingo_test

import (
	"context"
	"fmt"
	"log"

	"github.com/nats-io/nats.go"
	"github.com/tmc/langchaingo/chains"
	"github.com/tmc/langchaingo/llms/fake"

	"github.com/agentmem/agentmem/contrib/langchaingo"
	"github.com/agentmem/agentmem/pkg/client"
)

// A conversation chain remembers the user's name in one session and gets it back in a new one.
// The example runs against an in-process memoryd (runMemoryd); an application connects to its
// own, e.g. nats.Connect(nats.DefaultURL). The fake LLM stands in for a model.
func Example() {
	url, stop := runMemoryd()
	defer stop()
	nc, err := nats.Connect(url)
	if err != nil {
		log.Fatal(err)
	}
	defer nc.Close()
	mem, err := client.New(nc, client.Options{Tenant: "acme"})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	llm := fake.NewFakeLLM([]string{"Nice to meet you, Alice.", "You are Alice."})

	// Session 1: the user says their name; Clear ends the session, agentmem extracts the facts.
	s1, err := langchaingo.NewMemory(mem, "s1", "alice", langchaingo.Options{})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := chains.Run(ctx, chains.NewConversation(llm, s1), "Hi, my name is Alice."); err != nil {
		log.Fatal(err)
	}
	if err := s1.Clear(ctx); err != nil {
		log.Fatal(err)
	}
	if _, err := langchaingo.WaitForFact(ctx, mem, "alice", "Alice"); err != nil {
		log.Fatal(err)
	}

	// Session 2: the prompt's {{.history}} is agentmem's context, the user's profile included.
	s2, err := langchaingo.NewMemory(mem, "s2", "alice", langchaingo.Options{ProfileKey: "profile"})
	if err != nil {
		log.Fatal(err)
	}
	vars, err := s2.LoadMemoryVariables(ctx, map[string]any{"input": "What is my name?"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(vars["profile"])
	// Output:
	// [The user's name is Alice]
}
