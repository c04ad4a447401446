package retrieve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/daemon"
	"github.com/agentmem/agentmem/internal/daemon/daemontest"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/internal/longterm"
	"github.com/agentmem/agentmem/internal/metrics"
	"github.com/agentmem/agentmem/internal/metrics/metricstest"
	"github.com/agentmem/agentmem/internal/retrieve"
	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

// corruptEnv is a memoryd with metrics, a client of tenant acme and raw handles on the buckets,
// to write into acme's keys as a confused deputy working for another tenant would have.
type corruptEnv struct {
	*env
	js      jetstream.JetStream
	metrics string
}

func startCorrupt(t *testing.T) *corruptEnv {
	t.Helper()
	m := metrics.New()
	srv := httptest.NewServer(m.Handler())
	t.Cleanup(srv.Close)
	cfg := daemon.Config{
		Ingest:   ingest.Config{IdleTimeout: -1},
		Retrieve: retrieve.Config{Now: func() time.Time { return day.Add(48 * time.Hour) }},
		Metrics:  m,
	}
	_, nc, js := daemontest.Start(t, cfg)
	cl, err := client.New(nc, client.Options{Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	return &corruptEnv{env: &env{nc: nc, cl: cl, cfg: cfg}, js: js, metrics: srv.URL + "/metrics"}
}

func (e *corruptEnv) put(t *testing.T, bucket, key string, v any) {
	t.Helper()
	ctx := context.Background()
	kv, err := e.js.KeyValue(ctx, bucket)
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, key, data); err != nil {
		t.Fatal(err)
	}
}

func (e *corruptEnv) count(reason string) float64 {
	fams, err := metricstest.ScrapeErr(e.metrics)
	if err != nil {
		return -1
	}
	return fams.Value("agentmem_kv_corrupt_total", "reason", reason)
}

func ids(r events.RetrieveReply) []string {
	var out []string
	for _, en := range r.Entries {
		out = append(out, en.ID)
	}
	return out
}

// TestForeignLongTermRecordsDoNotBreakOrLeakIntoRetrieves: another tenant's fact planted in a
// user's memory and a session index entry overwritten with one naming another session (which
// made every retrieve of the user answer 500) are left out, counted and logged; the user's
// genuine memory is still answered.
func TestForeignLongTermRecordsDoNotBreakOrLeakIntoRetrieves(t *testing.T) {
	e := startCorrupt(t)
	turns := conversation()
	e.seed(t, "s1", "alice", turns)
	topo := events.DefaultTopology()
	ctx := context.Background()

	e.put(t, topo.LongTermBucket(), longterm.SessionKey("acme", "alice", "s1"), longterm.SessionRef{Session: "not a key!"})
	e.put(t, topo.LongTermBucket(), longterm.FactKey("acme", "alice", "f-planted"), longterm.Fact{
		ID: "f-planted", Tenant: "evil", User: "alice", Content: "My favourite language is COBOL", Category: "preference",
		ValidFrom: day, Confidence: 1,
	})
	req := events.RetrieveRequest{Query: "favourite language", User: "alice", Sources: []string{"long", "archive"}}
	brokertest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		reply, err := e.cl.Retrieve(ctx, req)
		if err != nil {
			t.Fatalf("retrieve answered an error: %v", err)
		}
		if slices.Contains(ids(reply), "f-planted") {
			t.Fatalf("the planted fact was answered: %v", ids(reply))
		}
		if e.count("tenant") < 1 || e.count("session") < 1 {
			return fmt.Errorf("corrupt records not counted yet (tenant %v, session %v)", e.count("tenant"), e.count("session"))
		}
		return nil
	})
	// The user's own memory still answers: the turns of the session (short-term memory, and the
	// archive the user view had read before).
	reply, err := e.cl.Retrieve(ctx, events.RetrieveRequest{Query: "favourite language", Session: "s1", User: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(ids(reply), "s1-02") || slices.Contains(ids(reply), "f-planted") {
		t.Fatalf("retrieve of the session answered %v, want the genuine turn s1-02 and no planted fact", ids(reply))
	}
}

// TestForeignSessionHeaderReadsAsAbsentUntilIngestRebuildsIt: a session header overwritten with
// another tenant's makes the session read as absent (no error); the next turn of the session
// makes ingest rebuild it from the turns stream, with its owner and every turn.
func TestForeignSessionHeaderReadsAsAbsentUntilIngestRebuildsIt(t *testing.T) {
	e := startCorrupt(t)
	turns := conversation()
	e.seed(t, "s1", "alice", turns)
	topo := events.DefaultTopology()
	ctx := context.Background()

	e.put(t, topo.SessionBucket(), "acme.s1", session.Header{V: 1, Tenant: "alpha", Session: "s9", User: "mallory", Partition: -1})
	reply, err := e.cl.Retrieve(ctx, events.RetrieveRequest{Query: "favourite language", Session: "s1"})
	if err != nil {
		t.Fatalf("retrieve of a session with a foreign header: %v", err)
	}
	if len(reply.Entries) != 0 {
		t.Fatalf("a session with a foreign header answered %v, want nothing", ids(reply))
	}
	if n := e.count("tenant"); n < 1 {
		t.Fatalf("agentmem_kv_corrupt_total{reason=tenant} = %v, want at least 1", n)
	}

	// The owner's next turn: ingest replaces the foreign header by the session rebuilt from the
	// stream (revision-checked against the foreign header it read).
	next := client.Turn{ID: "s1-08", Session: "s1", User: "alice", Role: "user", Content: "Remind me about my favourite language.", Time: day.Add(time.Hour)}
	if _, err := e.cl.Publish(ctx, next); err != nil {
		t.Fatal(err)
	}
	reply, err = e.cl.Retrieve(ctx, events.RetrieveRequest{Query: "favourite language", Session: "s1", After: "s1-08", WaitMS: 20000})
	if err != nil {
		t.Fatalf("waiting for ingest to rebuild the session: %v", err)
	}
	if got := ids(reply); !slices.Contains(got, "s1-02") || !slices.Contains(got, "s1-08") {
		t.Fatalf("rebuilt session answered %v, want the earlier turn s1-02 and the new s1-08", got)
	}
	kv, err := e.js.KeyValue(ctx, topo.SessionBucket())
	if err != nil {
		t.Fatal(err)
	}
	entry, err := kv.Get(ctx, "acme.s1")
	if err != nil {
		t.Fatal(err)
	}
	var h session.Header
	if err := json.Unmarshal(entry.Value(), &h); err != nil {
		t.Fatal(err)
	}
	if h.Tenant != "acme" || h.Session != "s1" || h.User != "alice" || h.Turns != len(turns)+1 {
		t.Fatalf("rebuilt header %+v, want acme/s1 of alice with %d turns", h, len(turns)+1)
	}
}
