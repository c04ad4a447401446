package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

// The examples run against an in-process memoryd (see runMemoryd); an agent connects to its own,
// e.g. nats.Connect(nats.DefaultURL). Turns carry a fixed Time only so that the dates in the
// output below do not change; an agent usually leaves it to default to now.

// An agent publishes each turn, then asks for the context to put into its next prompt.
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
	ack, err := mem.Publish(ctx, client.Turn{
		Session: "s1", User: "alice", Role: "user", Content: "I love writing Go",
		Time: time.Date(2025, 3, 14, 9, 30, 0, 0, time.UTC),
	})
	if err != nil {
		log.Fatal(err)
	}
	// Wait until the turn is applied (read-your-writes), then search.
	reply, err := mem.Retrieve(ctx, events.RetrieveRequest{
		Query: "what does the user love?", Session: "s1", After: ack.ID, WaitMS: 5000,
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(reply.Context)
	// Output:
	// ## Recent turns of this conversation
	// - [2025-03-14 09:30, user] I love writing Go
}

// Publish returns once the turn is stored. A turn keeps its ID, so publishing it again (say,
// retrying after a timeout) stores and applies it once; an invalid turn is refused before
// anything is sent.
func ExampleClient_Publish() {
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
	turn := client.Turn{ID: "t1", Session: "s1", User: "alice", Role: "user", Content: "I love writing Go"}
	for range 2 {
		ack, err := mem.Publish(ctx, turn)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: %s #%d, duplicate: %t\n", ack.ID, ack.Stream, ack.Sequence, ack.Duplicate)
	}
	_, err = mem.Publish(ctx, client.Turn{Session: "s1", User: "alice", Role: "robot", Content: "beep"})
	fmt.Println(errors.Is(err, events.ErrInvalid))
	// Output:
	// t1: AGENTMEM_TURNS #1, duplicate: false
	// t1: AGENTMEM_TURNS #1, duplicate: true
	// true
}

// Ending a session extracts facts about its user into long-term memory (here with the offline
// rules; with an LLM when memoryd has one). The user's next session starts with them.
func ExampleClient_EndSession() {
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
	// Extraction runs in the background: watch for the fact it adds.
	added := make(chan string, 16)
	stopWatch, err := mem.Watch(func(e client.Event) {
		if e.Event.Type() != events.TypeFact {
			return
		}
		if fe, err := events.DecodeData[events.FactEvent](e.Event); err == nil && fe.Op == events.FactAdded {
			select {
			case added <- fe.Fact.Content:
			default:
			}
		}
	})
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = stopWatch() }()

	ctx := context.Background()
	if _, err := mem.Publish(ctx, client.Turn{
		Session: "s1", User: "alice", Role: "user", Content: "Hi, my name is Alice.",
		Time: time.Date(2025, 3, 14, 9, 30, 0, 0, time.UTC),
	}); err != nil {
		log.Fatal(err)
	}
	if _, err := mem.EndSession(ctx, "s1", "alice"); err != nil {
		log.Fatal(err)
	}
	select {
	case fact := <-added:
		fmt.Println("learned:", fact)
	case <-time.After(30 * time.Second):
		log.Fatal("no fact within 30s")
	}

	// A new session of the same user: the facts, and what the user said in earlier sessions.
	text, err := mem.Context(ctx, "what is my name?", "s2", "alice", 0)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(text)
	// Output:
	// learned: The user's name is Alice
	// ## Known facts about the user
	// - (2025-03-14) The user's name is Alice
	// ## Relevant earlier turns
	// - [2025-03-14 09:30, user] Hi, my name is Alice.
}

// Publish returns before the turn is applied to memory. Retrieve with After set to the ack's ID
// waits up to WaitMS for it, so the agent reads its own writes.
func ExampleClient_Retrieve() {
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
	at := time.Date(2025, 3, 14, 9, 30, 0, 0, time.UTC)
	var last client.Ack
	for i, t := range []struct{ role, content string }{
		{"user", "I'm planning a trip to Lisbon in May."},
		{"assistant", "Lisbon is lovely in May. Shall I suggest some restaurants?"},
		{"user", "Yes please, I'm vegetarian."},
	} {
		last, err = mem.Publish(ctx, client.Turn{
			Session: "s1", User: "alice", Role: t.role, Content: t.content, Time: at.Add(time.Duration(i) * time.Minute),
		})
		if err != nil {
			log.Fatal(err)
		}
	}
	limit := 2
	reply, err := mem.Retrieve(ctx, events.RetrieveRequest{
		Query: "vegetarian restaurants", Session: "s1", Limit: &limit, After: last.ID, WaitMS: 5000,
	})
	var se *client.ServiceError
	if errors.As(err, &se) && se.Code == 503 {
		log.Fatal("the turn was not applied within 5s")
	} else if err != nil {
		log.Fatal(err)
	}
	for _, e := range reply.Entries {
		fmt.Printf("%s %s: %s\n", e.Source, e.Type, e.Content)
	}
	// Output:
	// short CONVERSATION: Yes please, I'm vegetarian.
	// short CONVERSATION: Lisbon is lovely in May. Shall I suggest some restaurants?
}

// Context returns the text to put into a prompt: the best entries that fit in the token
// budget, grouped and dated.
func ExampleClient_Context() {
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
	at := time.Date(2025, 3, 14, 9, 30, 0, 0, time.UTC)
	var last client.Ack
	for i, t := range []struct{ role, content string }{
		{"user", "I'm planning a trip to Lisbon in May."},
		{"assistant", "Lisbon is lovely in May. Shall I suggest some restaurants?"},
		{"user", "Yes please, I'm vegetarian."},
	} {
		last, err = mem.Publish(ctx, client.Turn{
			Session: "s1", User: "alice", Role: t.role, Content: t.content, Time: at.Add(time.Duration(i) * time.Minute),
		})
		if err != nil {
			log.Fatal(err)
		}
	}
	// Context has no After: wait for the last turn with Retrieve first.
	if _, err := mem.Retrieve(ctx, events.RetrieveRequest{Query: "wait", Session: "s1", After: last.ID, WaitMS: 5000}); err != nil {
		log.Fatal(err)
	}
	// 0 is the retriever's default budget (2,000 tokens): every turn fits.
	for _, tokens := range []int{0, 50} {
		text, err := mem.Context(ctx, "vegetarian restaurants in Lisbon", "s1", "alice", tokens)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%d tokens:\n%s", tokens, text)
	}
	// Output:
	// 0 tokens:
	// ## Recent turns of this conversation
	// - [2025-03-14 09:30, user] I'm planning a trip to Lisbon in May.
	// - [2025-03-14 09:31, assistant] Lisbon is lovely in May. Shall I suggest some restaurants?
	// - [2025-03-14 09:32, user] Yes please, I'm vegetarian.
	// 50 tokens:
	// ## Recent turns of this conversation
	// - [2025-03-14 09:31, assistant] Lisbon is lovely in May. Shall I suggest some restaurants?
	// - [2025-03-14 09:32, user] Yes please, I'm vegetarian.
}

// Watch delivers the tenant's memory events as they happen: pressure and summary events while
// sessions grow, fact events when facts are extracted, changed or forgotten.
func ExampleClient_Watch() {
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
	got := make(chan client.Event, 16)
	stopWatch, err := mem.Watch(func(e client.Event) {
		select {
		case got <- e:
		default: // never block the watcher
		}
	})
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = stopWatch() }()

	ctx := context.Background()
	if _, err := mem.Publish(ctx, client.Turn{
		Session: "s1", User: "alice", Role: "user", Content: "I love hiking in the Alps.",
		Time: time.Date(2025, 3, 14, 9, 30, 0, 0, time.UTC),
	}); err != nil {
		log.Fatal(err)
	}
	if _, err := mem.EndSession(ctx, "s1", "alice"); err != nil {
		log.Fatal(err)
	}
	timeout := time.After(30 * time.Second)
	for {
		select {
		case e := <-got:
			if e.Event.Type() != events.TypeFact {
				continue // a pressure or summary event
			}
			fe, err := events.DecodeData[events.FactEvent](e.Event)
			if err != nil {
				log.Fatal(err)
			}
			fmt.Println(e.Subject)
			fmt.Printf("%s %s fact: %s (since %s)\n", fe.Op, fe.Fact.Category, fe.Fact.Content, fe.Fact.ValidFrom.Format(time.DateOnly))
			return
		case <-timeout:
			log.Fatal("no fact event within 30s")
		}
	}
	// Output:
	// memory.facts.acme.alice
	// added preference fact: The user loves hiking in the Alps (since 2025-03-14)
}

// PublishBatch stores many turns at about the cost of one publish: they are sent at once and
// acknowledged together, in order. One invalid turn sends nothing.
func ExampleClient_PublishBatch() {
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
	at := time.Date(2025, 3, 14, 9, 30, 0, 0, time.UTC)
	_, err = mem.PublishBatch(ctx, []client.Turn{
		{Session: "s1", User: "alice", Role: "user", Content: "I live in Lyon", Time: at},
		{Session: "s1", Role: "assistant", Content: "", Time: at},
	})
	fmt.Println(err)
	acks, err := mem.PublishBatch(ctx, []client.Turn{
		{Session: "s1", User: "alice", Role: "user", Content: "I live in Lyon", Time: at},
		{Session: "s1", Role: "assistant", Content: "Lyon, noted.", Time: at.Add(5 * time.Second)},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(acks), acks[0].Sequence < acks[1].Sequence)
	reply, err := mem.Retrieve(ctx, events.RetrieveRequest{
		Query: "Lyon", Session: "s1", After: acks[1].ID, WaitMS: 5000,
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(reply.Context)
	// Output:
	// turn 1: content: must not be empty
	// 2 true
	// ## Recent turns of this conversation
	// - [2025-03-14 09:30, user] I live in Lyon
	// - [2025-03-14 09:30, assistant] Lyon, noted.
}

// Correct supersedes a fact (the old one stays in history) and Forget removes everything
// agentmem holds of a user; ForgetFact deletes one fact. Their errors are *ServiceError (404 for
// a fact the user does not have).
func ExampleClient_Correct() {
	url, stop := runMemoryd()
	defer stop()

	nc, err := nats.Connect(url)
	if err != nil {
		log.Fatal(err)
	}
	defer nc.Close()
	mem, err := client.New(nc, client.Options{Tenant: "acme", Timeout: time.Minute})
	if err != nil {
		log.Fatal(err)
	}
	facts := make(chan events.Fact, 8)
	unwatch, err := mem.Watch(func(e client.Event) {
		if fe, err := events.DecodeData[events.FactEvent](e.Event); err == nil && e.Event.Type() == events.TypeFact && fe.Op == events.FactAdded {
			facts <- fe.Fact
		}
	})
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = unwatch() }()
	ctx := context.Background()
	if _, err := mem.Publish(ctx, client.Turn{Session: "s1", User: "alice", Role: "user", Content: "I live in Lisbon."}); err != nil {
		log.Fatal(err)
	}
	// Facts are extracted when the session ends.
	if _, err := mem.EndSession(ctx, "s1", "alice"); err != nil {
		log.Fatal(err)
	}
	var lisbon events.Fact
	select {
	case lisbon = <-facts:
	case <-time.After(30 * time.Second):
		log.Fatal("no fact extracted")
	}
	fixed, err := mem.Correct(ctx, "alice", lisbon.ID, "The user lives in Porto")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("now:", fixed.Fact.Content)
	gone, err := mem.Forget(ctx, "alice")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("turns forgotten:", gone.Forgotten["turns"])
	// Output:
	// now: The user lives in Porto
	// turns forgotten: 2
}
