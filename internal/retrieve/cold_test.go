package retrieve_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

// Concurrent first queries for one cold user load the user's view once: eight clients asking
// at once make the retriever read JetStream (direct gets, consumers) exactly as much as one
// client asking about a user with the same history, and all get the same answer.
func TestConcurrentFirstQueriesLoadOnce(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	for _, user := range []string{"solo", "crowd"} {
		for s := range 3 {
			sess := fmt.Sprintf("%s-%d", user, s)
			var last string
			for i := range 6 {
				last = fmt.Sprintf("%s-%02d", sess, i)
				tr := client.Turn{ID: last, Session: sess, User: user, Role: []string{"user", "assistant"}[i%2],
					Content: fmt.Sprintf("Session %d, turn %d: my garden has tomatoes, and the neighbour's cat visits it.", s, i),
					Time:    day.Add(time.Duration(s*24)*time.Hour + time.Duration(i)*time.Minute)}
				if _, err := e.cl.Publish(ctx, tr); err != nil {
					t.Fatal(err)
				}
			}
			// Waiting on the session's short-term memory alone leaves the user's view unloaded.
			if _, err := e.cl.Retrieve(ctx, events.RetrieveRequest{Query: "x", Session: sess, Sources: []string{"short"}, After: last, WaitMS: 10000}); err != nil {
				t.Fatalf("waiting for %s: %v", last, err)
			}
		}
	}

	var reads atomic.Int64
	for _, subject := range []string{"$JS.API.DIRECT.GET.>", "$JS.API.CONSUMER.CREATE.>"} {
		sub, err := e.nc.Subscribe(subject, func(*nats.Msg) { reads.Add(1) })
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sub.Unsubscribe() })
	}
	if err := e.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	// readsOf returns how many reads the retriever made to answer ask.
	readsOf := func(ask func()) int64 {
		t.Helper()
		if err := e.nc.Flush(); err != nil {
			t.Fatal(err)
		}
		before := reads.Load()
		ask()
		// The reads were sent to this connection before the replies that needed them; a
		// round trip delivers any still in flight.
		if err := e.nc.Flush(); err != nil {
			t.Fatal(err)
		}
		return reads.Load() - before
	}
	query := func(user string) (events.RetrieveReply, error) {
		return e.cl.Retrieve(ctx, events.RetrieveRequest{Query: "what grows in my garden?", User: user})
	}

	one := readsOf(func() {
		if _, err := query("solo"); err != nil {
			t.Fatal(err)
		}
	})
	if one == 0 {
		t.Fatal("a cold user's first query read nothing: the reads are not where this test counts them")
	}
	const clients = 8
	replies := make([]events.RetrieveReply, clients)
	many := readsOf(func() {
		start := make(chan struct{})
		errs := make(chan error, clients)
		for i := range clients {
			go func() {
				<-start
				r, err := query("crowd")
				replies[i] = r
				errs <- err
			}()
		}
		close(start)
		for range clients {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
	})
	if t.Failed() {
		t.FailNow()
	}
	if many != one {
		t.Errorf("%d concurrent first queries for one user made %d reads, one query for a user like it %d", clients, many, one)
	}
	for i, r := range replies {
		if len(r.Entries) != len(replies[0].Entries) || len(r.Entries) == 0 {
			t.Errorf("client %d: %d entries, client 0: %d", i, len(r.Entries), len(replies[0].Entries))
		}
	}
	// Once loaded, the view answers without reading.
	if again := readsOf(func() {
		if _, err := query("crowd"); err != nil {
			t.Fatal(err)
		}
	}); again != 0 {
		t.Errorf("a warm query made %d reads", again)
	}
}
