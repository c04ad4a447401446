package retrieve_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker"
	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/daemon"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/internal/retrieve"
	"github.com/agentmem/agentmem/internal/vectors"
	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
	"github.com/agentmem/agentmem/pkg/memory"
)

var day = time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)

type env struct {
	nc  *nats.Conn
	cl  *client.Client
	cfg daemon.Config
}

// start runs agentmem in process with the default retriever, its clock two days after day.
func start(t *testing.T) *env {
	t.Helper()
	return startWith(t, retrieve.Config{})
}

// startWith is start with the given retriever configuration (its clock is start's), and the
// rest of the daemon's as opts change it.
func startWith(t *testing.T, rcfg retrieve.Config, opts ...func(*daemon.Config)) *env {
	t.Helper()
	rcfg.Now = func() time.Time { return day.Add(48 * time.Hour) }
	cfg := daemon.Config{
		Broker:   broker.Config{Listen: "127.0.0.1:-1", DataDir: t.TempDir()},
		Ingest:   ingest.Config{IdleTimeout: -1},
		Retrieve: rcfg,
	}
	for _, o := range opts {
		o(&cfg)
	}
	d, err := daemon.Start(context.Background(), cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Stop(); err != nil {
			t.Errorf("stopping: %v", err)
		}
	})
	nc, err := nats.Connect(d.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	cl, err := client.New(nc, client.Options{Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	return &env{nc: nc, cl: cl, cfg: cfg}
}

// seed publishes a conversation and waits until its last turn is applied.
func (e *env) seed(t *testing.T, sess, user string, turns []client.Turn) {
	t.Helper()
	ctx := context.Background()
	for i, tr := range turns {
		tr.Session, tr.User = sess, user
		if tr.ID == "" {
			tr.ID = fmt.Sprintf("%s-%02d", sess, i)
		}
		if tr.Role == "" {
			tr.Role = "user"
		}
		if tr.Time.IsZero() {
			tr.Time = day.Add(time.Duration(i) * time.Minute)
		}
		if _, err := e.cl.Publish(ctx, tr); err != nil {
			t.Fatal(err)
		}
		turns[i] = tr
	}
	last := turns[len(turns)-1].ID
	if _, err := e.cl.Retrieve(ctx, events.RetrieveRequest{Query: "x", Session: sess, After: last, WaitMS: 10000}); err != nil {
		t.Fatalf("waiting for %s: %v", last, err)
	}
}

func conversation() []client.Turn {
	return []client.Turn{
		{Content: "Hi! I'm planning my week."},
		{Role: "assistant", Content: "Happy to help. What are you working on?"},
		{Content: "I love writing Go, it's my favourite language."},
		{Role: "assistant", Content: "Go is a great choice for network services."},
		{Content: "我最喜欢的编程语言是 Go"},
		{Content: "My sister's favourite food is pizza."},
		{Content: "Bob likes Rust for embedded work."},
		{Role: "tool", Tool: "shell", Content: "$ go version\ngo version go1.26.8 linux/amd64"},
	}
}

func intp(i int) *int { return &i }

func TestRanksPlantedTurnsFirstInEnglishAndChinese(t *testing.T) {
	e := start(t)
	turns := conversation()
	e.seed(t, "s1", "alice", turns)
	for _, q := range []struct{ query, want string }{
		{"What is my favourite programming language?", "s1-02"},
		{"我最喜欢的编程语言是什么？", "s1-04"},
		{"what does my sister like to eat", "s1-05"},
	} {
		reply, err := e.cl.Retrieve(context.Background(), events.RetrieveRequest{Query: q.query, Session: "s1", User: "alice"})
		if err != nil {
			t.Fatal(err)
		}
		if len(reply.Entries) == 0 || reply.Entries[0].ID != q.want {
			t.Errorf("%q: top entry %v, want %s", q.query, top(reply), q.want)
			continue
		}
		first := reply.Entries[0]
		if first.Source != "short" || first.Session != "s1" || first.Type != "CONVERSATION" || !first.Timestamp.Equal(turnTime(turns, q.want)) {
			t.Errorf("entry %+v", first)
		}
		if first.Scores.Weight != 1.0 || first.Scores.Decay != 0.5 || first.Scores.Vector != nil {
			t.Errorf("scores %+v: want weight 1.0, decay 0.5 (older than 24h), no vector part", first.Scores)
		}
		if want := first.Scores.Keyword * first.Scores.Decay * first.Scores.Weight; abs(first.Score-want) > 1e-5 {
			t.Errorf("score %v is not keyword × decay × weight = %v", first.Score, want)
		}
		for _, other := range reply.Entries {
			if other.Scores.Keyword <= 0 {
				t.Errorf("entry without keyword relevance returned: %+v", other)
			}
		}
	}
}

func top(r events.RetrieveReply) []string {
	var out []string
	for _, e := range r.Entries {
		out = append(out, fmt.Sprintf("%s(%.3f)", e.ID, e.Score))
	}
	return out
}

func turnTime(turns []client.Turn, id string) time.Time {
	for _, tr := range turns {
		if tr.ID == id {
			return tr.Time.UTC()
		}
	}
	return time.Time{}
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

func TestAtBoundsVisibilityAndDrivesDecay(t *testing.T) {
	e := start(t)
	e.seed(t, "s1", "alice", conversation())
	// At 12h after the Go turn (at day+2min): decay halfway, 0.75; turns after "at" are invisible.
	at := day.Add(2*time.Minute + 12*time.Hour)
	reply, err := e.cl.Retrieve(context.Background(), events.RetrieveRequest{Query: "favourite language Go", Session: "s1", At: &at})
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, en := range reply.Entries {
		if en.Timestamp.After(at) {
			t.Errorf("entry %s from %s is after at=%s", en.ID, en.Timestamp, at)
		}
		if en.ID == "s1-02" {
			found = true
			if abs(en.Scores.Decay-0.75) > 1e-6 {
				t.Errorf("decay %v, want 0.75", en.Scores.Decay)
			}
		}
	}
	if !found {
		t.Fatalf("s1-02 missing: %v", top(reply))
	}
	before := day.Add(time.Minute)
	reply, err = e.cl.Retrieve(context.Background(), events.RetrieveRequest{Query: "favourite language Go", Session: "s1", At: &before})
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range reply.Entries {
		if en.ID == "s1-02" || en.ID == "s1-04" {
			t.Errorf("%s was said after at=%s and must not be visible", en.ID, before)
		}
	}
}

func TestLimitTypesAndContext(t *testing.T) {
	e := start(t)
	e.seed(t, "s1", "alice", conversation())
	ctx := context.Background()
	reply, err := e.cl.Retrieve(ctx, events.RetrieveRequest{Query: "go", Session: "s1", Limit: intp(2)})
	if err != nil {
		t.Fatal(err)
	}
	if len(reply.Entries) != 2 {
		t.Fatalf("limit 2 gave %d entries", len(reply.Entries))
	}
	if reply.Context == "" || reply.ContextTokens != memory.Estimate(reply.Context) || !strings.Contains(reply.Context, strings.Join(strings.Fields(reply.Entries[0].Content), " ")) {
		t.Fatalf("context %q (%d tokens)", reply.Context, reply.ContextTokens)
	}
	reply, err = e.cl.Retrieve(ctx, events.RetrieveRequest{Query: "go version", Session: "s1", Types: []string{"TOOL_RESULT"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(reply.Entries) != 1 || reply.Entries[0].Type != "TOOL_RESULT" || reply.Entries[0].Metadata["tool"] != "shell" {
		t.Fatalf("types filter: %+v", reply.Entries)
	}
	reply, err = e.cl.Retrieve(ctx, events.RetrieveRequest{Query: "go", Session: "s1", ContextTokens: intp(0)})
	if err != nil {
		t.Fatal(err)
	}
	if reply.Context != "" || reply.ContextTokens != 0 {
		t.Fatalf("context_tokens 0 gave %q", reply.Context)
	}
	reply, err = e.cl.Retrieve(ctx, events.RetrieveRequest{Query: "go", Session: "s1", ContextTokens: intp(30)})
	if err != nil {
		t.Fatal(err)
	}
	if reply.ContextTokens > 30 || reply.ContextTokens == 0 {
		t.Fatalf("context of %d tokens for a budget of 30: %q", reply.ContextTokens, reply.Context)
	}
}

func TestUnknownOrForeignSessionGivesEmptyList(t *testing.T) {
	e := start(t)
	e.seed(t, "s1", "alice", conversation())
	for _, req := range []events.RetrieveRequest{
		{Query: "go", Session: "nobody-knows"},
		{Query: "go", User: "nobody"},
		{Query: "go", Session: "s1", User: "mallory"},
	} {
		reply, err := e.cl.Retrieve(context.Background(), req)
		if err != nil {
			t.Fatalf("%+v: %v", req, err)
		}
		if len(reply.Entries) != 0 {
			t.Errorf("%+v: %v", req, top(reply))
		}
	}
}

func TestReadYourWrites(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	_, err := e.cl.Retrieve(ctx, events.RetrieveRequest{Query: "x", Session: "s9", After: "never-published", WaitMS: 200})
	var se *client.ServiceError
	if !errorsAs(err, &se) || se.Code != 503 || se.Field != "after" {
		t.Fatalf("after an unknown turn: %v, want a 503 naming after", err)
	}
	// Timed on the test's clock (start's Now): a turn timed after the request's point in time is
	// not an answer, and the real clock passed that Now on 2026-12-02 at 08:00 UTC.
	if _, err := e.cl.Publish(ctx, client.Turn{ID: "w1", Session: "s9", User: "bob", Role: "user", Content: "my cat's name is Zorblax", Time: day.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	reply, err := e.cl.Retrieve(ctx, events.RetrieveRequest{Query: "what is my cat's name", Session: "s9", After: "w1", WaitMS: 5000})
	if err != nil {
		t.Fatal(err)
	}
	if len(reply.Entries) == 0 || reply.Entries[0].ID != "w1" {
		t.Fatalf("read-your-writes: %v", top(reply))
	}
}

func TestBadRequestsAre400WithTheField(t *testing.T) {
	e := start(t)
	cases := []struct {
		name, body, field string
	}{
		{"invalid json", `{"query":`, "body"},
		{"empty query", `{"query":"  ","session":"s1"}`, "query"},
		{"limit -1", `{"query":"go","session":"s1","limit":-1}`, "limit"},
		{"limit 201", `{"query":"go","session":"s1","limit":201}`, "limit"},
		{"unknown source", `{"query":"go","session":"s1","sources":["web"]}`, "sources"},
		{"unknown type", `{"query":"go","session":"s1","types":["NOTE"]}`, "types"},
		{"short without session", `{"query":"go","user":"u1","sources":["short"]}`, "sources"},
		{"long without key", `{"query":"go","sources":["long"]}`, "sources"},
		{"bad session token", `{"query":"go","session":"a.b"}`, "session"},
		{"negative context", `{"query":"go","session":"s1","context_tokens":-5}`, "context_tokens"},
		{"unknown field", `{"query":"go","user_id":"u1"}`, "user_id"},
		{"not UTF-8", "{\"query\":\"g\xff\",\"session\":\"s1\"}", "body"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := e.nc.Request("memory.retrieve.acme", []byte(c.body), 2*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if code := m.Header.Get("Nats-Service-Error-Code"); code != "400" {
				t.Fatalf("code %q, want 400 (%s)", code, m.Data)
			}
			if m.Header.Get("Nats-Service-Error") == "" {
				t.Fatal("no Nats-Service-Error description")
			}
			var body events.ErrorBody
			if err := json.Unmarshal(m.Data, &body); err != nil {
				t.Fatalf("error body %q: %v", m.Data, err)
			}
			if body.Error.Code != 400 || body.Error.Field != c.field || body.Error.Message == "" {
				t.Fatalf("error body %+v, want field %q", body.Error, c.field)
			}
		})
	}
	m, err := e.nc.Request("memory.retrieve.acme", []byte(`{"query":"go","session":"s1"}`), 2*time.Second)
	if err != nil || m.Header.Get("Nats-Service-Error-Code") != "" {
		t.Fatalf("a good request after the bad ones: %v %v", err, m.Header)
	}
}

func TestTenantsAreSeparate(t *testing.T) {
	e := start(t)
	e.seed(t, "s1", "alice", conversation())
	other, err := client.New(e.nc, client.Options{Tenant: "globex"})
	if err != nil {
		t.Fatal(err)
	}
	reply, err := other.Retrieve(context.Background(), events.RetrieveRequest{Query: "favourite language", Session: "s1", User: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if len(reply.Entries) != 0 {
		t.Fatalf("tenant globex read acme's memory: %v", top(reply))
	}
}

func errorsAs(err error, target **client.ServiceError) bool {
	return errors.As(err, target)
}

// conceptEmbedder embeds by concepts: words of a concept share a dimension, so texts about the
// same thing are close without sharing a word.
type conceptEmbedder struct{ calls atomic.Int64 }

var concepts = [][]string{{"cat", "cats", "feline", "felines", "kitten"}, {"dog", "dogs", "puppy", "canine"}, {"tea", "coffee", "drink"}}

func (c *conceptEmbedder) Name() string { return "test:concepts" }

func (c *conceptEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	c.calls.Add(1)
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, len(concepts)+1)
		v[len(concepts)] = 0.05 // every text a little alike
		for _, w := range strings.Fields(strings.ToLower(t)) {
			w = strings.Trim(w, ".,!?'")
			for d, words := range concepts {
				if slices.Contains(words, w) {
					v[d]++
				}
			}
		}
		out[i] = v
	}
	return out, nil
}

func TestEmbedderAddsVectorRelevance(t *testing.T) {
	emb := &conceptEmbedder{}
	cfg := daemon.Config{
		Broker:   broker.Config{Listen: "127.0.0.1:-1", DataDir: t.TempDir()},
		Ingest:   ingest.Config{IdleTimeout: -1},
		Retrieve: retrieve.Config{Embedder: emb},
	}
	d, err := daemon.Start(context.Background(), cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Stop() })
	nc, err := nats.Connect(d.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	cl, _ := client.New(nc, client.Options{Tenant: "acme"})
	e := &env{nc: nc, cl: cl, cfg: cfg}
	e.seed(t, "s1", "alice", []client.Turn{
		{Content: "I adore felines more than anything."},
		{Content: "The weather was rainy all week."},
		{Content: "My neighbour has a loud puppy."},
	})
	waitVectors(t, nc, "acme.alice.>", 3) // the embedding stage embeds the turns, the retriever reads them
	// The retriever loaded alice's view before the vectors were written (seed's read-your-writes
	// request); it follows them through its watcher within moments.
	var reply events.RetrieveReply
	brokertest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		var err error
		reply, err = cl.Retrieve(context.Background(), events.RetrieveRequest{Query: "which pet does the user love: cats?", Session: "s1"})
		if err != nil {
			return err
		}
		if len(reply.Entries) == 0 || reply.Entries[0].ID != "s1-00" {
			return fmt.Errorf("top %v: the entry about felines should rank first by its vector", top(reply))
		}
		return nil
	})
	first := reply.Entries[0]
	if first.Scores.Vector == nil || *first.Scores.Vector <= 0 || first.Scores.Keyword != 0 {
		t.Fatalf("scores %+v: want vector relevance and no keyword match", first.Scores)
	}
	for _, en := range reply.Entries {
		if en.ID == "s1-01" {
			t.Fatalf("the weather entry has neither keyword nor vector relevance: %+v", en)
		}
	}
	if emb.calls.Load() == 0 {
		t.Fatal("the embedder was never called")
	}
}

// waitVectors waits until the vector bucket holds n vectors whose keys match filter.
func waitVectors(t *testing.T, nc *nats.Conn, filter string, n int) {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	vs, err := vectors.Open(context.Background(), js, events.DefaultTopology())
	if err != nil {
		t.Fatal(err)
	}
	brokertest.CheckFor(t, 30*time.Second, 20*time.Millisecond, func() error {
		have := 0
		if err := vs.ScanAll(context.Background(), filter, func(vectors.Vector) { have++ }); err != nil {
			return err
		}
		if have != n {
			return fmt.Errorf("%d vectors of %s, want %d", have, filter, n)
		}
		return nil
	})
}

// TestNewSessionRecallsWhatTheUserSaidBefore: a new session of a known user reaches, with the
// default sources, what the user said in another session, also when no fact rule found it.
func TestNewSessionRecallsWhatTheUserSaidBefore(t *testing.T) {
	e := start(t)
	e.seed(t, "old", "alice", []client.Turn{{Content: "My dog is called Rex."}, {Content: "I use Python at work."}})
	e.seed(t, "new", "alice", []client.Turn{{Content: "Hello again."}})
	for _, q := range []struct{ query, want string }{
		{"what is my dog called?", "old-00"},
		{"which language do I use at work? Python?", "old-01"},
	} {
		reply, err := e.cl.Retrieve(context.Background(), events.RetrieveRequest{Query: q.query, Session: "new"})
		if err != nil {
			t.Fatal(err)
		}
		if len(reply.Entries) == 0 || reply.Entries[0].ID != q.want || reply.Entries[0].Source != "archive" || reply.Entries[0].Session != "old" {
			t.Fatalf("%q from a new session: %v, want %s from the archive first", q.query, top(reply), q.want)
		}
	}
	// The session's own turns still come from short-term memory, once.
	reply, err := e.cl.Retrieve(context.Background(), events.RetrieveRequest{Query: "hello again", Session: "new"})
	if err != nil {
		t.Fatal(err)
	}
	if len(reply.Entries) != 1 || reply.Entries[0].ID != "new-00" || reply.Entries[0].Source != "short" {
		t.Fatalf("the session's own turn: %+v", reply.Entries)
	}
}
