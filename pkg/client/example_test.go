package client_test

import (
	"context"
	"fmt"
	"log"

	"github.com/nats-io/nats.go"

	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

// An agent publishes each turn, then asks for the context to put into its next prompt.
func Example() {
	nc, err := nats.Connect(nats.DefaultURL)
	if err != nil {
		log.Fatal(err)
	}
	defer nc.Close()
	mem, err := client.New(nc, client.Options{Tenant: "acme"})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	ack, err := mem.Publish(ctx, client.Turn{Session: "s1", User: "alice", Role: "user", Content: "I love writing Go"})
	if err != nil {
		log.Fatal(err)
	}
	// Wait until the turn is applied (read-your-writes), then search.
	reply, err := mem.Retrieve(ctx, events.RetrieveRequest{
		Query: "which language does the user like?", Session: "s1", After: ack.ID, WaitMS: 2000,
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(reply.Context)
}
