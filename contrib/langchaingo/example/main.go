// Command example is the langchaingo program of docs/clients.md: a conversation chain with
// agentmem as its memory remembers the user's name in one session and gets it back in a new one.
// It connects to memoryd at AGENTMEM_NATS (default nats://127.0.0.1:4222; make run starts one)
// and uses langchaingo's fake LLM, so it needs no model:
//
//	cd contrib/langchaingo && go run ./example
package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/nats-io/nats.go"
	"github.com/tmc/langchaingo/chains"
	"github.com/tmc/langchaingo/llms/fake"

	"github.com/agentmem/agentmem/contrib/langchaingo"
	"github.com/agentmem/agentmem/pkg/client"
)

func main() {
	run(context.Background(), cmp.Or(os.Getenv("AGENTMEM_NATS"), nats.DefaultURL), os.Stdout)
}

// run is what docs/clients.md shows, between the markers (a test checks that they agree).
func run(ctx context.Context, url string, out io.Writer) {
	// docs:begin
	nc := must(nats.Connect(url)) // memoryd's NATS (make run)
	defer nc.Close()
	mem := must(client.New(nc, client.Options{Tenant: "acme"}))
	llm := fake.NewFakeLLM([]string{"Nice to meet you, Erin.", "Your name is Erin."}) // any llms.Model

	// Session 1: the user says their name; Clear ends the session, agentmem extracts the facts.
	s1 := must(langchaingo.NewMemory(mem, "lc-1", "erin", langchaingo.Options{}))
	must(chains.Run(ctx, chains.NewConversation(llm, s1), "Hi, my name is Erin."))
	check(s1.Clear(ctx))
	must(langchaingo.WaitForFact(ctx, mem, "erin", "Erin")) // facts appear a moment after the end

	// Session 2, another day: {{.history}} in the prompt is agentmem's context, the profile included.
	s2 := must(langchaingo.NewMemory(mem, "lc-2", "erin", langchaingo.Options{ProfileKey: "profile"}))
	vars := must(s2.LoadMemoryVariables(ctx, map[string]any{"input": "What is my name?"}))
	fmt.Fprintln(out, vars["profile"]) // [The user's name is Erin]
	fmt.Fprintln(out, must(chains.Run(ctx, chains.NewConversation(llm, s2), "What is my name?")))
	// docs:end
}

// must returns v, or panics with err.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// check panics with err, if any.
func check(err error) {
	if err != nil {
		panic(err)
	}
}
