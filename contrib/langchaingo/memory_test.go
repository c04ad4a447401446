package langchaingo_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/chains"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/fake"
	lcmemory "github.com/tmc/langchaingo/memory"

	"github.com/agentmem/agentmem/contrib/langchaingo"
	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

// recorder is langchaingo's fake LLM that also keeps the prompts it was given.
type recorder struct {
	*fake.LLM
	mu      sync.Mutex
	prompts []string
}

func (r *recorder) GenerateContent(ctx context.Context, msgs []llms.MessageContent, opts ...llms.CallOption) (*llms.ContentResponse, error) {
	var b strings.Builder
	for _, m := range msgs {
		for _, p := range m.Parts {
			if t, ok := p.(llms.TextContent); ok {
				b.WriteString(t.Text)
			}
		}
	}
	r.mu.Lock()
	r.prompts = append(r.prompts, b.String())
	r.mu.Unlock()
	return r.LLM.GenerateContent(ctx, msgs, opts...)
}

func (r *recorder) last() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.prompts[len(r.prompts)-1]
}

// entries returns the contents of the session's short-term entries agentmem finds for query,
// by role. The turns asked about were applied before a later LoadMemoryVariables or Messages
// answered (they wait for the turns published before them).
func entries(t *testing.T, c *client.Client, session, query string) map[string]string {
	t.Helper()
	reply, err := c.Retrieve(context.Background(), events.RetrieveRequest{
		Query: query, Session: session, Sources: []string{events.SourceShort},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range reply.Entries {
		role, _ := e.Metadata["role"].(string)
		got[e.Content] = role
	}
	return got
}

// A conversation chain with the memory: its turns are published, the next prompt carries them
// (read your writes), and after the session ends a new session's prompt carries the fact
// agentmem extracted, although that session has no turns yet.
func TestMemoryInConversationChain(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	llm := &recorder{LLM: fake.NewFakeLLM([]string{"Nice to meet you, Alice.", "You told me: Alice.", "Your name is Alice."})}

	m1, err := langchaingo.NewMemory(c, "s1", "alice", langchaingo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	chain := chains.NewConversation(llm, m1)
	if _, err := chains.Run(ctx, chain, "Hi, my name is Alice."); err != nil {
		t.Fatal(err)
	}
	if _, err := chains.Run(ctx, chain, "Remind me, what is my name?"); err != nil {
		t.Fatal(err)
	}
	if p := llm.last(); !strings.Contains(p, "Hi, my name is Alice.") || !strings.Contains(p, "Human: Remind me, what is my name?") {
		t.Errorf("the second prompt does not carry the first turn:\n%s", p)
	}
	got := entries(t, c, "s1", "Alice name")
	if got["Hi, my name is Alice."] != "user" || got["Nice to meet you, Alice."] != "assistant" {
		t.Errorf("session s1 holds %v, want the chain's input as a user turn and its output as an assistant turn", got)
	}

	if err := m1.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	fact, err := langchaingo.WaitForFact(ctx, c, "alice", "alice")
	if err != nil {
		t.Fatal(err)
	}
	m2, err := langchaingo.NewMemory(c, "s2", "alice", langchaingo.Options{ProfileKey: "profile"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chains.Run(ctx, chains.NewConversation(llm, m2), "What do you know about me?"); err != nil {
		t.Fatal(err)
	}
	if p := llm.last(); !strings.Contains(p, fact) || strings.Contains(p, "Hi, my name is Alice.") {
		t.Errorf("the new session's prompt does not carry the fact %q alone:\n%s", fact, p)
	}
	vars, err := m2.LoadMemoryVariables(ctx, map[string]any{"input": "What do you know about me?"})
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := vars["profile"].([]string); len(p) != 1 || p[0] != fact {
		t.Errorf("profile = %#v, want [%q]", vars["profile"], fact)
	}
}

func TestMemoryOptionsAndErrors(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	if _, err := langchaingo.NewMemory(c, "no spaces", "alice", langchaingo.Options{}); !errors.Is(err, events.ErrInvalid) {
		t.Errorf("NewMemory with session %q: %v, want events.ErrInvalid", "no spaces", err)
	}
	m, err := langchaingo.NewMemory(c, "s1", "carol", langchaingo.Options{MemoryKey: "memory", ReturnMessages: true})
	if err != nil {
		t.Fatal(err)
	}
	if k := m.GetMemoryKey(ctx); k != "memory" {
		t.Errorf("memory key %q", k)
	}
	err = m.SaveContext(ctx, map[string]any{"a": "x", "b": "y"}, map[string]any{"text": "z"})
	if !errors.Is(err, langchaingo.ErrInput) {
		t.Errorf("SaveContext with two inputs and no InputKey: %v, want ErrInput", err)
	}
	if err := m.SaveContext(ctx, map[string]any{"input": "I prefer tea to coffee."}, map[string]any{"text": "Tea it is."}); err != nil {
		t.Fatal(err)
	}
	vars, err := m.LoadMemoryVariables(ctx, map[string]any{"input": "tea or coffee?"})
	if err != nil {
		t.Fatal(err)
	}
	msgs, _ := vars["memory"].([]llms.ChatMessage)
	if len(msgs) != 1 || msgs[0].GetType() != llms.ChatMessageTypeSystem || !strings.Contains(msgs[0].GetContent(), "I prefer tea to coffee.") {
		t.Errorf("with ReturnMessages the variable is %#v, want one system message with the saved turn", vars["memory"])
	}
	empty, err := m.LoadMemoryVariables(ctx, map[string]any{})
	if err != nil || len(empty["memory"].([]llms.ChatMessage)) != 0 {
		t.Errorf("without an input: %v, %v; want no messages", empty, err)
	}
}

// The chat history publishes every message at once, works under langchaingo's buffer memory,
// and a new session's history starts with what agentmem remembers.
func TestChatHistory(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	h, err := langchaingo.NewChatHistory(c, "s1", "bob", langchaingo.HistoryOptions{ContextQuery: "what do you know about me?"})
	if err != nil {
		t.Fatal(err)
	}
	if msgs, err := h.Messages(ctx); err != nil || len(msgs) != 0 {
		t.Fatalf("a new user's history: %v, %v; want none", msgs, err)
	}
	llm := &recorder{LLM: fake.NewFakeLLM([]string{"Paris, noted.", "It is sunny in Paris."})}
	chain := chains.NewConversation(llm, lcmemory.NewConversationBuffer(lcmemory.WithChatHistory(h)))
	if _, err := chains.Run(ctx, chain, "I live in Paris."); err != nil {
		t.Fatal(err)
	}
	if err := h.AddMessage(ctx, llms.FunctionChatMessage{Name: "weather", Content: "Sunny in Paris, 21 °C"}); err != nil {
		t.Fatal(err)
	}
	if err := h.AddMessage(ctx, llms.AIChatMessage{ToolCalls: []llms.ToolCall{{ID: "c1", Type: "function"}}}); err != nil {
		t.Errorf("an AI message with tool calls only: %v", err)
	}
	if err := h.AddMessage(ctx, llms.GenericChatMessage{Role: "robot", Content: "beep"}); !errors.Is(err, events.ErrInvalid) {
		t.Errorf("a message of role robot: %v, want events.ErrInvalid", err)
	}
	if _, err := chains.Run(ctx, chain, "What is the weather like?"); err != nil {
		t.Fatal(err)
	}
	if p := llm.last(); !strings.Contains(p, "Human: I live in Paris.\nAI: Paris, noted.") {
		t.Errorf("the second prompt lacks the first exchange:\n%s", p)
	}
	got := entries(t, c, "s1", "Paris")
	if got["I live in Paris."] != "user" || got["Paris, noted."] != "assistant" || got["Sunny in Paris, 21 °C"] != "tool" {
		t.Errorf("session s1 holds %v, want the user, assistant and tool turns", got)
	}
	if err := h.SetMessages(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if msgs, _ := h.Messages(ctx); len(msgs) != 0 {
		t.Errorf("after SetMessages(nil): %v", msgs)
	}

	if err := h.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	fact, err := langchaingo.WaitForFact(ctx, c, "bob", "Paris")
	if err != nil {
		t.Fatal(err)
	}
	h2, err := langchaingo.NewChatHistory(c, "s2", "bob", langchaingo.HistoryOptions{ContextQuery: "what do you know about me?"})
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := h2.Messages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 || msgs[0].GetType() != llms.ChatMessageTypeSystem || !strings.Contains(msgs[0].GetContent(), fact) {
		t.Errorf("a new session's history is %v, want a system message with %q", msgs, fact)
	}
}
