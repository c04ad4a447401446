package forget_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/forget"
	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/internal/usage"
	"github.com/agentmem/agentmem/internal/vectors"
)

// recorder is a part that records the users it is asked to forget and counts its calls.
type recorder struct{ calls []forget.User }

func (r *recorder) Forget(_ context.Context, u forget.User, counts map[string]int) error {
	r.calls = append(r.calls, u)
	counts["recorded"]++
	return nil
}

// TestPartsForgetTheOwnedSessionsTwice: every part, a given one included, is called in each of
// the two passes with the sessions the index names that the user owns (a session of another user
// the index names is left alone); forget waits for the consumers it is given, up to its bound.
func TestPartsForgetTheOwnedSessionsTwice(t *testing.T) {
	e := start(t, 0, nil)
	e.Say("acme", "a1", "alice", "t1", "I live in Paris.", t0)
	e.Say("acme", "b1", "bob", "u1", "I live in Rome.", t0)
	ctx := context.Background()
	js := e.Broker.JS
	sessions, err := session.NewStore(ctx, js, e.Topo)
	if err != nil {
		t.Fatal(err)
	}
	brokertest.CheckFor(t, 15*time.Second, 20*time.Millisecond, func() error {
		for _, sess := range []string{"a1", "b1"} {
			if _, _, err := sessions.Header(ctx, session.Key{Tenant: "acme", Session: sess}); err != nil {
				return err
			}
		}
		return nil
	})
	// The index names alice's session and, wrongly, bob's.
	for _, sess := range []string{"a1", "b1"} {
		if err := e.Store.TouchSession(ctx, "acme", "alice", sess, t0, t0); err != nil {
			t.Fatal(err)
		}
	}
	// A consumer that holds a turn unacknowledged: forget waits for it, up to its bound.
	stuck, err := js.CreateOrUpdateConsumer(ctx, e.Topo.TurnsStream(), jetstream.ConsumerConfig{
		Durable: "stuck", AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stuck.Fetch(1); err != nil {
		t.Fatal(err)
	}
	us, err := usage.Open(ctx, js, e.Topo)
	if err != nil {
		t.Fatal(err)
	}
	vs, err := vectors.Open(ctx, js, e.Topo)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	svc, err := forget.New(forget.Config{
		Topology: e.Topo, Parts: []forget.Part{rec},
		Waits: []forget.Consumer{{Stream: e.Topo.TurnsStream(), Name: "stuck"}, {Stream: e.Topo.TurnsStream(), Name: "absent"}},
	}, js, forget.Stores{Long: e.Store, Sessions: sessions, Usage: us, Vectors: vs}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	counts, err := svc.Forget(ctx, "acme", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took < 2*time.Second {
		t.Errorf("forget took %v: it did not wait for the consumer holding a turn", took)
	}
	if len(rec.calls) != 2 {
		t.Fatalf("the part was called %d times, want once per pass", len(rec.calls))
	}
	// The first pass forgets the index too: the second finds no session left.
	for i, want := range [][]string{{"a1"}, nil} {
		if u := rec.calls[i]; u.Tenant != "acme" || u.User != "alice" || !slices.Equal(u.Sessions, want) {
			t.Fatalf("pass %d asked the part to forget %+v, want alice's sessions %v", i+1, u, want)
		}
	}
	if counts["recorded"] != 2 || counts["sessions"] != 1 || counts["turns"] != 1 {
		t.Fatalf("counts %v: want the part's 2, 1 session and its 1 turn", counts)
	}
	h, _, err := sessions.Header(ctx, session.Key{Tenant: "acme", Session: "b1"})
	if err != nil || h.User != "bob" || !h.Forgotten.IsZero() {
		t.Fatalf("bob's session after alice's forget: %+v, %v", h, err)
	}
	if h, _, err := sessions.Header(ctx, session.Key{Tenant: "acme", Session: "a1"}); err != nil || h.Forgotten.IsZero() {
		t.Fatalf("alice's session after her forget: %+v, %v; want a tombstone", h, err)
	}
}

// TestNewNamesWhatIsMissing: a missing store or a waited-for consumer without a name is refused.
func TestNewNamesWhatIsMissing(t *testing.T) {
	if _, err := forget.New(forget.Config{}, nil, forget.Stores{}, zerolog.Nop()); err == nil {
		t.Fatal("no stores: no error")
	}
	e := start(t, 0, nil)
	ctx := context.Background()
	sessions, _ := session.NewStore(ctx, e.Broker.JS, e.Topo)
	us, _ := usage.Open(ctx, e.Broker.JS, e.Topo)
	vs, _ := vectors.Open(ctx, e.Broker.JS, e.Topo)
	st := forget.Stores{Long: e.Store, Sessions: sessions, Usage: us, Vectors: vs}
	if _, err := forget.New(forget.Config{Topology: e.Topo, Waits: []forget.Consumer{{Stream: e.Topo.TurnsStream()}}}, e.Broker.JS, st, zerolog.Nop()); err == nil {
		t.Fatal("a waited-for consumer without a name: no error")
	}
	if _, err := forget.New(forget.Config{Topology: e.Topo}, e.Broker.JS, st, zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
}
