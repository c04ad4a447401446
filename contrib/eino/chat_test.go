package eino_test

import (
	"context"
	"fmt"
	"log"
	"strings"
	"sync"
	"testing"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/schema"
	"github.com/nats-io/nats.go"

	"github.com/agentmem/agentmem/contrib/eino"
	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

// fakeModel is an Eino chat model that answers from its prompt: where the user lives when the
// prompt says so, else that it does not know. It keeps the system messages it was given.
type fakeModel struct {
	mu      sync.Mutex
	systems []string
}

var _ model.BaseChatModel = (*fakeModel)(nil)

func (f *fakeModel) Generate(_ context.Context, in []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	var system string
	for _, m := range in {
		if m.Role == schema.System {
			system += m.Content
		}
	}
	f.mu.Lock()
	f.systems = append(f.systems, system)
	f.mu.Unlock()
	if strings.Contains(system, "Paris") {
		return schema.AssistantMessage("You live in Paris.", nil), nil
	}
	return schema.AssistantMessage("Noted.", nil), nil
}

func (f *fakeModel) Stream(ctx context.Context, in []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	m, err := f.Generate(ctx, in, opts...)
	if err != nil {
		return nil, err
	}
	return schema.StreamReaderFromArray([]*schema.Message{m}), nil
}

func (f *fakeModel) lastSystem() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.systems[len(f.systems)-1]
}

// The chat flow publishes each question and answer as turns, the next prompt carries them, and
// a new session's prompt carries the fact agentmem extracted from the ended one.
func TestChat(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	if _, err := eino.NewMemory(c, "s 1", "alice"); err == nil {
		t.Error("NewMemory took the session \"s 1\"")
	}
	fm := &fakeModel{}
	m1, err := eino.NewMemory(c, "s1", "alice")
	if err != nil {
		t.Fatal(err)
	}
	chat, err := eino.NewChat(ctx, m1, fm)
	if err != nil {
		t.Fatal(err)
	}
	if a, err := chat.Invoke(ctx, "Hi, I live in Paris."); err != nil || a.Content != "Noted." {
		t.Fatalf("first answer %v, %v", a, err)
	}
	if a, err := chat.Invoke(ctx, "Where do I live?"); err != nil || a.Content != "You live in Paris." {
		t.Errorf("second answer %v, %v; its prompt:\n%s", a, err, fm.lastSystem())
	}
	if err := m1.End(ctx); err != nil {
		t.Fatal(err)
	}
	fact, err := waitForFact(ctx, c, "alice", "Paris")
	if err != nil {
		t.Fatal(err)
	}
	// The fact was extracted at the end, so every turn before the end is applied.
	reply, err := c.Retrieve(ctx, events.RetrieveRequest{Query: "live", Session: "s1", Sources: []string{events.SourceShort}})
	if err != nil {
		t.Fatal(err)
	}
	roles := map[string]any{}
	for _, e := range reply.Entries {
		roles[e.Content] = e.Metadata["role"]
	}
	if roles["Hi, I live in Paris."] != "user" || roles["Where do I live?"] != "user" {
		t.Errorf("session s1 holds %v, want both questions as user turns", roles)
	}

	m2, err := eino.NewMemory(c, "s2", "alice")
	if err != nil {
		t.Fatal(err)
	}
	chat2, err := eino.NewChat(ctx, m2, fm)
	if err != nil {
		t.Fatal(err)
	}
	if a, err := chat2.Invoke(ctx, "What do you know about me?"); err != nil || a.Content != "You live in Paris." {
		t.Errorf("new session's answer %v, %v", a, err)
	}
	if s := fm.lastSystem(); !strings.Contains(s, fact) || strings.Contains(s, "Hi, I live in Paris.") {
		t.Errorf("the new session's prompt does not carry the fact %q alone:\n%s", fact, s)
	}
}

// An Eino chain remembers where the user lives in one session and answers from it in a new
// one. It runs against an in-process memoryd (runMemoryd); an application connects to its own,
// e.g. nats.Connect(nats.DefaultURL). fakeModel stands in for a chat model.
func ExampleNewChat() {
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
	for i, q := range []string{"I live in Paris.", "What do you know about me?"} {
		m, err := eino.NewMemory(mem, fmt.Sprintf("s%d", i+1), "alice") // a new session each time
		if err != nil {
			log.Fatal(err)
		}
		chat, err := eino.NewChat(ctx, m, &fakeModel{})
		if err != nil {
			log.Fatal(err)
		}
		answer, err := chat.Invoke(ctx, q)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(answer.Content)
		if err := m.End(ctx); err != nil { // agentmem extracts the session's facts
			log.Fatal(err)
		}
		if _, err := waitForFact(ctx, mem, "alice", "Paris"); err != nil {
			log.Fatal(err)
		}
	}
	// Output:
	// Noted.
	// You live in Paris.
}
