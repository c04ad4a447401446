package importer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/archive"
	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/daemon"
	"github.com/agentmem/agentmem/internal/daemon/daemontest"
	"github.com/agentmem/agentmem/internal/importer"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/internal/metrics"
	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

// env is an all-in-one service in process and a client connection to it.
type env struct {
	nc    *nats.Conn
	js    jetstream.JetStream
	topo  events.Topology
	store *session.Store
}

func start(t testing.TB, topo events.Topology) *env {
	t.Helper()
	ctx := context.Background()
	_, nc, js := daemontest.Start(t, daemon.Config{Topology: topo, Ingest: ingest.Config{IdleTimeout: -1}})
	if topo.Prefix == "" {
		topo = events.DefaultTopology()
	}
	store, err := session.NewStore(ctx, js, topo)
	if err != nil {
		t.Fatal(err)
	}
	return &env{nc: nc, js: js, topo: topo, store: store}
}

func (e *env) importer(t *testing.T, cfg importer.Config, withStore bool) *importer.Importer {
	t.Helper()
	var store *session.Store
	if withStore {
		store = e.store
	}
	im, err := importer.New(cfg, e.nc, store, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	return im
}

// waitDrained waits until every consumer of the turns stream has nothing pending and nothing
// unacknowledged.
func (e *env) waitDrained(t *testing.T) {
	t.Helper()
	brokertest.CheckFor(t, 30*time.Second, 20*time.Millisecond, func() error {
		lags, err := metrics.ConsumerLag(context.Background(), e.js, e.topo, func(stream, _ string) bool { return stream == e.topo.TurnsStream() })
		if err != nil {
			return err
		}
		for _, l := range lags {
			if l.Pending > 0 || l.AckPending > 0 {
				return fmt.Errorf("%s: %d pending, %d unacknowledged", l.Consumer, l.Pending, l.AckPending)
			}
		}
		return nil
	})
}

// waitTurns waits until ingest applied want turns to each session.
func (e *env) waitTurns(t *testing.T, want map[session.Key]int) {
	t.Helper()
	brokertest.CheckFor(t, 30*time.Second, 20*time.Millisecond, func() error {
		for k, n := range want {
			h, _, err := e.store.Header(context.Background(), k)
			if err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
			if h.Turns != n {
				return fmt.Errorf("%s: %d turns applied, want %d", k, h.Turns, n)
			}
		}
		return nil
	})
}

// archived returns the turn events the turns stream holds for a session, in stream order.
func (e *env) archived(t *testing.T, k session.Key) []archivedTurn {
	t.Helper()
	var out []archivedTurn
	err := archive.NewReader(e.js, e.topo.TurnsStream()).Scan(context.Background(), events.SessionFilter(k.Tenant, k.Session), 1, 0,
		func(m *jetstream.RawStreamMsg) error {
			ev, err := events.Decode(&nats.Msg{Subject: m.Subject, Header: m.Header, Data: m.Data})
			if err != nil {
				return err
			}
			at := archivedTurn{ID: ev.ID(), Type: ev.Type(), Body: string(ev.Data())}
			if ev.Type() == events.TypeTurn {
				turn, err := events.DecodeData[events.Turn](ev)
				if err != nil {
					return err
				}
				at.Content = turn.Content
			}
			out = append(out, at)
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

type archivedTurn struct {
	ID, Type, Content, Body string
}

// entries returns the ids of a session's short-term entries, oldest first.
func (e *env) entries(t *testing.T, k session.Key) []string {
	t.Helper()
	st, err := e.store.Load(context.Background(), k, 0)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, en := range st.Short.Pending() {
		ids = append(ids, en.ID)
	}
	for _, en := range st.Short.Entries() {
		ids = append(ids, en.ID)
	}
	return ids
}

const history = `{"session":"s1","user":"alice","role":"user","content":"我喜欢用 Go 写代码","time":"2024-01-02T10:00:00+08:00"}
{"session":"s1","role":"assistant","content":"好的，我记住了：你喜欢 Go。","time":"2024-01-02T10:00:05+08:00"}
{"session":"s1", oops
{"session":"s1","role":"robot","content":"bad role"}

{"role":"user","content":"no session"}
{"session":"s2","user":"bob","role":"user","content":"ok"}
{"session":"s2","role":"assistant","content":""}
{"session":"s2","role":"user","content":"ok"}
{"session":"s1","role":"tool","tool":"weather","content":"结果：北京 晴 25°C","time":"2024-01-02T10:00:09+08:00","metadata":{"n":12345678901234567890}}
{"tenant":"beta","session":"s1","user":"carol","role":"user","content":"hello from beta","id":"b-1"}
{"session":"s1","user":"mallory","role":"user","content":"not the owner"}
{"session":"s3","role":"user","content":"no user on the first turn"}
{"session":"s1","role":"user","content":"bad time","time":"yesterday"}
{"tenant":"bad.tenant","session":"x","user":"u","role":"user","content":"x"}
`

var (
	acmeS1 = session.Key{Tenant: "acme", Session: "s1"}
	acmeS2 = session.Key{Tenant: "acme", Session: "s2"}
	betaS1 = session.Key{Tenant: "beta", Session: "s1"}
)

func TestImportGoodAndBadLinesThenReimportAddsNothing(t *testing.T) {
	e := start(t, events.Topology{})
	ctx := context.Background()
	var last importer.Progress
	cfg := importer.Config{Tenant: "acme", Window: 4, Progress: func(p importer.Progress) { last = p }}
	rep, err := e.importer(t, cfg, true).Import(ctx, strings.NewReader(history))
	if err != nil {
		t.Fatal(err)
	}
	want := importer.Counts{Lines: 15, Blank: 1, Valid: 6, Imported: 6, Skipped: 8}
	if rep.Counts != want {
		t.Fatalf("counts %+v, want %+v", rep.Counts, want)
	}
	if last.Done != 15 || last.Bytes != int64(len(history)) {
		t.Fatalf("last progress %+v, want 15 lines done and %d bytes", last, len(history))
	}
	if rep.Sessions != 3 || !slices.Equal(rep.Tenants, []string{"acme", "beta"}) {
		t.Fatalf("sessions %d tenants %v", rep.Sessions, rep.Tenants)
	}
	wantErrs := map[int]string{3: "invalid JSON", 4: `role "robot"`, 6: "session: missing", 8: "content: must not be empty",
		12: `session "s1" belongs to user "alice"`, 13: "user: missing on the first turn", 14: "not RFC 3339", 15: `tenant "bad.tenant"`}
	if len(rep.Errors) != len(wantErrs) {
		t.Fatalf("errors %+v", rep.Errors)
	}
	for _, le := range rep.Errors {
		if w, ok := wantErrs[le.Line]; !ok || !strings.Contains(le.Error, w) {
			t.Fatalf("line %d: %q, want %q", le.Line, le.Error, w)
		}
	}

	// Every good turn is applied to short-term memory, in file order, with its content intact.
	wantTurns := map[session.Key]int{acmeS1: 3, acmeS2: 2, betaS1: 1}
	e.waitTurns(t, wantTurns)
	wantContent := map[session.Key][]string{
		acmeS1: {"我喜欢用 Go 写代码", "好的，我记住了：你喜欢 Go。", "结果：北京 晴 25°C"},
		acmeS2: {"ok", "ok"},
		betaS1: {"hello from beta"},
	}
	for k, contents := range wantContent {
		arch := e.archived(t, k)
		var got []string
		byID := map[string]string{}
		for _, a := range arch {
			got = append(got, a.Content)
			byID[a.ID] = a.Content
		}
		if !slices.Equal(got, contents) {
			t.Fatalf("%s archived %q, want %q", k, got, contents)
		}
		var applied []string
		for _, id := range e.entries(t, k) {
			applied = append(applied, byID[id])
		}
		if !slices.Equal(applied, contents) {
			t.Fatalf("%s short-term memory holds %q, want %q", k, applied, contents)
		}
	}
	if arch := e.archived(t, betaS1); arch[0].ID != "b-1" {
		t.Fatalf("the given id was not kept: %q", arch[0].ID)
	}
	if arch := e.archived(t, acmeS1); !strings.Contains(arch[2].Body, `"metadata":{"n":12345678901234567890}`) {
		t.Fatalf("metadata changed on the way: %s", arch[2].Body)
	}
	cl, err := client.New(e.nc, client.Options{Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	reply, err := cl.Retrieve(ctx, events.RetrieveRequest{Query: "北京 天气", Session: "s1", Sources: []string{"short"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(reply.Entries) == 0 || reply.Entries[0].Content != "结果：北京 晴 25°C" || reply.Entries[0].Type != "TOOL_RESULT" {
		t.Fatalf("retrieve: %+v", reply.Entries)
	}
	if at := reply.Entries[0].Timestamp; !at.Equal(time.Date(2024, 1, 2, 2, 0, 9, 0, time.UTC)) {
		t.Fatalf("the turn's time became %v", at)
	}

	// Importing the same file again adds nothing: with the session store the turns are not even
	// published; without it the stream drops them as duplicates.
	stored := e.streamMsgs(t)
	for _, withStore := range []bool{true, false} {
		rep, err := e.importer(t, importer.Config{Tenant: "acme"}, withStore).Import(ctx, strings.NewReader(history))
		if err != nil {
			t.Fatal(err)
		}
		want := importer.Counts{Lines: 15, Blank: 1, Valid: 6, Duplicates: 6, Skipped: 8}
		if rep.Counts != want {
			t.Fatalf("re-import (store %t): counts %+v, want %+v", withStore, rep.Counts, want)
		}
	}
	if n := e.streamMsgs(t); n != stored {
		t.Fatalf("the turns stream went from %d to %d messages", stored, n)
	}
	e.waitDrained(t)
	e.waitTurns(t, wantTurns)
}

func (e *env) streamMsgs(t *testing.T) uint64 {
	t.Helper()
	s, err := e.js.Stream(context.Background(), e.topo.TurnsStream())
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

// After the stream's duplicate window a re-import without the session store stores the turns
// again; ingest ignores the ids it has applied, so memory does not change.
func TestReimportAfterTheDuplicateWindowChangesNothing(t *testing.T) {
	topo := events.DefaultTopology()
	topo.DuplicateWindow = 200 * time.Millisecond
	e := start(t, topo)
	ctx := context.Background()
	file := `{"session":"s1","user":"alice","role":"user","content":"第一句"}
{"session":"s1","role":"assistant","content":"second"}
{"session":"s1","role":"user","content":"第一句"}
`
	if _, err := e.importer(t, importer.Config{Tenant: "acme"}, false).Import(ctx, strings.NewReader(file)); err != nil {
		t.Fatal(err)
	}
	e.waitTurns(t, map[session.Key]int{acmeS1: 3})
	before := e.entries(t, acmeS1)
	// Poll less often than the window lasts: an attempt that lands while only some turns left the
	// window stores those again (restarting their window), so the next attempt must come after
	// that window too for all three to be stored at once.
	brokertest.CheckFor(t, 20*time.Second, 3*topo.DuplicateWindow, func() error {
		rep, err := e.importer(t, importer.Config{Tenant: "acme"}, false).Import(ctx, strings.NewReader(file))
		if err != nil {
			return err
		}
		if rep.Imported != 3 {
			return fmt.Errorf("still inside the duplicate window: %+v", rep.Counts)
		}
		return nil
	})
	e.waitDrained(t)
	if h, _, err := e.store.Header(ctx, acmeS1); err != nil || h.Turns != 3 {
		t.Fatalf("after the re-import: %d turns, %v", h.Turns, err)
	}
	if after := e.entries(t, acmeS1); !slices.Equal(after, before) {
		t.Fatalf("entries changed: %v, then %v", before, after)
	}
	// With the session store the importer sees the turns are held and publishes nothing.
	rep, err := e.importer(t, importer.Config{Tenant: "acme"}, true).Import(ctx, strings.NewReader(file))
	if err != nil || rep.Duplicates != 3 || rep.Imported != 0 {
		t.Fatalf("import with the store: %+v, %v", rep.Counts, err)
	}
}

// Many turns of interleaved sessions, published with a small window, are applied in file order.
func TestImportKeepsFileOrderPerSession(t *testing.T) {
	e := start(t, events.Topology{})
	ctx := context.Background()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	want := map[session.Key][]string{}
	const turns = 1500
	for i := range turns {
		sess := fmt.Sprintf("s%d", i%3)
		if i%7 == 0 {
			sess = "s0" // one session gets more turns than the others
		}
		content := fmt.Sprintf("第 %d 句 turn %d", i, i)
		line := map[string]any{"session": sess, "user": "u-" + sess, "role": []string{"user", "assistant"}[i%2], "content": content}
		if err := enc.Encode(line); err != nil {
			t.Fatal(err)
		}
		k := session.Key{Tenant: "acme", Session: sess}
		want[k] = append(want[k], content)
	}
	rep, err := e.importer(t, importer.Config{Tenant: "acme", Window: 16, EndSessions: true}, true).Import(ctx, &buf)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Imported != turns || rep.Ended != 3 || rep.Skipped != 0 {
		t.Fatalf("report %+v", rep.Counts)
	}
	counts := map[session.Key]int{}
	for k, c := range want {
		counts[k] = len(c)
	}
	e.waitTurns(t, counts)
	e.waitDrained(t)
	for k, contents := range want {
		arch := e.archived(t, k)
		byID := map[string]string{}
		for _, a := range arch {
			byID[a.ID] = a.Content
		}
		if last := arch[len(arch)-1]; last.Type != events.TypeSessionEnded {
			t.Fatalf("%s: the last event is %s, want the session end", k, last.Type)
		}
		var applied []string
		for _, id := range e.entries(t, k) {
			applied = append(applied, byID[id])
		}
		// Short-term memory may have compressed the oldest turns; what is kept is the file's tail
		// in order.
		if len(applied) == 0 || !slices.Equal(applied, contents[len(contents)-len(applied):]) {
			t.Fatalf("%s: applied %d turns out of file order", k, len(applied))
		}
		h, _, err := e.store.Header(ctx, k)
		if err != nil || !h.Ended || h.Turns != len(contents) {
			t.Fatalf("%s: header %+v, %v", k, h, err)
		}
	}
	// Ends are not published twice either.
	rep, err = e.importer(t, importer.Config{Tenant: "acme", EndSessions: true}, true).Import(ctx, strings.NewReader(""))
	if err != nil || rep.Ended != 0 {
		t.Fatalf("empty import: %+v, %v", rep, err)
	}
}

func TestDryRunPublishesNothing(t *testing.T) {
	im, err := importer.New(importer.Config{Tenant: "acme", DryRun: true, EndSessions: true, MaxErrors: 2}, nil, nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	rep, err := im.Import(context.Background(), strings.NewReader(history))
	if err != nil {
		t.Fatal(err)
	}
	want := importer.Counts{Lines: 15, Blank: 1, Valid: 6, Skipped: 8, Ended: 3}
	if rep.Counts != want || !rep.DryRun {
		t.Fatalf("counts %+v, want %+v", rep.Counts, want)
	}
	if len(rep.Errors) != 2 || rep.Errors[0].Line != 3 || rep.Errors[1].Line != 4 {
		t.Fatalf("errors %+v, want the first two", rep.Errors)
	}
	if _, err := importer.New(importer.Config{}, nil, nil, zerolog.Nop()); err == nil {
		t.Fatal("an importer without a connection that is not a dry run")
	}
	if _, err := importer.New(importer.Config{Tenant: "a.b", DryRun: true}, nil, nil, zerolog.Nop()); err == nil {
		t.Fatal("a bad default tenant was accepted")
	}
}

// Without a turns stream nothing can be stored: the import stops with an error that says so,
// after trying the failed turns again, and the report counts them as failed.
func TestImportStopsWhenTheStreamRefuses(t *testing.T) {
	b := brokertest.Start(t)
	im, err := importer.New(importer.Config{Tenant: "acme", Attempts: 2, Timeout: 2 * time.Second}, b.NC, nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	rep, err := im.Import(context.Background(), strings.NewReader(history))
	if err == nil || !strings.Contains(err.Error(), "running it again is safe") {
		t.Fatalf("error %v", err)
	}
	if rep.Imported != 0 || rep.Failed == 0 {
		t.Fatalf("report %+v", rep.Counts)
	}
}
