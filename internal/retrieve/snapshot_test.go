package retrieve_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/metrics"
	"github.com/agentmem/agentmem/internal/metrics/metricstest"
	"github.com/agentmem/agentmem/internal/retrieve"
	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

// A cold load stores the user's view; the next cold load (another retriever, as after a
// restart) answers from it exactly as from the turns stream, while each session's header is the
// one the view read; a session that changed is read from the stream, and one taken from the
// value is read again from its start when it changes; a value that does not decode is not used;
// a user's forget removes it.
func TestStoredViewServesTheNextColdLoad(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	js, topo := e.jetStream(t)
	for s := range 3 {
		turns := conversation()
		for i := range turns {
			turns[i].ID = fmt.Sprintf("ada-%d-%02d", s, i)
			turns[i].Time = day.Add(time.Duration(s)*time.Hour + time.Duration(i)*time.Minute)
		}
		e.seed(t, fmt.Sprintf("ada-%d", s), "ada", turns)
	}
	kv, err := js.KeyValue(ctx, topo.ViewBucket())
	if err != nil {
		t.Fatal(err)
	}
	cold := func(cfg retrieve.Config, query string) events.RetrieveReply {
		t.Helper()
		cfg.Now = func() time.Time { return day.Add(48 * time.Hour) }
		svc, err := retrieve.New(ctx, cfg, e.nc, js, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		r, rerr := svc.Retrieve(ctx, "acme", events.RetrieveRequest{Query: query, User: "ada", Sources: []string{"archive", "long"}, Limit: intp(50)})
		if rerr != nil {
			t.Fatal(rerr)
		}
		return r
	}
	stored := func() jetstream.KeyValueEntry {
		t.Helper()
		var got jetstream.KeyValueEntry
		brokertest.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
			var err error
			got, err = kv.Get(ctx, "acme.ada")
			return err
		})
		return got
	}

	const query = "what is my favourite programming language?"
	fromStream := cold(retrieve.Config{NoStoredViews: true}, query)
	if len(fromStream.Entries) == 0 {
		t.Fatal("no entries")
	}
	// Seeding loaded the user in the daemon's retriever when the user had one session: that
	// view is stored, and out of date for the other two, which a cold load reads from the stream.
	before := stored().Revision()
	if partly := cold(retrieve.Config{}, query); !reflect.DeepEqual(partly, fromStream) {
		t.Fatalf("a cold load with a view stored before two sessions answered\n%+v\nwhere the stream answers\n%+v", partly, fromStream)
	}
	brokertest.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		if now := stored().Revision(); now == before {
			return errors.New("a cold load that read two sessions from the stream did not store the view again")
		}
		return nil
	})
	if err := kv.Purge(ctx, "acme.ada"); err != nil {
		t.Fatal(err)
	}
	cold(retrieve.Config{NoStoredViews: true}, query)
	if _, err := kv.Get(ctx, "acme.ada"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("a retriever with NoStoredViews stored a view (%v)", err)
	}
	first := cold(retrieve.Config{}, query)
	if !reflect.DeepEqual(first, fromStream) {
		t.Fatalf("the first cold load answered\n%+v\nwhere the stream answers\n%+v", first, fromStream)
	}
	entry := stored()
	m := metrics.New()
	if again := cold(retrieve.Config{Metrics: m}, query); !reflect.DeepEqual(again, fromStream) {
		t.Fatalf("a cold load with the stored view answered\n%+v\nwhere the stream answers\n%+v", again, fromStream)
	}
	srv := httptest.NewServer(m.Handler())
	t.Cleanup(srv.Close)
	const counter = "agentmem_retrieve_stored_view_sessions_total"
	fams := metricstest.Scrape(t, srv.URL)
	if got := fams.Value(counter, "outcome", "stored"); got != 3 {
		t.Errorf("%s{outcome=stored} = %v after a cold load of three stored sessions, want 3", counter, got)
	}
	if got := fams.Value(counter, "outcome", "stream") + fams.Value(counter, "outcome", "stale"); got != 0 {
		t.Errorf("%s: %v sessions read from the stream where the stored view served them all", counter, got)
	}

	// The value is what answers: a turn rewritten in it is found by its new words.
	data, err := retrieve.RewriteStoredTurn("acme", "ada", entry.Value(), "ada-1-06", "Bob keeps a marmoset called Quixotic.")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "acme.ada", data); err != nil {
		t.Fatal(err)
	}
	ids := func(r events.RetrieveReply) []string {
		var out []string
		for _, en := range r.Entries {
			out = append(out, en.ID)
		}
		return out
	}
	if got := ids(cold(retrieve.Config{NoStoredViews: true}, "quixotic marmoset")); len(got) != 0 {
		t.Fatalf("the stream has no marmoset, yet answers %v", got)
	}
	if got := ids(cold(retrieve.Config{}, "quixotic marmoset")); !slices.Equal(got, []string{"ada-1-06"}) {
		t.Fatalf("the stored view's rewritten turn: %v, want [ada-1-06]", got)
	}
	// A running retriever (one that follows the sessions' changes) loads the user from the
	// value too.
	rctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	running, err := retrieve.New(ctx, retrieve.Config{Now: func() time.Time { return day.Add(48 * time.Hour) }}, e.nc, js, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if err := running.Start(rctx); err != nil {
		t.Fatal(err)
	}
	marmoset := func() ([]string, error) {
		r, err := running.Retrieve(ctx, "acme", events.RetrieveRequest{Query: "quixotic marmoset parrot", User: "ada", Sources: []string{"archive"}})
		if err != nil {
			return nil, err
		}
		return ids(r), nil
	}
	if got, err := marmoset(); err != nil || !slices.Equal(got, []string{"ada-1-06"}) {
		t.Fatalf("the running retriever's cold load: %v (%v), want [ada-1-06]", got, err)
	}

	// Session ada-1 changes: a cold load reads it from the stream (the rewritten text is gone,
	// the new turn is there), and the running retriever reads it again from its start.
	e.seed(t, "ada-1", "ada", []client.Turn{{ID: "ada-1-99", Content: "My marmoset question was a joke; I have a parrot.", Time: day.Add(2 * time.Hour)}})
	if got := ids(cold(retrieve.Config{}, "quixotic marmoset parrot")); !slices.Equal(got, []string{"ada-1-99"}) {
		t.Fatalf("after ada-1 changed, a cold load answers %v, want [ada-1-99]", got)
	}
	brokertest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		got, err := marmoset()
		if err != nil {
			return err
		}
		if !slices.Equal(got, []string{"ada-1-99"}) {
			return fmt.Errorf("after ada-1 changed, the running retriever answers %v, want [ada-1-99]", got)
		}
		return nil
	})

	// A value that does not decode is not used.
	if _, err := kv.Put(ctx, "acme.ada", []byte("not a view")); err != nil {
		t.Fatal(err)
	}
	now := cold(retrieve.Config{NoStoredViews: true}, query)
	if got := cold(retrieve.Config{}, query); !reflect.DeepEqual(got, now) {
		t.Fatalf("with a corrupt stored view the answer was\n%+v\nwhere the stream answers\n%+v", got, now)
	}

	// A user's forget removes the stored view.
	stored()
	if _, err := e.cl.Forget(ctx, "ada"); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Get(ctx, "acme.ada"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("after the user's forget the stored view reads %v, want none", err)
	}
}
