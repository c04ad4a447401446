package retrieve

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/pkg/events"
)

// TestForgetFeedDropsEveryViewWhenAnAnnouncementIsLost: with its channel full, the connection
// drops announcements (a slow consumer); the next emptying of the feed cannot know whom they
// named, so it drops every view, and still forgets the users it did receive. Announcements of
// other fact changes forget nobody.
func TestForgetFeedDropsEveryViewWhenAnAnnouncementIsLost(t *testing.T) {
	env := brokertest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var forgot []string
	all := 0
	feed, err := subscribeForgets(ctx, env.NC, 2, time.Hour, func(k userKey) { forgot = append(forgot, k.tenant+"/"+k.user) }, func() { all++ })
	if err != nil {
		t.Fatal(err)
	}
	pub := env.Connect(t)
	announce := func(user string, op string) {
		t.Helper()
		msg, err := events.NewMsg(ctx, "acme", user, "ev-"+user, events.TypeFact, "test", time.Now(),
			events.FactEvent{Op: op, Fact: events.Fact{ID: "user:" + user}})
		if err != nil {
			t.Fatal(err)
		}
		if err := pub.PublishMsg(msg); err != nil {
			t.Fatal(err)
		}
	}
	// Within the buffer: each forgotten user, nothing else.
	announce("alice", events.FactForgotten)
	announce("bob", events.FactAdded)
	brokertest.CheckFor(t, 10*time.Second, 5*time.Millisecond, func() error {
		if len(feed.ch) < 2 {
			return context.DeadlineExceeded
		}
		return nil
	})
	feed.apply()
	if !slices.Equal(forgot, []string{"acme/alice"}) || all != 0 {
		t.Fatalf("forgot %v, every view %d times; want alice only", forgot, all)
	}
	// Beyond it: three announcements for a channel of two.
	for _, u := range []string{"carol", "dave", "erin"} {
		announce(u, events.FactForgotten)
	}
	if err := pub.Flush(); err != nil {
		t.Fatal(err)
	}
	brokertest.CheckFor(t, 10*time.Second, 5*time.Millisecond, func() error {
		if n, _ := feed.sub.Dropped(); n == 0 {
			return context.DeadlineExceeded
		}
		return nil
	})
	feed.apply()
	if all != 1 || !slices.Equal(forgot, []string{"acme/alice", "acme/carol", "acme/dave"}) {
		t.Fatalf("after a lost announcement: forgot %v, every view %d times; want carol and dave, and every view once", forgot, all)
	}
	feed.apply()
	if all != 1 {
		t.Fatalf("every view dropped again (%d times) with nothing more lost", all)
	}
}
