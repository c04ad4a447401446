// Package extracttest runs ingest and extractors on an in-process JetStream, for the tests of
// the extractor and of what its process serves (forget).
package extracttest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/extract"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/internal/longterm"
	"github.com/agentmem/agentmem/pkg/events"
)

// Env is one in-process JetStream with ingest and extractors running on it.
type Env struct {
	T      *testing.T
	Broker *brokertest.Env
	Topo   events.Topology
	// Store reads the long-term memory the extractors write.
	Store *longterm.Store
}

// Start runs ingest (2 partitions) and the given number of extractors with chat (nil:
// offline rules) until the test ends.
func Start(t *testing.T, extractors int, chat extract.Chat) *Env {
	t.Helper()
	be := brokertest.Start(t)
	topo := events.DefaultTopology()
	topo.Partitions = 2
	ctx := context.Background()
	if err := topo.Ensure(ctx, be.JS); err != nil {
		t.Fatal(err)
	}
	e := &Env{T: t, Broker: be, Topo: topo}
	in, err := ingest.New(ctx, ingest.Config{Topology: topo, IdleTimeout: -1}, JS(t, be), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	e.Run(in.Run)
	for range extractors {
		x, err := extract.New(ctx, extract.Config{Topology: topo, Backoff: func(uint64) time.Duration { return 20 * time.Millisecond }},
			JS(t, be), chat, "test-model", zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		e.Run(x.Run)
	}
	if e.Store, err = longterm.Open(ctx, be.JS, topo); err != nil {
		t.Fatal(err)
	}
	return e
}

// JS is a JetStream context on a connection of its own to be.
func JS(t *testing.T, be *brokertest.Env) jetstream.JetStream {
	js, err := jetstream.New(be.Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// Run runs fn until the test ends, and fails the test if it returns another error than the
// context's.
func (e *Env) Run(fn func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fn(ctx) }()
	e.T.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			e.T.Errorf("worker: %v", err)
		}
	})
}

// Publish publishes one event of type typ with data into the session, with its message id.
func (e *Env) Publish(tenant, sess, id, typ string, at time.Time, data any) {
	e.T.Helper()
	ev, err := events.NewEvent(id, typ, "test", at, data)
	if err != nil {
		e.T.Fatal(err)
	}
	m, err := events.BinaryMsg("memory.turns."+tenant+"."+sess, ev)
	if err != nil {
		e.T.Fatal(err)
	}
	m.Header.Set(events.HeaderMsgID, events.MsgID(tenant, sess, id))
	if _, err := e.Broker.JS.PublishMsg(context.Background(), m); err != nil {
		e.T.Fatal(err)
	}
}

// Say publishes a user turn.
func (e *Env) Say(tenant, sess, user, id, text string, at time.Time) {
	e.Publish(tenant, sess, id, events.TypeTurn, at, events.Turn{Role: "user", Content: text, User: user})
}

// End publishes the session's end.
func (e *Env) End(tenant, sess, user, id string, at time.Time) {
	e.Publish(tenant, sess, id, events.TypeSessionEnded, at, events.SessionEnded{User: user})
}

// Facts waits until the user has want live facts (bounded) and returns every fact.
func (e *Env) Facts(tenant, user string, want int) []longterm.Fact {
	e.T.Helper()
	var recs longterm.UserRecords
	brokertest.CheckFor(e.T, 15*time.Second, 20*time.Millisecond, func() error {
		var err error
		if recs, err = e.Store.User(context.Background(), tenant, user); err != nil {
			return err
		}
		live := 0
		for _, f := range recs.Facts {
			if f.Live() {
				live++
			}
		}
		if live < want {
			return fmt.Errorf("%d live facts, want %d", live, want)
		}
		return nil
	})
	return recs.Facts
}

// Drained waits until ingest and then the extractors have nothing pending: ingest first, since it
// announces the session ends the extractors read.
func (e *Env) Drained() {
	e.T.Helper()
	ctx := context.Background()
	var consumers [][2]string
	for p := range e.Topo.Partitions {
		consumers = append(consumers, [2]string{e.Topo.TurnsStream(), ingest.TurnsConsumerName(e.Topo, p)})
	}
	consumers = append(consumers, [2]string{e.Topo.TurnsStream(), extract.EndConsumerName(e.Topo)},
		[2]string{e.Topo.SummaryStream(), extract.SummaryConsumerName(e.Topo)})
	brokertest.CheckFor(e.T, 15*time.Second, 20*time.Millisecond, func() error {
		for _, sc := range consumers {
			stream, name := sc[0], sc[1]
			c, err := e.Broker.JS.Consumer(ctx, stream, name)
			if err != nil {
				return err
			}
			info, err := c.Info(ctx)
			if err != nil {
				return err
			}
			if info.NumPending+uint64(info.NumAckPending) > 0 {
				return fmt.Errorf("%s: %d pending, %d unacknowledged", name, info.NumPending, info.NumAckPending)
			}
		}
		return nil
	})
}
