package retrieve_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/daemon"
	"github.com/agentmem/agentmem/internal/metrics"
	"github.com/agentmem/agentmem/internal/metrics/metricstest"
	"github.com/agentmem/agentmem/internal/retrieve"
	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

// A cold load stores the user's view; the next cold load (another retriever, as after a
// restart) answers from it exactly as from the turns stream, while each session's header is the
// one the view read; a session that changed is read from the stream, and one taken from the
// value is read again from its start when it changes; a value that does not decode is not used;
// a user's forget removes it.
func TestStoredViewServesTheNextColdLoad(t *testing.T) {
	forEachViewStore(t, testStoredViewServesTheNextColdLoad)
}

func testStoredViewServesTheNextColdLoad(t *testing.T, inBucket bool) {
	// The daemon's retriever does not warm (TestWarmerStoresTheViewsOfQuietUsers): here only
	// cold loads store views, when the test says.
	e := startWith(t, retrieve.Config{WarmAfter: -1}, func(c *daemon.Config) { c.ViewsInBucket = inBucket })
	ctx := context.Background()
	js, _ := e.jetStream(t)
	e.seedUser(t, "ada", 3)
	views := e.views(t, js, inBucket)
	cold := func(cfg retrieve.Config, query string) events.RetrieveReply {
		t.Helper()
		return e.coldRetrieve(t, js, views.config(cfg), "ada", query)
	}
	stored := func() []byte {
		t.Helper()
		var got []byte
		brokertest.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
			var ok bool
			if got, ok = views.get(t, "ada"); !ok {
				return errors.New("no stored view of ada")
			}
			return nil
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
	before := stored()
	if partly := cold(retrieve.Config{}, query); !reflect.DeepEqual(partly, fromStream) {
		t.Fatalf("a cold load with a view stored before two sessions answered\n%+v\nwhere the stream answers\n%+v", partly, fromStream)
	}
	brokertest.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		if now := stored(); bytes.Equal(now, before) {
			return errors.New("a cold load that read two sessions from the stream did not store the view again")
		}
		return nil
	})
	views.purge(t, "ada")
	cold(retrieve.Config{NoStoredViews: true}, query)
	if _, ok := views.get(t, "ada"); ok {
		t.Fatal("a retriever with NoStoredViews stored a view")
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
	checkAllStored(t, m, 3, "after a cold load of three stored sessions")

	// The value is what answers: a turn rewritten in it is found by its new words.
	data, err := retrieve.RewriteStoredTurn("acme", "ada", entry, "ada-1-06", "Bob keeps a marmoset called Quixotic.")
	if err != nil {
		t.Fatal(err)
	}
	views.put(t, "ada", data)
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
	running, err := retrieve.New(ctx, views.config(retrieve.Config{Now: func() time.Time { return day.Add(48 * time.Hour) }}), e.nc, js, zerolog.Nop())
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
	views.put(t, "ada", []byte("not a view"))
	now := cold(retrieve.Config{NoStoredViews: true}, query)
	if got := cold(retrieve.Config{}, query); !reflect.DeepEqual(got, now) {
		t.Fatalf("with a corrupt stored view the answer was\n%+v\nwhere the stream answers\n%+v", got, now)
	}

	// A user's forget removes the stored view.
	stored()
	if _, err := e.cl.Forget(ctx, "ada"); err != nil {
		t.Fatal(err)
	}
	brokertest.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		if _, ok := views.get(t, "ada"); ok {
			return errors.New("after the user's forget the stored view is still there")
		}
		return nil
	})
}

// The warmer stores the view of a user whose sessions went quiet, with no request for it: the
// user's next cold load takes every session from the value and answers as the turns stream does;
// a session that changes is stored again once quiet; a forgotten user is not stored again.
func TestWarmerStoresTheViewsOfQuietUsers(t *testing.T) {
	forEachViewStore(t, testWarmerStoresTheViewsOfQuietUsers)
}

func testWarmerStoresTheViewsOfQuietUsers(t *testing.T, inBucket bool) {
	e := startWith(t, retrieve.Config{WarmAfter: 50 * time.Millisecond}, func(c *daemon.Config) { c.ViewsInBucket = inBucket })
	ctx := context.Background()
	js, topo := e.jetStream(t)
	views := e.views(t, js, inBucket)
	// Seeding loads the user in the daemon's retriever once (it waits for each session's last
	// turn): that cold load stores a view of the first session only, and the retriever's
	// cached view never stores another. The warmer stores the other two.
	e.seedUser(t, "cy", 3)
	headers, err := js.KeyValue(ctx, topo.SessionBucket())
	if err != nil {
		t.Fatal(err)
	}
	// stored waits until user's stored view holds the sessions want names, each read at the
	// session's current header, and returns each session's turns.
	stored := func(user string, want ...string) map[string][]string {
		t.Helper()
		out := map[string][]string{}
		brokertest.CheckFor(t, 20*time.Second, 20*time.Millisecond, func() error {
			data, ok := views.get(t, user)
			if !ok {
				return fmt.Errorf("no stored view of %s", user)
			}
			got, err := retrieve.StoredSessions("acme", user, data)
			if err != nil {
				return err
			}
			if names := slices.Sorted(maps.Keys(got)); !slices.Equal(names, want) {
				return fmt.Errorf("the stored view holds sessions %v, want %v", names, want)
			}
			for name, ss := range got {
				h, err := headers.Get(ctx, session.Key{Tenant: "acme", Session: name}.String())
				if err != nil {
					return err
				}
				if h.Revision() != ss.Rev {
					return fmt.Errorf("session %s is stored at revision %d, its header is at %d", name, ss.Rev, h.Revision())
				}
				out[name] = ss.Turns
			}
			return nil
		})
		return out
	}
	stored("cy", "cy-0", "cy-1", "cy-2")
	fromValue := func() {
		t.Helper()
		const query = "favourite programming language"
		m := metrics.New()
		want := e.coldRetrieve(t, js, retrieve.Config{NoStoredViews: true}, "cy", query)
		if got := e.coldRetrieve(t, js, views.config(retrieve.Config{Metrics: m, WarmAfter: -1}), "cy", query); !reflect.DeepEqual(got, want) {
			t.Fatalf("a cold load from the warmed view answered\n%+v\nwhere the stream answers\n%+v", got, want)
		}
		checkAllStored(t, m, 3, "for a cold load after warming")
	}
	fromValue()

	// A session that changes is stored again once it is quiet.
	e.seed(t, "cy-1", "cy", []client.Turn{{ID: "cy-1-99", Content: "I switched to Rust last month.", Time: day.Add(3 * time.Hour)}})
	if got := stored("cy", "cy-0", "cy-1", "cy-2")["cy-1"]; !slices.Contains(got, "cy-1-99") {
		t.Fatalf("session cy-1 is stored with turns %v, without cy-1-99", got)
	}
	fromValue()

	// A forgotten user is not stored again: the forget's tombstones are not warmed. Another
	// user's view, stored after them, shows that the warmer went past them.
	if _, err := e.cl.Forget(ctx, "cy"); err != nil {
		t.Fatal(err)
	}
	e.seed(t, "dee-0", "dee", conversation())
	stored("dee", "dee-0")
	if _, ok := views.get(t, "cy"); ok {
		t.Fatal("after the user's forget, the stored view is still there")
	}
}

// A user whose view is too large to store (its text above twice the server's max payload) is
// not loaded by the warmer once a load (the warmer's or a request's) found it so: loading it
// again would be for nothing. The warmer goes on to the other users.
func TestWarmerSkipsAUserTooLargeToStore(t *testing.T) {
	m := metrics.New()
	e := startWith(t, retrieve.Config{WarmAfter: 50 * time.Millisecond}, func(c *daemon.Config) {
		c.Broker.MaxPayload, c.Metrics = 8<<10, m
	})
	js, _ := e.jetStream(t)
	srv := httptest.NewServer(m.Handler())
	t.Cleanup(srv.Close)
	const counter = "agentmem_retrieve_stored_view_sessions_total"
	count := func(outcome string) float64 { return metricstest.Scrape(t, srv.URL).Value(counter, "outcome", outcome) }
	// 24 turns of 1 KB: 24 KB of text, above twice the 4 KB a value may take here. Seeding
	// loads the user (it waits for the last turn), which finds the view too large.
	big := make([]client.Turn, 24)
	for i := range big {
		big[i] = client.Turn{Content: fmt.Sprintf("turn %d: %s", i, strings.Repeat("the rollback plan for the billing service ", 24))}
	}
	e.seed(t, "big-0", "big", big)
	brokertest.CheckFor(t, 20*time.Second, 20*time.Millisecond, func() error {
		if n := count("too_large"); n != 1 {
			return fmt.Errorf("%v users too large, want the large one", n)
		}
		return nil
	})
	warmed := count("warmed")
	// The large user changes, then a small one does: the warmer loads the small one and not the
	// large one (taken first: its commit is older), whose load would count it too large again.
	e.seed(t, "big-0", "big", []client.Turn{{ID: "big-0-99", Content: "One more turn."}})
	e.seed(t, "small-0", "small", conversation())
	brokertest.CheckFor(t, 20*time.Second, 20*time.Millisecond, func() error {
		if n := count("warmed"); n < warmed+1 {
			return fmt.Errorf("%v users warmed, want %v", n, warmed+1)
		}
		return nil
	})
	if n, large := count("warmed"), count("too_large"); n != warmed+1 || large != 1 {
		t.Fatalf("%v users warmed and %v too large, want %v (the small one added) and 1", n, large, warmed+1)
	}
	for _, inBucket := range []bool{false, true} {
		if _, ok := e.views(t, js, inBucket).get(t, "big"); ok {
			t.Fatalf("the large user's view is stored (in the bucket: %v)", inBucket)
		}
	}
}

// forEachViewStore runs f with the daemon's stored views as files of its data directory (the
// default) and in the view bucket (daemon.Config.ViewsInBucket).
func forEachViewStore(t *testing.T, f func(t *testing.T, inBucket bool)) {
	t.Run("files", func(t *testing.T) { f(t, false) })
	t.Run("bucket", func(t *testing.T) { f(t, true) })
}

// viewStore reads and writes the stored views of a test's daemon, tenant acme: the view bucket,
// or files of dir.
type viewStore struct {
	kv  jetstream.KeyValue
	dir string
}

// views returns the daemon's stored views: in the bucket, or files of its data directory.
func (e *env) views(t *testing.T, js jetstream.JetStream, inBucket bool) viewStore {
	t.Helper()
	if !inBucket {
		return viewStore{dir: filepath.Join(e.cfg.Broker.DataDir, daemon.ViewDirName)}
	}
	kv, err := js.KeyValue(context.Background(), events.DefaultTopology().ViewBucket())
	if err != nil {
		t.Fatal(err)
	}
	return viewStore{kv: kv}
}

// config is cfg reading and writing the same stored views.
func (v viewStore) config(cfg retrieve.Config) retrieve.Config {
	cfg.ViewDir = v.dir
	return cfg
}

func (v viewStore) get(t *testing.T, user string) ([]byte, bool) {
	t.Helper()
	if v.kv == nil {
		data, err := os.ReadFile(retrieve.ViewFile(v.dir, "acme", user))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
		return data, err == nil
	}
	e, err := v.kv.Get(context.Background(), "acme."+user)
	if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatal(err)
	}
	if err != nil {
		return nil, false
	}
	return e.Value(), true
}

func (v viewStore) put(t *testing.T, user string, data []byte) {
	t.Helper()
	var err error
	if v.kv == nil {
		err = os.WriteFile(retrieve.ViewFile(v.dir, "acme", user), data, 0o600)
	} else {
		_, err = v.kv.Put(context.Background(), "acme."+user, data)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func (v viewStore) purge(t *testing.T, user string) {
	t.Helper()
	var err error
	if v.kv == nil {
		err = os.Remove(retrieve.ViewFile(v.dir, "acme", user))
	} else {
		err = v.kv.Purge(context.Background(), "acme."+user)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// seedUser seeds n sessions of user, "<user>-<s>", each the conversation (turns
// "<user>-<s>-<i>"), an hour apart.
func (e *env) seedUser(t *testing.T, user string, n int) {
	t.Helper()
	for s := range n {
		turns := conversation()
		for i := range turns {
			turns[i].ID = fmt.Sprintf("%s-%d-%02d", user, s, i)
			turns[i].Time = day.Add(time.Duration(s)*time.Hour + time.Duration(i)*time.Minute)
		}
		e.seed(t, fmt.Sprintf("%s-%d", user, s), user, turns)
	}
}

// coldRetrieve answers query for user (archive and long-term, 50 entries) from a new retriever
// with cfg: a cold load, as after a restart.
func (e *env) coldRetrieve(t *testing.T, js jetstream.JetStream, cfg retrieve.Config, user, query string) events.RetrieveReply {
	t.Helper()
	cfg.Now = func() time.Time { return day.Add(48 * time.Hour) }
	ctx := context.Background()
	svc, err := retrieve.New(ctx, cfg, e.nc, js, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	r, rerr := svc.Retrieve(ctx, "acme", events.RetrieveRequest{Query: query, User: user, Sources: []string{"archive", "long"}, Limit: intp(50)})
	if rerr != nil {
		t.Fatal(rerr)
	}
	return r
}

// checkAllStored checks that m counted a cold load of n sessions all taken from the stored view
// (agentmem_retrieve_stored_view_sessions_total), after what.
func checkAllStored(t *testing.T, m *metrics.Metrics, n int, what string) {
	t.Helper()
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	const counter = "agentmem_retrieve_stored_view_sessions_total"
	fams := metricstest.Scrape(t, srv.URL)
	if got := fams.Value(counter, "outcome", "stored"); got != float64(n) {
		t.Errorf("%s{outcome=stored} = %v %s, want %d", counter, got, what, n)
	}
	if got := fams.Value(counter, "outcome", "stream") + fams.Value(counter, "outcome", "stale"); got != 0 {
		t.Errorf("%s: %v sessions read from the stream %s, where the stored view served them all", counter, got, what)
	}
}
