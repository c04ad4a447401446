package embedder_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker"
	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/daemon"
	"github.com/agentmem/agentmem/internal/daemon/daemontest"
	"github.com/agentmem/agentmem/internal/embed"
	"github.com/agentmem/agentmem/internal/embedder"
	"github.com/agentmem/agentmem/internal/extract"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/internal/llm"
	"github.com/agentmem/agentmem/internal/llm/llmtest"
	"github.com/agentmem/agentmem/internal/metrics"
	"github.com/agentmem/agentmem/internal/metrics/metricstest"
	"github.com/agentmem/agentmem/internal/retrieve"
	"github.com/agentmem/agentmem/internal/vectors"
	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
	"github.com/agentmem/agentmem/pkg/memory"
)

// concepts are the fake model's dimensions: words of a concept share one, so texts about the same
// thing are close without sharing a word.
var concepts = [][]string{
	{"cat", "cats", "feline", "felines", "kitten", "pet"},
	{"dog", "dogs", "puppy", "canine"},
	{"tea", "coffee", "drink", "beverage"},
	{"paris", "city", "live", "home"},
}

func conceptVector(text string) []float64 {
	v := make([]float64, len(concepts)+1)
	v[len(concepts)] = 0.05 // every text a little alike
	for _, w := range strings.Fields(strings.ToLower(text)) {
		w = strings.Trim(w, ".,!?'")
		for d, words := range concepts {
			if slices.Contains(words, w) {
				v[d]++
			}
		}
	}
	return v
}

// model is a counting OpenAI-compatible embeddings server: it records every text it embedded
// (failed requests embed nothing) and fails while fail is set, or for the requests failFirst
// names.
type model struct {
	srv       *llmtest.Server
	emb       *embed.OpenAI
	fail      atomic.Bool
	failFirst int
	failed    atomic.Int64
	// hold, when set, keeps every request after the first waiting until it is closed; held
	// hears of each request kept waiting.
	hold, held chan struct{}
	mu         sync.Mutex
	texts      []string
}

func newModel(t *testing.T, name string, edit func(*model)) *model {
	t.Helper()
	m := &model{}
	if edit != nil {
		edit(m)
	}
	m.srv = llmtest.NewServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		var buf bytes.Buffer
		_, _ = buf.ReadFrom(r.Body)
		req, err := llmtest.DecodeEmbeddings(buf.Bytes())
		if err != nil {
			llmtest.WriteError(w, http.StatusBadRequest, "invalid_request_error", "", err.Error())
			return
		}
		if m.hold != nil && n > 1 {
			select {
			case m.held <- struct{}{}:
			default:
			}
			select {
			case <-m.hold:
			case <-r.Context().Done():
				return
			}
		}
		if m.fail.Load() || n <= m.failFirst {
			m.failed.Add(1)
			llmtest.WriteError(w, http.StatusInternalServerError, "server_error", "", "the model is down")
			return
		}
		data := make([]llmtest.Embedding, len(req.Input))
		for i, text := range req.Input {
			data[i] = llmtest.Embedding{Index: i, Vector: conceptVector(text)}
		}
		m.mu.Lock()
		m.texts = append(m.texts, req.Input...)
		m.mu.Unlock()
		llmtest.WriteEmbeddings(w, req.Model, data, len(req.Input))
	})
	emb, err := embed.NewOpenAI(embed.Config{Endpoint: llm.Endpoint{BaseURL: m.srv.URL, Model: name, MaxAttempts: 1,
		MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	m.emb = emb
	return m
}

// embedded returns the texts embedded so far.
func (m *model) embedded() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.texts)
}

// checkFor polls fn every interval until it reports true, failing the test after timeout.
func checkFor(t *testing.T, timeout time.Duration, what string, fn func() bool) {
	t.Helper()
	brokertest.CheckFor(t, timeout, 20*time.Millisecond, func() error {
		if !fn() {
			return fmt.Errorf("waiting for %s", what)
		}
		return nil
	})
}

// vectorCount counts the stored vectors whose keys match filter (a pack counts its vectors).
func vectorCount(t *testing.T, js jetstream.JetStream, filter string) int {
	t.Helper()
	vs, err := vectors.Open(context.Background(), js, events.DefaultTopology())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := vs.ScanAll(context.Background(), filter, func(vectors.Vector) { n++ }); err != nil {
		t.Fatal(err)
	}
	return n
}

// embedLag is the embedding stage's lag (ok false while its consumers do not exist).
func embedLag(t *testing.T, js jetstream.JetStream) (uint64, bool) {
	t.Helper()
	topo := events.DefaultTopology()
	lags, err := metrics.ConsumerLag(context.Background(), js, topo, nil)
	if err != nil {
		t.Fatal(err)
	}
	return metrics.EmbedLag(topo, lags)
}

// stageDone reports whether the embedding stage has nothing left to handle.
func stageDone(t *testing.T, js jetstream.JetStream) func() bool {
	return func() bool {
		lag, ok := embedLag(t, js)
		return ok && lag == 0
	}
}

// forgetAlice asks for the forget of user alice of tenant acme and returns the reply.
func forgetAlice(t *testing.T, nc *nats.Conn) *nats.Msg {
	t.Helper()
	msg, err := nc.Request("memory.forget.acme", []byte(`{"user":"alice"}`), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

func caughtUp(t *testing.T, js jetstream.JetStream, filter string, want int) func() bool {
	done := stageDone(t, js)
	return func() bool { return done() && vectorCount(t, js, filter) == want }
}

// extracted reports whether the extractors have finished every session end.
func extracted(t *testing.T, js jetstream.JetStream) bool {
	t.Helper()
	topo := events.DefaultTopology()
	lags, err := metrics.ConsumerLag(context.Background(), js, topo, func(_, c string) bool { return c == extract.EndConsumerName(topo) })
	if err != nil {
		t.Fatal(err)
	}
	return len(lags) == 1 && lags[0].Pending == 0 && lags[0].AckPending == 0
}

// sessionHeader reads the counters of a session's header.
func sessionHeader(t *testing.T, js jetstream.JetStream, tenant, sess string) (turns, rejected int) {
	t.Helper()
	kv, err := js.KeyValue(context.Background(), events.DefaultTopology().SessionBucket())
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(context.Background(), tenant+"."+sess)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return 0, 0
	}
	if err != nil {
		t.Fatal(err)
	}
	var h struct{ Turns, Rejected int }
	if err := json.Unmarshal(e.Value(), &h); err != nil {
		t.Fatal(err)
	}
	return h.Turns, h.Rejected
}

var story = []string{
	"I adore felines more than anything.",
	"The weather was rainy all week.",
	"My neighbour has a loud puppy.",
	"Every morning I drink green tea.",
	"I live in Paris and I work as a nurse.",
	"The train was late again today.",
}

// publish publishes n turns of user in session sess (the story, numbered), and returns their
// contents.
func publish(t *testing.T, cl *client.Client, sess, user string, n int) []string {
	t.Helper()
	var out []string
	for i := range n {
		text := story[i%len(story)]
		if i >= len(story) {
			text = fmt.Sprintf("%s (%d)", text, i)
		}
		if _, err := cl.Publish(context.Background(), client.Turn{ID: fmt.Sprintf("%s-%03d", sess, i), Session: sess, User: user, Role: "user", Content: text}); err != nil {
			t.Fatal(err)
		}
		out = append(out, text)
	}
	return out
}

func newClient(t *testing.T, nc *nats.Conn, tenant string) *client.Client {
	t.Helper()
	cl, err := client.New(nc, client.Options{Tenant: tenant})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

func userFilter(model string) string {
	return "acme.alice." + vectors.ModelToken(model) + ".>"
}

func retrieveArchive(t *testing.T, cl *client.Client, query string) events.RetrieveReply {
	t.Helper()
	r, err := cl.Retrieve(context.Background(), events.RetrieveRequest{Query: query, User: "alice", Session: "s1",
		Sources: []string{"short", "long", "archive"}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestTurnsAreEmbeddedOnceBeforeAnyQuery: the stage embeds every applied turn (never a rejected
// one) before anyone asks; a query embeds only its own text and is answered with scores.vector;
// after a restart nothing is embedded again.
func TestTurnsAreEmbeddedOnceBeforeAnyQuery(t *testing.T) {
	m := newModel(t, "concepts", nil)
	dir := t.TempDir()
	cfg := daemon.Config{
		Broker:   broker.Config{Listen: "127.0.0.1:-1", DataDir: dir},
		Ingest:   ingest.Config{IdleTimeout: -1},
		Retrieve: retrieve.Config{Embedder: m.emb},
	}
	d, nc, js := daemontest.Start(t, cfg)
	cl := newClient(t, nc, "acme")
	turns := publish(t, cl, "s1", "alice", 60)
	// A turn naming another user in alice's session: ingest rejects it, it is never embedded.
	if _, err := cl.Publish(context.Background(), client.Turn{ID: "s1-bad", Session: "s1", User: "mallory", Role: "user", Content: "REJECTED mallory's cat"}); err != nil {
		t.Fatal(err)
	}
	checkFor(t, 30*time.Second, "the rejected turn", func() bool { _, rej := sessionHeader(t, js, "acme", "s1"); return rej == 1 })
	checkFor(t, 30*time.Second, "60 vectors and no embedder lag", caughtUp(t, js, userFilter(m.emb.Name()), 60))
	before := m.embedded()
	if len(before) != 60 {
		t.Fatalf("embedded %d texts before any query, want the 60 applied turns", len(before))
	}
	for _, text := range before {
		if strings.Contains(text, "REJECTED") {
			t.Fatal("a rejected turn was embedded")
		}
	}
	slices.Sort(before)
	slices.Sort(turns)
	if !slices.Equal(before, turns) {
		t.Fatalf("embedded %q, want the turns", before)
	}

	r := retrieveArchive(t, cl, "which kitten do I have?")
	if got := m.embedded()[60:]; !slices.Equal(got, []string{"which kitten do I have?"}) {
		t.Fatalf("the query embedded %q, want only its own text", got)
	}
	if len(r.Entries) == 0 || !strings.HasPrefix(r.Entries[0].Content, "I adore felines") {
		t.Fatalf("top entries %+v: the turn about felines should rank first by its vector", r.Entries)
	}
	for _, e := range r.Entries {
		if e.Scores.Vector == nil {
			t.Fatalf("entry %s has no scores.vector: %+v", e.ID, e.Scores)
		}
	}
	if r.Entries[0].Scores.Keyword != 0 || *r.Entries[0].Scores.Vector <= 0 {
		t.Fatalf("scores %+v: want vector relevance and no keyword match", r.Entries[0].Scores)
	}

	// A restart embeds nothing but the next query.
	if err := d.Stop(); err != nil {
		t.Fatal(err)
	}
	_, nc2, js2 := daemontest.Start(t, cfg)
	cl2 := newClient(t, nc2, "acme")
	checkFor(t, 30*time.Second, "the embedder after the restart", caughtUp(t, js2, userFilter(m.emb.Name()), 60))
	r = retrieveArchive(t, cl2, "do I drink a beverage?")
	if got := m.embedded()[61:]; !slices.Equal(got, []string{"do I drink a beverage?"}) {
		t.Fatalf("after a restart the stage or the query embedded %q, want only the query", got)
	}
	if len(r.Entries) == 0 || !strings.HasPrefix(r.Entries[0].Content, "Every morning I drink green tea") || r.Entries[0].Scores.Vector == nil {
		t.Fatalf("after the restart top entries %+v", r.Entries)
	}
}

// TestTwoRetrieverReplicasEmbedOnlyQueries: replicas started after the vectors exist read them;
// neither embeds a stored entry, and a vector written later reaches both.
func TestTwoRetrieverReplicasEmbedOnlyQueries(t *testing.T) {
	m := newModel(t, "concepts", nil)
	_, nc, js := daemontest.Start(t, daemon.Config{Ingest: ingest.Config{IdleTimeout: -1}, Retrieve: retrieve.Config{Embedder: m.emb}})
	cl := newClient(t, nc, "acme")
	publish(t, cl, "s1", "alice", 5)
	checkFor(t, 30*time.Second, "5 vectors", caughtUp(t, js, userFilter(m.emb.Name()), 5))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var replicas []*retrieve.Service
	var models []*model
	for range 2 {
		rm := newModel(t, "concepts", nil) // the same model name, its own counter
		svc, err := retrieve.New(ctx, retrieve.Config{Embedder: rm.emb}, nc, js, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		if err := svc.Start(ctx); err != nil {
			t.Fatal(err)
		}
		replicas, models = append(replicas, svc), append(models, rm)
	}
	ask := func(i int, query, wantTop string) {
		t.Helper()
		r, rerr := replicas[i].Retrieve(ctx, "acme", events.RetrieveRequest{Query: query, User: "alice", Sources: []string{"archive"}})
		if rerr != nil {
			t.Fatal(rerr)
		}
		if len(r.Entries) == 0 || !strings.HasPrefix(r.Entries[0].Content, wantTop) || r.Entries[0].Scores.Vector == nil {
			t.Fatalf("replica %d, %q: top entries %+v, want %q with a vector score", i, query, r.Entries, wantTop)
		}
	}
	for i := range replicas {
		ask(i, "my canine friend", "My neighbour has a loud puppy")
		ask(i, "my canine friend", "My neighbour has a loud puppy")
		if got := models[i].embedded(); !slices.Equal(got, []string{"my canine friend"}) {
			t.Fatalf("replica %d embedded %q, want the query once (the second time from the cache)", i, got)
		}
	}
	// A turn published now is embedded by the stage and followed by both replicas.
	publish(t, cl, "s2", "alice", 5) // the same texts in a new session: 5 more vectors
	checkFor(t, 30*time.Second, "10 vectors", caughtUp(t, js, userFilter(m.emb.Name()), 10))
	for i := range replicas {
		checkFor(t, 10*time.Second, "the replica to follow the new vectors", func() bool {
			r, rerr := replicas[i].Retrieve(ctx, "acme", events.RetrieveRequest{Query: "my canine friend", User: "alice", Sources: []string{"archive"}})
			if rerr != nil {
				t.Fatal(rerr)
			}
			n := 0
			for _, e := range r.Entries {
				if strings.HasPrefix(e.Content, "My neighbour has a loud puppy") && e.Scores.Vector != nil && *e.Scores.Vector > 0 {
					n++
				}
			}
			return n == 2
		})
		if got := models[i].embedded(); !slices.Equal(got, []string{"my canine friend"}) {
			t.Fatalf("replica %d embedded %q, want only the query", i, got)
		}
	}
}

// backoff retries quickly but leaves a failing message 8 deliveries over about 12 seconds.
func backoff(n uint64) time.Duration { return 50 * time.Millisecond << min(n, 8) }

// TestOutageStallsTheEmbedderNotIngest: while the endpoint fails, ingest applies turns, retrieval
// ranks by keywords without scores.vector, and the stage's lag shows; afterwards it catches up.
func TestOutageStallsTheEmbedderNotIngest(t *testing.T) {
	m := newModel(t, "concepts", nil)
	m.fail.Store(true)
	_, nc, js := daemontest.Start(t, daemon.Config{Ingest: ingest.Config{IdleTimeout: -1},
		Retrieve: retrieve.Config{Embedder: m.emb}, Embed: embedder.Config{Backoff: backoff}})
	cl := newClient(t, nc, "acme")
	publish(t, cl, "s1", "alice", 6)
	checkFor(t, 30*time.Second, "ingest to apply the turns", func() bool { n, _ := sessionHeader(t, js, "acme", "s1"); return n == 6 })
	checkFor(t, 30*time.Second, "the stage to try", func() bool { return m.failed.Load() > 0 })
	if lag, ok := embedLag(t, js); !ok || lag == 0 {
		t.Fatalf("embed lag %d (consumers %v) during the outage, want > 0", lag, ok)
	}
	r := retrieveArchive(t, cl, "felines")
	if len(r.Entries) == 0 || !strings.HasPrefix(r.Entries[0].Content, "I adore felines") {
		t.Fatalf("during the outage keyword retrieval found %+v", r.Entries)
	}
	for _, e := range r.Entries {
		if e.Scores.Vector != nil {
			t.Fatalf("entry %s has scores.vector during the outage", e.ID)
		}
	}
	m.fail.Store(false)
	checkFor(t, 60*time.Second, "the stage to catch up", caughtUp(t, js, userFilter(m.emb.Name()), 6))
	// The retriever, which loaded alice's view during the outage, follows the new vectors.
	checkFor(t, 10*time.Second, "vector scores after the outage", func() bool {
		r = retrieveArchive(t, cl, "which kitten do I have?")
		return len(r.Entries) > 0 && strings.HasPrefix(r.Entries[0].Content, "I adore felines") && r.Entries[0].Scores.Vector != nil
	})
	if n := dlqCount(t, js); n != 0 {
		t.Fatalf("%d dead letters after a short outage", n)
	}
}

func dlqCount(t *testing.T, js jetstream.JetStream) int {
	t.Helper()
	s, err := js.Stream(context.Background(), events.DefaultTopology().DeadLetterStream())
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return int(info.State.Msgs)
}

// TestLastDeliveryIsDeadLettered: an endpoint that never recovers dead-letters the message after
// its last delivery, like every worker; the stage is not blocked behind it.
func TestLastDeliveryIsDeadLettered(t *testing.T) {
	m := newModel(t, "concepts", nil)
	m.fail.Store(true)
	_, nc, js := daemontest.Start(t, daemon.Config{Ingest: ingest.Config{IdleTimeout: -1},
		Retrieve: retrieve.Config{Embedder: m.emb}, Embed: embedder.Config{Backoff: func(uint64) time.Duration { return 10 * time.Millisecond }}})
	cl := newClient(t, nc, "acme")
	publish(t, cl, "s1", "alice", 1)
	checkFor(t, 60*time.Second, "a dead letter", func() bool { return dlqCount(t, js) == 1 })
	s, _ := js.Stream(context.Background(), events.DefaultTopology().DeadLetterStream())
	msg, err := s.GetLastMsgForSubject(context.Background(), "memory.dlq.acme.s1")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(msg.Data, []byte(embedder.TurnsConsumerName(events.DefaultTopology()))) || !bytes.Contains(msg.Data, []byte("500 Internal Server Error")) {
		t.Fatalf("dead letter %s: want the embedder's consumer and the endpoint's error", msg.Data)
	}
	checkFor(t, 30*time.Second, "no lag", stageDone(t, js))
}

// TestRedeliveryAndReplayEmbedNothingTwice: a failed batch is redelivered and stored once; a
// consumer replaying the whole streams from the start embeds nothing.
func TestRedeliveryAndReplayEmbedNothingTwice(t *testing.T) {
	m := newModel(t, "concepts", func(m *model) { m.failFirst = 1 })
	_, nc, js := daemontest.Start(t, daemon.Config{Ingest: ingest.Config{IdleTimeout: -1},
		Retrieve: retrieve.Config{Embedder: m.emb}, Embed: embedder.Config{Backoff: backoff}})
	cl := newClient(t, nc, "acme")
	publish(t, cl, "s1", "alice", 4)
	checkFor(t, 30*time.Second, "4 vectors", caughtUp(t, js, userFilter(m.emb.Name()), 4))
	if m.failed.Load() != 1 || len(m.embedded()) != 4 {
		t.Fatalf("failed %d, embedded %d: want the first batch failed and each turn embedded once", m.failed.Load(), len(m.embedded()))
	}
	topo := events.DefaultTopology()
	vs, _ := js.Stream(context.Background(), "KV_"+topo.VectorBucket())
	info, _ := vs.Info(context.Background())
	writes := info.State.LastSeq

	// Replay: the consumers start over from the first message of each stream.
	ctx, cancel := context.WithCancel(context.Background())
	for _, c := range embedder.Consumers(topo) {
		if err := js.DeleteConsumer(ctx, c.Stream, c.Name()); err != nil {
			t.Fatal(err)
		}
	}
	w, err := embedder.New(ctx, embedder.Config{}, js, m.emb, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	checkFor(t, 30*time.Second, "the replay", caughtUp(t, js, userFilter(m.emb.Name()), 4))
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	info, _ = vs.Info(context.Background())
	if info.State.LastSeq != writes || len(m.embedded()) != 4 {
		t.Fatalf("the replay wrote %d vectors and embedded %d texts, want none", info.State.LastSeq-writes, len(m.embedded())-4)
	}
}

// TestForgetRemovesVectors: forget removes the user's vectors of every model, and the retriever
// answers nothing of the user afterwards.
func TestForgetRemovesVectors(t *testing.T) {
	m := newModel(t, "concepts", nil)
	_, nc, js := daemontest.Start(t, daemon.Config{Ingest: ingest.Config{IdleTimeout: -1}, Retrieve: retrieve.Config{Embedder: m.emb}})
	cl := newClient(t, nc, "acme")
	publish(t, cl, "s1", "alice", 3)
	checkFor(t, 30*time.Second, "3 vectors", caughtUp(t, js, userFilter(m.emb.Name()), 3))
	retrieveArchive(t, cl, "kitten") // the retriever holds alice's vectors now
	msg := forgetAlice(t, nc)
	var rep events.ForgetReply
	if err := json.Unmarshal(msg.Data, &rep); err != nil || rep.Forgotten["vectors"] != 3 {
		t.Fatalf("forget replied %s (%v): want 3 vectors forgotten", msg.Data, err)
	}
	if n := vectorCount(t, js, "acme.alice.>"); n != 0 {
		t.Fatalf("%d vectors of alice after forget", n)
	}
	r, err := cl.Retrieve(context.Background(), events.RetrieveRequest{Query: "kitten", User: "alice", Sources: []string{"long", "archive"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Entries) != 0 {
		t.Fatalf("after forget: %+v", r.Entries)
	}
}

// TestForgetOutwaitsAnEmbeddingInFlight: an embedding call that returns after forget's first pass
// (a slow or retried model) would store its vectors after the user's vectors were purged; the
// stage decides the turn again before it stores (the tombstone says it is forgotten), and forget
// waits for the stage to finish such work before its second pass, which would remove what it
// stored, so nothing of the user is left once it answers.
func TestForgetOutwaitsAnEmbeddingInFlight(t *testing.T) {
	m := newModel(t, "concepts", func(m *model) { m.hold, m.held = make(chan struct{}), make(chan struct{}, 1) })
	_, nc, js := daemontest.Start(t, daemon.Config{Ingest: ingest.Config{IdleTimeout: -1}, Retrieve: retrieve.Config{Embedder: m.emb}})
	cl := newClient(t, nc, "acme")
	publish(t, cl, "s1", "alice", 1)
	checkFor(t, 30*time.Second, "the first vector", caughtUp(t, js, userFilter(m.emb.Name()), 1))
	// The next turns' embedding call is kept waiting at the model.
	if _, err := cl.Publish(context.Background(), client.Turn{ID: "s1-late", Session: "s1", User: "alice", Role: "user", Content: "My kitten sleeps all day."}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-m.held:
	case <-time.After(30 * time.Second):
		t.Fatal("the second embedding call never reached the model")
	}
	// The model answers once forget asks whether the stage is done with the turns (so after its
	// first pass), or, if forget does not ask, once it has answered.
	topo := events.DefaultTopology()
	asked, err := nc.SubscribeSync("$JS.API.CONSUMER.INFO." + topo.TurnsStream() + "." + embedder.TurnsConsumerName(topo))
	if err != nil {
		t.Fatal(err)
	}
	type answer struct {
		msg *nats.Msg
		err error
	}
	answered := make(chan answer, 1)
	go func() {
		msg, err := nc.Request("memory.forget.acme", []byte(`{"user":"alice"}`), 30*time.Second)
		answered <- answer{msg, err}
	}()
	release := sync.OnceFunc(func() { close(m.hold) })
	go func() {
		if _, err := asked.NextMsg(30 * time.Second); err == nil {
			release()
		}
	}()
	var got answer
	select {
	case got = <-answered:
	case <-time.After(30 * time.Second):
		t.Fatal("forget did not answer")
	}
	_ = asked.Unsubscribe()
	release() // forget answered without asking: let the stored vector show it
	if got.err != nil {
		t.Fatalf("forget: %v", got.err)
	}
	var rep events.ForgetReply
	if err := json.Unmarshal(got.msg.Data, &rep); err != nil {
		t.Fatal(err)
	}
	checkFor(t, 30*time.Second, "the stage to finish", stageDone(t, js))
	if n := vectorCount(t, js, "acme.alice.>"); n != 0 {
		t.Fatalf("%d vectors of alice stored after forget answered %s", n, got.msg.Data)
	}
	if n := rep.Forgotten["vectors"]; n < 1 || n > 2 {
		t.Errorf("forget replied %s: want the first vector forgotten (and the late one, if it was stored)", got.msg.Data)
	}
}

// TestForgottenTurnsDeliveredLaterAreNotEmbedded: a stage stuck longer than forget waits for it
// (one handler here, its embedding call kept waiting until forget has answered) does not hold the
// forget up beyond its bound; the turns of the forgotten session delivered to it afterwards are
// not embedded, and the call in flight, decided before the forget, does not store its vector: the
// turn is decided again before the store. (Whether the stage's cached state of the session is
// dropped on the tombstone is TestForgottenSessionIsDecidedAgain's; here the state is read again
// after the forget anyway.)
func TestForgottenTurnsDeliveredLaterAreNotEmbedded(t *testing.T) {
	m := newModel(t, "concepts", func(m *model) { m.hold, m.held = make(chan struct{}), make(chan struct{}, 1) })
	_, nc, js := daemontest.Start(t, daemon.Config{Ingest: ingest.Config{IdleTimeout: -1},
		Retrieve: retrieve.Config{Embedder: m.emb}, Embed: embedder.Config{Concurrency: 1}})
	cl := newClient(t, nc, "acme")
	publish(t, cl, "s1", "alice", 1)
	checkFor(t, 30*time.Second, "the first vector", caughtUp(t, js, userFilter(m.emb.Name()), 1))
	late := []string{"My kitten sleeps all day.", "I drink tea every morning.", "My puppy is called Rex."}
	for i, text := range late {
		if _, err := cl.Publish(context.Background(), client.Turn{ID: fmt.Sprintf("s1-late-%d", i), Session: "s1", User: "alice", Role: "user", Content: text}); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-m.held:
	case <-time.After(30 * time.Second):
		t.Fatal("the second embedding call never reached the model")
	}
	// Ingest has applied the late turns before the forget (so a state read then says so).
	checkFor(t, 30*time.Second, "ingest to apply the late turns", func() bool {
		turns, _ := sessionHeader(t, js, "acme", "s1")
		return turns == 4
	})
	msg := forgetAlice(t, nc)
	close(m.hold)
	checkFor(t, 30*time.Second, "the stage to finish", stageDone(t, js))
	embedded := m.embedded()
	for _, text := range late[1:] {
		if slices.Contains(embedded, text) {
			t.Errorf("%q was embedded after forget answered %s", text, msg.Data)
		}
	}
	if n := vectorCount(t, js, "acme.alice.>"); n != 0 {
		t.Errorf("%d vectors of alice after forget, the embedding call in flight stored its vector", n)
	}
}

// TestForgottenFactOutlastingTheWaitIsNotStored: a fact's embedding call kept waiting at the model
// until forget has answered (longer than forget waits for the stage) does not store the fact's
// vector: the stage reads the fact again before it stores, and the forget removed it.
func TestForgottenFactOutlastingTheWaitIsNotStored(t *testing.T) {
	m := newModel(t, "concepts", func(m *model) { m.hold, m.held = make(chan struct{}), make(chan struct{}, 1) })
	_, nc, js := daemontest.Start(t, daemon.Config{Ingest: ingest.Config{IdleTimeout: -1}, Retrieve: retrieve.Config{Embedder: m.emb}})
	cl := newClient(t, nc, "acme")
	if _, err := cl.Publish(context.Background(), client.Turn{ID: "s1-0", Session: "s1", User: "alice", Role: "user",
		Content: "I love writing Go, it's my favourite language."}); err != nil {
		t.Fatal(err)
	}
	checkFor(t, 30*time.Second, "the turn's vector", caughtUp(t, js, userFilter(m.emb.Name()), 1))
	// The session's end makes a fact of the turn (the extractor's rules); its embedding call is
	// the model's second request, kept waiting.
	if _, err := cl.EndSession(context.Background(), "s1", "alice"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-m.held:
	case <-time.After(30 * time.Second):
		t.Fatal("no embedding call of the fact reached the model")
	}
	msg := forgetAlice(t, nc)
	close(m.hold)
	checkFor(t, 30*time.Second, "the stage to finish", stageDone(t, js))
	if embedded := m.embedded(); !slices.ContainsFunc(embedded, func(s string) bool {
		return strings.Contains(s, "Go") && s != "I love writing Go, it's my favourite language."
	}) {
		t.Fatalf("the model embedded %q: no fact, the test shows nothing", embedded)
	}
	if n := vectorCount(t, js, "acme.alice.>"); n != 0 {
		t.Errorf("%d vectors of alice after forget answered %s: the fact's was stored after the forget", n, msg.Data)
	}
}

// TestModelChangeBackfillsWhileOldVectorsServe: a retriever moving from model A to model B answers
// with A's vectors until a backfill has made B's for everything stored, then with B's; the
// backfill embeds applied turns and facts once, and nothing when run again.
func TestModelChangeBackfillsWhileOldVectorsServe(t *testing.T) {
	a := newModel(t, "concepts-a", nil)
	_, nc, js := daemontest.Start(t, daemon.Config{Ingest: ingest.Config{IdleTimeout: -1}, Retrieve: retrieve.Config{Embedder: a.emb}})
	cl := newClient(t, nc, "acme")
	publish(t, cl, "s1", "alice", 6)
	if _, err := cl.EndSession(context.Background(), "s1", "alice"); err != nil {
		t.Fatal(err)
	}
	// The extractor's rules make facts of the session; the stage embeds them too.
	long, err := js.KeyValue(context.Background(), events.DefaultTopology().LongTermBucket())
	if err != nil {
		t.Fatal(err)
	}
	facts := 0
	checkFor(t, 30*time.Second, "the facts and every vector of model A", func() bool {
		keys, err := long.ListKeysFiltered(context.Background(), "acme.alice.f.>")
		if err != nil {
			return false
		}
		facts = 0
		for range keys.Keys() {
			facts++
		}
		return facts > 0 && extracted(t, js) && caughtUp(t, js, userFilter(a.emb.Name()), 6+facts)()
	})

	b := newModel(t, "concepts-b", nil)
	prev := newModel(t, "concepts-a", nil) // the replica's own client of model A
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	svc, err := retrieve.New(ctx, retrieve.Config{Embedder: b.emb, PreviousEmbedder: prev.emb}, nc, js, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	ask := func(query string) events.RetrieveReply {
		t.Helper()
		r, rerr := svc.Retrieve(ctx, "acme", events.RetrieveRequest{Query: query, User: "alice", Sources: []string{"archive"}})
		if rerr != nil {
			t.Fatal(rerr)
		}
		if len(r.Entries) == 0 || r.Entries[0].Scores.Vector == nil {
			t.Fatalf("%q: %+v, want entries with vector scores", query, r.Entries)
		}
		return r
	}
	r := ask("which kitten do I have?")
	if !strings.HasPrefix(r.Entries[0].Content, "I adore felines") {
		t.Fatalf("with model A's vectors: %+v", r.Entries)
	}
	if got := prev.embedded(); !slices.Equal(got, []string{"which kitten do I have?"}) || len(b.embedded()) != 0 {
		t.Fatalf("before the backfill the query was embedded by A %q and by B %q, want A only", got, b.embedded())
	}

	var last [2]int
	res, err := embedder.Backfill(ctx, embedder.BackfillConfig{BatchSize: 4, Progress: func(done, total int) { last = [2]int{done, total} }}, js, b.emb, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if res.Entries != 6+facts || res.Embedded != 6+facts || !res.Marked || last != [2]int{6 + facts, 6 + facts} {
		t.Fatalf("backfill %+v, last progress %v: want %d entries embedded and the model marked complete", res, last, 6+facts)
	}
	if n := len(b.embedded()); n != 6+facts {
		t.Fatalf("the backfill embedded %d texts, want %d", n, 6+facts)
	}
	if n := vectorCount(t, js, userFilter(b.emb.Name())); n != 6+facts {
		t.Fatalf("%d vectors of model B, want %d", n, 6+facts)
	}
	checkFor(t, 10*time.Second, "the replica to answer with model B", func() bool {
		ask("my canine friend")
		return slices.Contains(b.embedded(), "my canine friend")
	})
	r = ask("a hot beverage")
	if !strings.HasPrefix(r.Entries[0].Content, "Every morning I drink green tea") {
		t.Fatalf("with model B's vectors: %+v", r.Entries)
	}
	if got := b.embedded()[6+facts:]; got[len(got)-1] != "a hot beverage" || slices.Contains(prev.embedded(), "a hot beverage") {
		t.Fatalf("after the switch B embedded %q, A %q: want the queries by B only", got, prev.embedded())
	}
	again, err := embedder.Backfill(ctx, embedder.BackfillConfig{}, js, b.emb, zerolog.Nop())
	if err != nil || again.Embedded != 0 || again.Had != 6+facts {
		t.Fatalf("a second backfill: %+v, %v: want nothing embedded", again, err)
	}
}

// TestSummariesAndFactsAreEmbedded: compression's summaries and extraction's facts get vectors
// too, the long-term view ranks them by meaning, and the metrics count the stage's work.
func TestSummariesAndFactsAreEmbedded(t *testing.T) {
	m := newModel(t, "concepts", nil)
	reg := metrics.New()
	budget := memory.DefaultBudget()
	budget.ContextWindow, budget.System, budget.Tools, budget.Response = 1000, 0, 0, 0
	_, nc, js := daemontest.Start(t, daemon.Config{Ingest: ingest.Config{Budget: budget, SummaryTokens: 100, IdleTimeout: -1},
		Retrieve: retrieve.Config{Embedder: m.emb}, Metrics: reg})
	web := httptest.NewServer(reg.Handler())
	t.Cleanup(web.Close)
	cl := newClient(t, nc, "acme")
	for i := range 20 {
		text := fmt.Sprintf("turn %d: I adore felines, my kitten sleeps all day. %s", i, strings.Repeat("The weather was rainy. ", 10))
		if _, err := cl.Publish(context.Background(), client.Turn{ID: fmt.Sprintf("t%02d", i), Session: "s1", User: "alice", Role: "user", Content: text}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cl.EndSession(context.Background(), "s1", "alice"); err != nil {
		t.Fatal(err)
	}
	store, err := vectors.Open(context.Background(), js, events.DefaultTopology())
	if err != nil {
		t.Fatal(err)
	}
	long, err := js.KeyValue(context.Background(), events.DefaultTopology().LongTermBucket())
	if err != nil {
		t.Fatal(err)
	}
	count := func(filter string) int {
		keys, err := long.ListKeysFiltered(context.Background(), filter)
		if err != nil {
			return 0
		}
		n := 0
		for range keys.Keys() {
			n++
		}
		return n
	}
	var kinds map[byte]int
	checkFor(t, 60*time.Second, "vectors of every summary and fact", func() bool {
		sums, facts := count("acme.alice.s.>"), count("acme.alice.f.>")
		if sums == 0 || facts == 0 || !extracted(t, js) {
			return false
		}
		if lag, ok := embedLag(t, js); !ok || lag > 0 {
			return false
		}
		kinds = map[byte]int{}
		if err := store.ScanAll(context.Background(), "acme.alice.>", func(v vectors.Vector) { kinds[v.Kind]++ }); err != nil {
			t.Fatal(err)
		}
		return kinds[vectors.KindSummary] == sums && kinds[vectors.KindFact] == facts && kinds[vectors.KindTurn] == 20
	})
	r, err := cl.Retrieve(context.Background(), events.RetrieveRequest{Query: "which pet?", User: "alice", Sources: []string{"long"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Entries) == 0 || r.Entries[0].Scores.Vector == nil || *r.Entries[0].Scores.Vector <= 0 {
		t.Fatalf("long-term entries %+v: want facts and summaries ranked by their vectors", r.Entries)
	}
	got := metricstest.Scrape(t, web.URL)
	if got.Value("agentmem_vectors_stored_total", "kind", "summary") != float64(kinds[vectors.KindSummary]) ||
		got.Value("agentmem_vectors_stored_total", "kind", "fact") != float64(kinds[vectors.KindFact]) ||
		got.Value("agentmem_embedder_texts_total", "model", m.emb.Name()) < float64(20+kinds[vectors.KindSummary]+kinds[vectors.KindFact]) ||
		!got.Has("agentmem_embed_lag_messages") {
		t.Fatalf("metrics: stored %v/%v, embedded %v, lag exposed %v; kinds %v", got.Value("agentmem_vectors_stored_total", "kind", "summary"),
			got.Value("agentmem_vectors_stored_total", "kind", "fact"), got.Value("agentmem_embedder_texts_total", "model", m.emb.Name()), got.Has("agentmem_embed_lag_messages"), kinds)
	}
}

// TestNoEmbedderLeavesNoConsumer: memoryd restarted without an embedder removes the stage's
// consumers, so that none is left without a worker behind it.
func TestNoEmbedderLeavesNoConsumer(t *testing.T) {
	m := newModel(t, "concepts", nil)
	cfg := daemon.Config{Broker: broker.Config{Listen: "127.0.0.1:-1", DataDir: t.TempDir()}, Ingest: ingest.Config{IdleTimeout: -1},
		Retrieve: retrieve.Config{Embedder: m.emb}}
	d, _, js := daemontest.Start(t, cfg)
	if _, ok := embedLag(t, js); !ok {
		t.Fatal("no embedder consumers with an embedder")
	}
	if err := d.Stop(); err != nil {
		t.Fatal(err)
	}
	cfg.Retrieve.Embedder = nil
	_, _, js = daemontest.Start(t, cfg)
	if _, ok := embedLag(t, js); ok {
		t.Fatal("the embedder consumers outlived the embedder")
	}
}

// TestVectorsStayWithTheirTenant: another tenant asking for the same user name gets nothing, and
// a value naming another tenant under a key of acme's is corrupt: counted, and read as absent.
func TestVectorsStayWithTheirTenant(t *testing.T) {
	m := newModel(t, "concepts", nil)
	reg := metrics.New()
	_, nc, js := daemontest.Start(t, daemon.Config{Ingest: ingest.Config{IdleTimeout: -1}, Retrieve: retrieve.Config{Embedder: m.emb}, Metrics: reg})
	cl := newClient(t, nc, "acme")
	publish(t, cl, "s1", "alice", 3)
	checkFor(t, 30*time.Second, "3 vectors", caughtUp(t, js, userFilter(m.emb.Name()), 3))
	// Replace alice's vectors with a vector of s1-000 and a pack of s1-000 and s1-001, under
	// acme's keys, that name tenant beta.
	ctx := context.Background()
	kv, err := js.KeyValue(ctx, events.DefaultTopology().VectorBucket())
	if err != nil {
		t.Fatal(err)
	}
	keys, err := kv.ListKeysFiltered(ctx, "acme.alice.>")
	if err != nil {
		t.Fatal(err)
	}
	for key := range keys.Keys() {
		if err := kv.Purge(ctx, key); err != nil { // watchers see it: the retriever reads alice's vectors again
			t.Fatal(err)
		}
	}
	forged := func(id string) vectors.Vector {
		return vectors.Vector{Tenant: "beta", User: "alice", Model: m.emb.Name(), ID: id, Kind: vectors.KindTurn, Scale: 1, Q: []int8{127, 0, 0, 0, 0}}
	}
	if _, err := kv.Put(ctx, vectors.Key("acme", "alice", m.emb.Name(), "s1-000"), vectors.Encode(forged("s1-000"))); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, vectors.PackKey("acme", "alice", m.emb.Name(), "forged"), vectors.EncodePack([]vectors.Vector{forged("s1-000"), forged("s1-001")})); err != nil {
		t.Fatal(err)
	}
	web := httptest.NewServer(reg.Handler())
	t.Cleanup(web.Close)
	// Both forged values are read and counted (the retriever reads alice's vectors again once
	// its watcher has seen the purges), and never used.
	brokertest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		r := retrieveArchive(t, cl, "which kitten do I have?")
		for _, e := range r.Entries {
			if (e.ID == "s1-000" || e.ID == "s1-001") && e.Scores.Vector != nil {
				return fmt.Errorf("a vector of %s is used: %+v", e.ID, e.Scores)
			}
		}
		if v := metricstest.Scrape(t, web.URL).Value("agentmem_kv_corrupt_total", "bucket", "AGENTMEM_VECTORS", "reason", "tenant"); v < 2 {
			return fmt.Errorf("agentmem_kv_corrupt_total of the vector bucket %v, want both forged values counted", v)
		}
		return nil
	})
	beta := newClient(t, nc, "beta")
	rb, err := beta.Retrieve(context.Background(), events.RetrieveRequest{Query: "which kitten do I have?", User: "alice", Sources: []string{"long", "archive"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rb.Entries) != 0 {
		t.Fatalf("tenant beta got %+v", rb.Entries)
	}
}

// TestEveryFormOfAnAppliedTurnIsEmbedded: the stage reads turns without building a CloudEvent
// where it can (agentmem's binary mode), and falls back to decoding the event: a structured-mode
// turn (its lower-case content-type header was once missed, and such turns were never embedded)
// and a binary-mode turn with a percent-encoded header are embedded like plain ones; a message
// ingest rejects because its body is not JSON is not embedded and holds nothing up.
func TestEveryFormOfAnAppliedTurnIsEmbedded(t *testing.T) {
	m := newModel(t, "concepts", nil)
	_, _, js := daemontest.Start(t, daemon.Config{Ingest: ingest.Config{IdleTimeout: -1}, Retrieve: retrieve.Config{Embedder: m.emb}})
	ctx := context.Background()
	turn := func(id, text string) *nats.Msg {
		t.Helper()
		ev, err := events.NewEvent(id, events.TypeTurn, "test", time.Now(), events.Turn{Role: "user", Content: text, User: "alice"})
		if err != nil {
			t.Fatal(err)
		}
		msg, err := events.EventMsg("acme", "s1", ev)
		if err != nil {
			t.Fatal(err)
		}
		return msg
	}
	plain := turn("s1-plain", "I adore felines more than anything.")
	ev, err := events.NewEvent("s1-structured", events.TypeTurn, "test", time.Now(), events.Turn{Role: "user", Content: "My neighbour has a loud puppy.", User: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	structured, err := events.StructuredEventMsg("acme", "s1", ev)
	if err != nil {
		t.Fatal(err)
	}
	encoded := turn("s1-encoded", "Every morning I drink green tea.")
	encoded.Header.Set("ce-source", "test%20source") // percent-encoded: read through the full decoder
	bad := turn("s1-bad", "REJECTED")
	bad.Data = []byte(`{"role":"user","content":"REJECTED`)
	last := turn("s1-last", "The train was late again today.")
	for _, msg := range []*nats.Msg{plain, structured, encoded, bad, last} {
		if _, err := js.PublishMsg(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	checkFor(t, 30*time.Second, "the rejected turn", func() bool { _, rej := sessionHeader(t, js, "acme", "s1"); return rej == 1 })
	checkFor(t, 30*time.Second, "4 vectors and no embedder lag", caughtUp(t, js, userFilter(m.emb.Name()), 4))
	got := m.embedded()
	slices.Sort(got)
	want := []string{"Every morning I drink green tea.", "I adore felines more than anything.", "My neighbour has a loud puppy.", "The train was late again today."}
	if !slices.Equal(got, want) {
		t.Fatalf("embedded %q, want %q", got, want)
	}
}
