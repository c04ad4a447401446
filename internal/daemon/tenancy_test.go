package daemon_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/auth"
	"github.com/agentmem/agentmem/internal/broker"
	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/daemon"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/internal/limits"
	"github.com/agentmem/agentmem/internal/retrieve"
	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

// secured is a memoryd with authentication on: worker, operator, admin and agents of tenants a
// and b, each an NKey user with the permissions of internal/auth.
type secured struct {
	d     *daemon.Daemon
	store *auth.Store
	url   string
}

func startSecured(t *testing.T, lim *limits.Limiter) *secured {
	return startSecuredWith(t, lim)
}

func startSecuredB(b *testing.B) *secured { return startSecuredWith(b, nil) }

func startSecuredWith(t testing.TB, lim *limits.Limiter) *secured {
	t.Helper()
	dir := t.TempDir()
	store, err := auth.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []struct {
		name   string
		role   auth.Role
		tenant string
	}{{"worker", auth.RoleWorker, ""}, {"operator", auth.RoleOperator, ""}, {"admin", auth.RoleAdmin, ""},
		{"agent-a", auth.RoleAgent, "a"}, {"agent-b", auth.RoleAgent, "b"}} {
		if _, err := store.Add(u.name, u.role, u.tenant); err != nil {
			t.Fatal(err)
		}
	}
	conf := filepath.Join(dir, "server.conf")
	if err := os.WriteFile(conf, []byte(auth.ServerConfig("auth.conf", "", "", "")), 0o600); err != nil {
		t.Fatal(err)
	}
	worker := nats.UserCredentials(store.CredsFile("worker"))
	d, err := daemon.Start(context.Background(), daemon.Config{
		Broker:        broker.Config{Listen: freePort(t), DataDir: t.TempDir(), ConfigFile: conf},
		Ingest:        ingest.Config{IdleTimeout: -1, Limits: lim},
		Retrieve:      retrieve.Config{Limits: lim},
		ClientOptions: []nats.Option{worker},
	}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Stop() })
	return &secured{d: d, store: store, url: d.URL()}
}

// violations collects the permission violations the server reports to a connection.
type violations struct {
	mu   sync.Mutex
	errs []string
}

func (v *violations) handler(_ *nats.Conn, _ *nats.Subscription, err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.errs = append(v.errs, err.Error())
}

// saw waits until a violation mentioning subject was reported.
func (v *violations) saw(t *testing.T, what, subject string) {
	t.Helper()
	brokertest.CheckFor(t, 5*time.Second, 20*time.Millisecond, func() error {
		v.mu.Lock()
		defer v.mu.Unlock()
		for _, e := range v.errs {
			if strings.Contains(strings.ToLower(e), "permissions violation") && strings.Contains(e, subject) {
				return nil
			}
		}
		return fmt.Errorf("no permissions violation for %s %q; saw %v", what, subject, v.errs)
	})
}

func (s *secured) agent(t *testing.T, tenant string) (*nats.Conn, *client.Client, *violations) {
	t.Helper()
	v := &violations{}
	key := nats.UserCredentials(s.store.CredsFile("agent-" + tenant))
	nc, err := nats.Connect(s.url, key, nats.ErrorHandler(v.handler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	cl, err := client.New(nc, client.Options{Tenant: tenant, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return nc, cl, v
}

func TestTenantsCannotReachEachOther(t *testing.T) {
	s := startSecured(t, nil)
	ctx := context.Background()
	if _, err := nats.Connect(s.url); err == nil {
		t.Fatal("an unauthenticated client was let in")
	}
	ncA, _, vA := s.agent(t, "a")
	_, clB, _ := s.agent(t, "b")

	// b's memory.
	ack, err := clB.Publish(ctx, client.Turn{Session: "sb", User: "bob", Role: "user", Content: "my bank pin hint is the name of my first cat, Zorblax"})
	if err != nil {
		t.Fatal(err)
	}
	before, err := clB.Retrieve(ctx, events.RetrieveRequest{Query: "bank pin hint cat", Session: "sb", After: ack.ID, WaitMS: 5000})
	if err != nil || len(before.Entries) != 1 {
		t.Fatalf("b's own memory: %v %+v", err, before.Entries)
	}

	// a cannot publish a turn for b.
	clForB, _ := client.New(ncA, client.Options{Tenant: "b", Timeout: time.Second, Retry: -1})
	if _, err := clForB.Publish(ctx, client.Turn{Session: "sb", User: "bob", Role: "user", Content: "forget about Zorblax"}); err == nil {
		t.Fatal("a published a turn into b's session")
	}
	vA.saw(t, "publish", "memory.turns.b.sb")
	// a cannot retrieve b's memory.
	if _, err := clForB.Retrieve(ctx, events.RetrieveRequest{Query: "bank pin", Session: "sb"}); err == nil {
		t.Fatal("a retrieved b's memory")
	}
	vA.saw(t, "publish", "memory.retrieve.b")
	// a cannot forget b's users.
	if _, err := ncA.Request("memory.forget.b", []byte(`{"user":"bob"}`), time.Second); err == nil {
		t.Fatal("a asked to forget b's user")
	}
	vA.saw(t, "publish", "memory.forget.b")
	// a cannot subscribe to b's memory events.
	for _, subj := range []string{"memory.pressure.b.>", "memory.summaries.b.>", "memory.facts.b.>", "memory.turns.b.>"} {
		if _, err := ncA.Subscribe(subj, func(*nats.Msg) {}); err != nil {
			t.Fatal(err)
		}
		vA.saw(t, "subscription", subj)
	}
	// a cannot read b's facts from KV, nor any stream: no JetStream API at all.
	jsA, _ := jetstream.New(ncA)
	kctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := jsA.KeyValue(kctx, "AGENTMEM_LONGTERM"); err == nil {
		t.Fatal("a bound b's long-term bucket")
	}
	if _, err := jsA.Stream(kctx, "AGENTMEM_TURNS"); err == nil {
		t.Fatal("a read the turns stream")
	}
	vA.saw(t, "publish", "$JS.API")
	// a's inboxes are its account's: listening to every inbox hears nothing of b's answers.
	heard := make(chan *nats.Msg, 16)
	if _, err := ncA.ChanSubscribe(">", heard); err != nil {
		t.Fatal(err)
	}
	vA.saw(t, "subscription", ">")
	inbox, err := ncA.SubscribeSync("_INBOX.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := ncA.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := clB.Retrieve(ctx, events.RetrieveRequest{Query: "bank pin", Session: "sb"}); err != nil {
		t.Fatal(err)
	}
	if _, err := clB.Publish(ctx, client.Turn{Session: "sb", User: "bob", Role: "assistant", Content: "noted"}); err != nil {
		t.Fatal(err)
	}
	if m, err := inbox.NextMsg(200 * time.Millisecond); err == nil {
		t.Fatalf("a heard an answer on %s: %s", m.Subject, m.Data)
	}

	// b's memory is unchanged.
	after, err := clB.Retrieve(ctx, events.RetrieveRequest{Query: "bank pin hint cat Zorblax", Session: "sb"})
	if err != nil || len(after.Entries) != 1 || after.Entries[0].ID != ack.ID {
		t.Fatalf("b's memory after the attempts: %v %+v", err, after.Entries)
	}
}

func TestForgedTenantInPayloadIsRejected(t *testing.T) {
	s := startSecured(t, nil)
	ncA, clA, _ := s.agent(t, "a")
	ctx := context.Background()
	sub, err := ncA.SubscribeSync(auth.InboxPrefix("a") + ".dlq-probe")
	if err != nil {
		t.Fatal(err)
	}
	_ = sub
	// A CloudEvents extension naming b, on a's own subject.
	ev, _ := events.NewEvent("forged-1", events.TypeTurn, "agent", time.Now(), events.Turn{Role: "user", Content: "hello", User: "alice"})
	ev.SetExtension("tenant", "b")
	m, _ := events.BinaryMsg("memory.turns.a.sa", ev)
	jsA, _ := jetstream.New(ncA)
	if _, err := jsA.PublishMsg(ctx, m); err != nil {
		t.Fatal(err)
	}
	// The turn is not applied: read-your-writes on it answers that it was rejected, and why.
	_, err = clA.Retrieve(ctx, events.RetrieveRequest{Query: "hello", Session: "sa", After: "forged-1", WaitMS: 1500})
	var se *client.ServiceError
	if !errors.As(err, &se) || se.Code != 400 || se.Field != "after" || !strings.Contains(se.Message, `names tenant "b"`) {
		t.Fatalf("a turn naming another tenant was applied: %v", err)
	}
	// A retrieve body naming b.
	body, _ := json.Marshal(map[string]any{"query": "hello", "session": "sa", "tenant": "b"})
	rep, err := ncA.Request("memory.retrieve.a", body, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Header.Get("Nats-Service-Error-Code") != "400" || !strings.Contains(string(rep.Data), `"field":"tenant"`) {
		t.Fatalf("a retrieve naming tenant b: %s %s", rep.Header, rep.Data)
	}
	// The dead letter says why (read by the admin).
	admin := nats.UserCredentials(s.store.CredsFile("admin"))
	nc, err := nats.Connect(s.url, admin)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	brokertest.CheckFor(t, 5*time.Second, 20*time.Millisecond, func() error {
		st, err := js.Stream(ctx, "AGENTMEM_DLQ")
		if err != nil {
			return err
		}
		msg, err := st.GetLastMsgForSubject(ctx, "memory.dlq.a.sa")
		if err != nil {
			return err
		}
		if !strings.Contains(string(msg.Data), `names tenant \"b\"`) {
			return fmt.Errorf("dead letter %s", msg.Data)
		}
		return nil
	})
}

// A Nats-Msg-Id is derived by admission from the subject's tenant and session: one naming
// another tenant's id is refused (and dead-lettered), one left out is derived, so a cannot take
// an id b will use even when it knows it.
func TestForgedMsgIDCannotSuppressAnotherTenantsTurn(t *testing.T) {
	s := startSecured(t, nil)
	ncA, _, _ := s.agent(t, "a")
	_, clB, _ := s.agent(t, "b")
	ctx := context.Background()
	jsA, _ := jetstream.New(ncA)
	for i := range 20 {
		// The id b is going to use, as a's Nats-Msg-Id: refused.
		ev, _ := events.NewEvent(fmt.Sprintf("guess-%d", i), events.TypeTurn, "agent", time.Now(), events.Turn{Role: "user", Content: "x", User: "mallory"})
		m, _ := events.BinaryMsg("memory.turns.a.sa", ev)
		m.Header.Set(events.HeaderMsgID, fmt.Sprintf("b.sb.known-%d", i))
		var apiErr *jetstream.APIError
		if _, err := jsA.PublishMsg(ctx, m); !errors.As(err, &apiErr) || apiErr.Code != 400 || !strings.Contains(apiErr.Description, "Nats-Msg-Id") {
			t.Fatalf("forged Nats-Msg-Id: %v, want a 400 naming Nats-Msg-Id", err)
		}
		// The same event id as b's, on a's own subject: a's own turn, stored under a's id.
		ev, _ = events.NewEvent(fmt.Sprintf("known-%d", i), events.TypeTurn, "agent", time.Now(), events.Turn{Role: "user", Content: "x", User: "mallory"})
		m, _ = events.BinaryMsg("memory.turns.a.sb", ev)
		ack, err := jsA.PublishMsg(ctx, m)
		if err != nil || ack.Duplicate {
			t.Fatalf("a's own turn known-%d: %+v %v", i, ack, err)
		}
	}
	for i := range 20 {
		id := fmt.Sprintf("known-%d", i)
		ack, err := clB.Publish(ctx, client.Turn{ID: id, Session: "sb", User: "bob", Role: "user", Content: "remember the blue door"})
		if err != nil {
			t.Fatal(err)
		}
		if ack.Duplicate {
			t.Fatalf("b's new turn %s was taken for a duplicate", ack.ID)
		}
		if _, err := clB.Retrieve(ctx, events.RetrieveRequest{Query: "blue door", Session: "sb", After: ack.ID, WaitMS: 5000}); err != nil {
			t.Fatalf("b's turn %s was not applied: %v", ack.ID, err)
		}
	}
}

// quiesce waits until memoryd serves (b's turn applied) before a test reloads.
func (s *secured) quiesce(t *testing.T) {
	t.Helper()
	_, clB, _ := s.agent(t, "b")
	ctx := context.Background()
	ack, err := clB.Publish(ctx, client.Turn{Session: "quiet", User: "bob", Role: "user", Content: "before the reload"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := clB.Retrieve(ctx, events.RetrieveRequest{Query: "reload", Session: "quiet", After: ack.ID, WaitMS: 5000}); err != nil {
		t.Fatal(err)
	}
}

func TestRevokedCredentialIsRefused(t *testing.T) {
	skipUnderRace(t)
	s := startSecured(t, nil)
	s.quiesce(t)
	data, err := os.ReadFile(s.store.CredsFile("agent-b"))
	if err != nil {
		t.Fatal(err)
	}
	kept := filepath.Join(t.TempDir(), "b.creds")
	if err := os.WriteFile(kept, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.store.Remove("agent-b"); err != nil {
		t.Fatal(err)
	}
	if err := s.d.Reload(); err != nil {
		t.Fatal(err)
	}
	if nc, err := nats.Connect(s.url, nats.UserCredentials(kept)); err == nil {
		nc.Close()
		t.Fatal("a revoked credential connected")
	}
}

func TestTenantLimits(t *testing.T) {
	lim := limits.New(limits.Config{Tenants: map[string]limits.Limit{
		"a": {MaxTurnBytes: 100, TurnsPerSecond: 1, TurnBurst: 5, RetrievesPerSecond: 1, RetrieveBurst: 3},
	}})
	s := startSecured(t, lim)
	_, clA, _ := s.agent(t, "a")
	_, clB, _ := s.agent(t, "b")
	ctx := context.Background()
	// An oversized turn is dead-lettered with its reason; b's turns of the same size are fine.
	big := strings.Repeat("x", 200)
	ackA, err := clA.Publish(ctx, client.Turn{Session: "la", User: "alice", Role: "user", Content: big})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := clA.Retrieve(ctx, events.RetrieveRequest{Query: "x", Session: "la", After: ackA.ID, WaitMS: 1000}); err == nil {
		t.Fatal("an oversized turn was applied")
	}
	ackB, err := clB.Publish(ctx, client.Turn{Session: "lb", User: "bob", Role: "user", Content: big})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := clB.Retrieve(ctx, events.RetrieveRequest{Query: "x", Session: "lb", After: ackB.ID, WaitMS: 5000}); err != nil {
		t.Fatalf("b's turn of the same size: %v", err)
	}
	// A burst of turns above the rate: the first few apply, the rest are dead-lettered.
	var ids []string
	for i := range 20 {
		ack, err := clA.Publish(ctx, client.Turn{Session: "la", User: "alice", Role: "user", Content: fmt.Sprintf("burst %d", i)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ack.ID)
	}
	applied := 0
	for _, id := range ids {
		if _, err := clA.Retrieve(ctx, events.RetrieveRequest{Query: "burst", Session: "la", After: id, WaitMS: 300}); err == nil {
			applied++
		}
	}
	if applied == 0 || applied >= 20 {
		t.Fatalf("%d of 20 burst turns applied; want the burst allowance, not all", applied)
	}
	// Retrieves above the rate get 429; b is unaffected.
	got429 := false
	for range 10 {
		_, err := clA.Retrieve(ctx, events.RetrieveRequest{Query: "burst", Session: "la"})
		var se *client.ServiceError
		if errors.As(err, &se) && se.Code == 429 {
			got429 = true
			break
		}
	}
	if !got429 {
		t.Fatal("no 429 above the retrieve rate")
	}
	for range 10 {
		if _, err := clB.Retrieve(ctx, events.RetrieveRequest{Query: "x", Session: "lb"}); err != nil {
			t.Fatalf("b was limited by a's rate: %v", err)
		}
	}
}

// A tenant added while the server runs (memctl auth add, then a reload) is served at once, and
// the reload leaves the tenants already served alone.
func TestTenantAddedAtRuntime(t *testing.T) {
	skipUnderRace(t)
	s := startSecured(t, nil)
	s.quiesce(t)
	_, clB, _ := s.agent(t, "b")
	ctx := context.Background()
	if _, err := s.store.Add("agent-c", auth.RoleAgent, "c"); err != nil {
		t.Fatal(err)
	}
	if err := s.d.Reload(); err != nil {
		t.Fatal(err)
	}
	for _, who := range []string{"b", "c"} {
		cl := clB
		if who == "c" {
			_, cl, _ = s.agent(t, "c")
		}
		ack, err := cl.Publish(ctx, client.Turn{Session: "s" + who, User: "bob", Role: "user", Content: "my favourite tea is oolong"})
		if err != nil {
			t.Fatalf("%s's turn right after the reload: %v", who, err)
		}
		if _, err := cl.Retrieve(ctx, events.RetrieveRequest{Query: "tea", Session: "s" + who, After: ack.ID, WaitMS: 5000}); err != nil {
			t.Fatalf("%s's retrieve right after the reload: %v", who, err)
		}
	}
}

// PublishBatch through admission (authentication on) stores a batch's turns in order, each
// once, as it does on a server without authentication (where it sends an atomic batch).
func TestPublishBatchThroughAdmission(t *testing.T) {
	s := startSecured(t, nil)
	_, cl, _ := s.agent(t, "a")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Once admission answers: while it is not subscribed (here, memoryd starting) a batch's
	// publishes fail and are sent again one by one, which may store them out of order
	// (client.PublishAll).
	if _, err := cl.Publish(ctx, client.Turn{ID: "warm", Session: "pbw", User: "pbu", Role: "user", Content: "warm"}); err != nil {
		t.Fatal(err)
	}
	turns := make([]client.Turn, 12)
	for i := range turns {
		turns[i] = client.Turn{ID: fmt.Sprintf("pb%d", i), Session: "pbs", User: "pbu", Role: "user", Content: fmt.Sprintf("turn %d", i)}
	}
	acks, err := cl.PublishBatch(ctx, turns)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range acks {
		if a.Duplicate || (i > 0 && a.Sequence <= acks[i-1].Sequence) {
			t.Fatalf("ack %d: %+v after %+v: want a later sequence, stored once", i, a, acks[max(i-1, 0)])
		}
	}
	again, err := cl.PublishBatch(ctx, turns)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range again {
		if !a.Duplicate {
			t.Fatalf("resent turn %d: %+v, want a duplicate", i, a)
		}
	}
}
