package daemon_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/internal/limits"
	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

// The attacks of issue 12: tenant a makes the service, or JetStream, write for it. Each is run
// against memoryd with authentication on; b's memory must come out unchanged.

// deputyTargets are reply subjects a points the service's answers at: b's buckets, streams,
// services and inboxes, and the service's own API.
var deputyTargets = []string{
	"$KV.AGENTMEM_SESSIONS.b.sb",
	"$KV.AGENTMEM_LONGTERM.b.bob.session.sb",
	"$KV.AGENTMEM_LONGTERM.b.bob.fact.planted",
	"memory.turns.b.sb",
	"memory.intake.b.sb",
	"memory.pressure.b.sb",
	"memory.summaries.b.sb",
	"memory.facts.b.bob",
	"memory.dlq.b.sb",
	"memory.retrieve.b",
	"memory.forget.b",
	"_INBOX_b.anything",
	"$JS.API.STREAM.PURGE.AGENTMEM_TURNS",
}

// snapshot is what b has in the service: messages per subject filter of every stream and bucket
// (b's keys), counted with the admin credential.
type snapshot map[string]uint64

func (s *secured) admin(t *testing.T) jetstream.JetStream {
	t.Helper()
	key := nats.UserCredentials(s.store.CredsFile("admin"))
	nc, err := nats.Connect(s.url, key)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

func snapshotOf(t *testing.T, js jetstream.JetStream, tenant string) snapshot {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out := snapshot{}
	for stream, filter := range map[string]string{
		"AGENTMEM_TURNS":       "*.memory.turns." + tenant + ".>",
		"AGENTMEM_PRESSURE":    "memory.pressure." + tenant + ".>",
		"AGENTMEM_SUMMARIES":   "*.memory.summaries." + tenant + ".>",
		"AGENTMEM_FACTS":       "memory.facts." + tenant + ".>",
		"AGENTMEM_DLQ":         "memory.dlq." + tenant + ".>",
		"KV_AGENTMEM_SESSIONS": "$KV.AGENTMEM_SESSIONS." + tenant + ".>",
		"KV_AGENTMEM_CHUNKS":   "$KV.AGENTMEM_CHUNKS." + tenant + ".>",
		"KV_AGENTMEM_LONGTERM": "$KV.AGENTMEM_LONGTERM." + tenant + ".>",
		"KV_AGENTMEM_USAGE":    "$KV.AGENTMEM_USAGE." + tenant + ".>",
	} {
		st, err := js.Stream(ctx, stream)
		if err != nil {
			t.Fatalf("stream %s: %v", stream, err)
		}
		info, err := st.Info(ctx, jetstream.WithSubjectFilter(filter))
		if err != nil {
			t.Fatal(err)
		}
		var n uint64
		for _, c := range info.State.Subjects {
			n += c
		}
		out[stream+" "+filter] = n
	}
	return out
}

func (a snapshot) diff(b snapshot) string {
	var d []string
	for k, v := range a {
		if b[k] != v {
			d = append(d, fmt.Sprintf("%s: %d → %d", k, v, b[k]))
		}
	}
	return strings.Join(d, "; ")
}

// bMemory sets up b's memory and a watcher on every subject b's agent may listen to.
func bMemory(t *testing.T, s *secured) (*client.Client, string, chan *nats.Msg) {
	t.Helper()
	ctx := context.Background()
	ncB, clB, _ := s.agent(t, "b")
	ack, err := clB.Publish(ctx, client.Turn{Session: "sb", User: "bob", Role: "user", Content: "my locker code is 4711"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := clB.Retrieve(ctx, events.RetrieveRequest{Query: "locker code", Session: "sb", After: ack.ID, WaitMS: 5000}); err != nil {
		t.Fatal(err)
	}
	heard := make(chan *nats.Msg, 256)
	for _, subj := range []string{"memory.pressure.b.>", "memory.summaries.b.>", "memory.facts.b.>", "_INBOX.>", "_INBOX_b.>"} {
		if _, err := ncB.ChanSubscribe(subj, heard); err != nil {
			t.Fatal(err)
		}
	}
	if err := ncB.Flush(); err != nil {
		t.Fatal(err)
	}
	return clB, ack.ID, heard
}

// settle makes sure everything a sent has been handled: a's own marker turn is applied and a
// retrieve is answered after it.
func settle(t *testing.T, clA *client.Client) {
	t.Helper()
	ctx := context.Background()
	ack, err := clA.Publish(ctx, client.Turn{Session: "sa", User: "alice", Role: "user", Content: "marker " + time.Now().String()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := clA.Retrieve(ctx, events.RetrieveRequest{Query: "marker", Session: "sa", After: ack.ID, WaitMS: 5000}); err != nil {
		t.Fatal(err)
	}
}

func checkBUnchanged(t *testing.T, s *secured, js jetstream.JetStream, before snapshot, clB *client.Client, bTurn string, heard chan *nats.Msg) {
	t.Helper()
	if d := before.diff(snapshotOf(t, js, "b")); d != "" {
		t.Errorf("b's streams and buckets changed: %s", d)
	}
	select {
	case m := <-heard:
		t.Errorf("b's agent received %s: %.200s", m.Subject, m.Data)
	default:
	}
	r, err := clB.Retrieve(context.Background(), events.RetrieveRequest{Query: "locker code 4711", Session: "sb", User: "bob", Sources: []string{"short", "long", "archive"}})
	if err != nil {
		t.Fatalf("b's retrieve after the attack: %v", err)
	}
	if len(r.Entries) == 0 || r.Entries[0].ID != bTurn {
		t.Fatalf("b's memory after the attack: %+v", r.Entries)
	}
}

// deputyAttack sets up b's memory, lets a's agent send whatever attack sends with each of the
// deputy targets as its reply subject, waits until a's messages are handled, and checks that b's
// memory is unchanged.
func deputyAttack(t *testing.T, attack func(ncA *nats.Conn, to string, i int)) {
	t.Helper()
	s := startSecured(t, nil)
	js := s.admin(t)
	ncA, clA, _ := s.agent(t, "a")
	clB, bTurn, heard := bMemory(t, s)
	before := snapshotOf(t, js, "b")
	for i, to := range deputyTargets {
		attack(ncA, to, i)
	}
	if err := ncA.Flush(); err != nil {
		t.Fatal(err)
	}
	settle(t, clA)
	checkBUnchanged(t, s, js, before, clB, bTurn, heard)
}

func publish(t *testing.T, nc *nats.Conn, m *nats.Msg) {
	t.Helper()
	if err := nc.PublishMsg(m); err != nil {
		t.Fatal(err)
	}
}

func TestRetrieveAndForgetAnswerOnlyTheRequester(t *testing.T) {
	deputyAttack(t, func(ncA *nats.Conn, to string, _ int) {
		for _, req := range []struct{ subject, body string }{
			{"memory.retrieve.a", `{"query":"anything","session":"sa","user":"alice"}`},
			// A well-formed request that fails (404-like: unknown user) and one that is bad (400).
			{"memory.retrieve.a", `{"query":""}`},
			// A user a has none of: the forget itself changes nothing, only its answer matters.
			{"memory.forget.a", `{"user":"ghost"}`},
			{"memory.forget.a", `{"user":"no such user!"}`},
		} {
			publish(t, ncA, &nats.Msg{Subject: req.subject, Reply: to, Data: []byte(req.body)})
		}
	})
}

func TestPubAckGoesOnlyToTheRequester(t *testing.T) {
	deputyAttack(t, func(ncA *nats.Conn, to string, i int) {
		ev, _ := events.NewEvent(fmt.Sprintf("deputy-%d", i), events.TypeTurn, "agent", time.Now(), events.Turn{Role: "user", Content: "hello", User: "alice"})
		m, _ := events.BinaryMsg("memory.turns.a.sa", ev)
		m.Reply = to
		publish(t, ncA, m)
		// A bad turn (its answer is an error) and a turn refused for its id.
		publish(t, ncA, &nats.Msg{Subject: "memory.turns.a.sa", Reply: to, Data: []byte("not a cloudevent")})
		ev, _ = events.NewEvent(events.ReservedIDPrefix+"1", events.TypeSessionEnded, "agent", time.Now(), events.SessionEnded{User: "alice"})
		m, _ = events.BinaryMsg("memory.turns.a.sa", ev)
		m.Reply = to
		publish(t, ncA, m)
	})
}

// JetStream's Nats-Expected-* headers would answer questions about any subject of the stream
// ("wrong last sequence: N"); admission drops every Nats-* header, so they answer nothing.
func TestNATSHeadersOfAgentsAreDropped(t *testing.T) {
	s := startSecured(t, nil)
	js := s.admin(t)
	ncA, clA, _ := s.agent(t, "a")
	_, _, _ = bMemory(t, s)
	jsA, _ := jetstream.New(ncA)
	ctx := context.Background()
	part := events.Partition("b", "sb", 16)
	headers := map[string]string{
		"Nats-Expected-Last-Subject-Sequence":         "1",
		"Nats-Expected-Last-Subject-Sequence-Subject": events.PartitionedSubject(part, "b", "sb"),
		"Nats-Expected-Last-Sequence":                 "1",
		"Nats-Expected-Stream":                        "NOPE",
		"Nats-Rollup":                                 "all",
		"Nats-TTL":                                    "1s",
		"nats-expected-last-msg-id":                   "b.sb.x",
	}
	ev, _ := events.NewEvent("probe-1", events.TypeTurn, "agent", time.Now(), events.Turn{Role: "user", Content: "probe", User: "alice"})
	m, _ := events.BinaryMsg("memory.turns.a.sa", ev)
	for k, v := range headers {
		m.Header[k] = []string{v}
	}
	ack, err := jsA.PublishMsg(ctx, m)
	if err != nil {
		t.Fatalf("a turn with Nats-* headers: %v (JetStream evaluated them)", err)
	}
	stored, err := js.Stream(ctx, "AGENTMEM_TURNS")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := stored.GetMsg(ctx, ack.Sequence)
	if err != nil {
		t.Fatal(err)
	}
	for k := range headers {
		if raw.Header.Get(k) != "" {
			t.Errorf("stored turn kept header %s", k)
		}
	}
	if got := raw.Header.Get(events.HeaderMsgID); got != "a.sa.probe-1" {
		t.Errorf("stored Nats-Msg-Id %q, want a.sa.probe-1", got)
	}
	// The rollup was not applied: a's earlier turns are still there.
	settle(t, clA)
	info, err := stored.Info(ctx, jetstream.WithSubjectFilter("*.memory.turns.a.sa"))
	if err != nil {
		t.Fatal(err)
	}
	if n := info.State.Subjects[events.PartitionedSubject(events.Partition("a", "sa", 16), "a", "sa")]; n < 2 {
		t.Errorf("a's session holds %d messages: a rollup was applied", n)
	}
}

// An event id in agentmem's reserved space would take the id of an end ingest derives itself.
func TestReservedIDsAreRefused(t *testing.T) {
	s := startSecured(t, nil)
	ncA, _, _ := s.agent(t, "a")
	jsA, _ := jetstream.New(ncA)
	ev, _ := events.NewEvent(events.ReservedIDPrefix+"42", events.TypeSessionEnded, "agent", time.Now(), events.SessionEnded{User: "alice"})
	m, _ := events.BinaryMsg("memory.turns.a.sa", ev)
	var apiErr *jetstream.APIError
	if _, err := jsA.PublishMsg(context.Background(), m); !errors.As(err, &apiErr) || apiErr.Code != 400 || !strings.Contains(apiErr.Description, "reserved") {
		t.Fatalf("reserved id: %v, want a 400 saying it is reserved", err)
	}
}

// A request nobody can receive the answer to is not served, so it spends nothing of the
// tenant's rate; requests of a whose answers a aims at b spend a's rate, never b's.
func TestUnanswerableRequestsSpendNoBudget(t *testing.T) {
	lim := limits.New(limits.Config{Default: limits.Limit{RetrievesPerSecond: 0.01, RetrieveBurst: 5}})
	s := startSecured(t, lim)
	ncA, clA, _ := s.agent(t, "a")
	_, clB, _ := s.agent(t, "b")
	ctx := context.Background()
	burst := func(who string, cl *client.Client) {
		t.Helper()
		for i := range 5 {
			if _, err := cl.Retrieve(ctx, events.RetrieveRequest{Query: "x", Session: "s"}); err != nil {
				t.Fatalf("%s's retrieve %d of its burst of 5: %v", who, i+1, err)
			}
		}
		var se *client.ServiceError
		if _, err := cl.Retrieve(ctx, events.RetrieveRequest{Query: "x", Session: "s"}); !errors.As(err, &se) || se.Code != 429 {
			t.Fatalf("%s's 6th retrieve: %v, want 429 (the limit is on)", who, err)
		}
	}
	for range 50 {
		if err := ncA.Publish("memory.retrieve.a", []byte(`{"query":"x","session":"sa"}`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := ncA.Flush(); err != nil {
		t.Fatal(err)
	}
	burst("a", clA)
	for range 50 {
		if err := ncA.PublishRequest("memory.retrieve.a", "memory.retrieve.b", []byte(`{"query":"x","session":"sa"}`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := ncA.Flush(); err != nil {
		t.Fatal(err)
	}
	burst("b", clB)
}

// The services answer only inboxes even to a client of the service account (or to anyone with
// authentication off), whose reply subject no import rewrites.
func TestServicesAnswerOnlyInboxes(t *testing.T) {
	s := startSecured(t, nil)
	js := s.admin(t)
	adm, err := nats.Connect(s.url, nats.UserCredentials(s.store.CredsFile("admin")))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	_, clA, _ := s.agent(t, "a")
	clB, bTurn, heard := bMemory(t, s)
	before := snapshotOf(t, js, "b")
	for _, to := range deputyTargets {
		if strings.HasPrefix(to, "$JS.") {
			continue // the admin may purge streams itself; the point is what a service publishes
		}
		publish(t, adm, &nats.Msg{Subject: "memory.retrieve.a", Reply: to, Data: []byte(`{"query":"anything","session":"sa"}`)})
		publish(t, adm, &nats.Msg{Subject: "memory.forget.a", Reply: to, Data: []byte(`{"user":"ghost"}`)})
		publish(t, adm, &nats.Msg{Subject: "memory.intake.a.sa", Reply: to, Data: []byte(`not a cloudevent`)})
	}
	if err := adm.Flush(); err != nil {
		t.Fatal(err)
	}
	settle(t, clA)
	checkBUnchanged(t, s, js, before, clB, bTurn, heard)
}
