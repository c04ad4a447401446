package daemon_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/archive"
	"github.com/agentmem/agentmem/internal/broker"
	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/daemon"
	"github.com/agentmem/agentmem/internal/datadir"
	"github.com/agentmem/agentmem/internal/embed/wordvec"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/internal/longterm"
	"github.com/agentmem/agentmem/internal/recovery"
	"github.com/agentmem/agentmem/internal/retrieve"
	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/internal/vectors"
	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
	"github.com/agentmem/agentmem/pkg/memory"
)

// lazyConfig is a daemon with lazy persistence on dir whose checkpoints are taken by the test
// (the interval is long), with a 1,000-token conversation budget, so that sessions are
// compressed and facts extracted from a few dozen turns.
func lazyConfig(t *testing.T, dir string, durability broker.Durability) daemon.Config {
	t.Helper()
	b := memory.DefaultBudget()
	b.ContextWindow = 4300
	return daemon.Config{
		Broker:   broker.Config{Listen: "127.0.0.1:-1", DataDir: dir, Durability: durability},
		Ingest:   ingest.Config{Budget: b, IdleTimeout: -1},
		Recovery: recovery.Config{Interval: time.Hour, Settle: 20 * time.Millisecond},
	}
}

// recoveryRun is a started daemon with a client.
type recoveryRun struct {
	d  *daemon.Daemon
	nc *nats.Conn
	js jetstream.JetStream
	cl *client.Client
}

func startRun(t *testing.T, cfg daemon.Config) *recoveryRun {
	t.Helper()
	d, err := daemon.Start(context.Background(), cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(d.URL())
	if err != nil {
		_ = d.Stop()
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	cl, _ := client.New(nc, client.Options{Tenant: "acme"})
	r := &recoveryRun{d: d, nc: nc, js: js, cl: cl}
	t.Cleanup(r.stop)
	return r
}

func (r *recoveryRun) stop() {
	if r.d == nil {
		return
	}
	r.nc.Close()
	_ = r.d.Stop()
	r.d = nil
}

// talk publishes n turns to session sess of user, every seventh stating where the user lives,
// then ends the session, and waits until everything is applied, compressed and extracted.
func (r *recoveryRun) talk(t *testing.T, sess, user string, from, n int) {
	t.Helper()
	ctx := context.Background()
	for i := from; i < from+n; i++ {
		content := fmt.Sprintf("Note %d: the deploy of build %d went fine, the dashboards stayed green all night, the on-call rota is unchanged and nobody was paged.", i, i)
		if i%7 == 3 {
			content = []string{"I live in Paris.", "I live in Lyon."}[(i/7)%2]
		}
		if _, err := r.cl.Publish(ctx, client.Turn{ID: fmt.Sprintf("%s-%03d", sess, i), Session: sess, User: user, Role: "user", Content: content}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.cl.EndSession(ctx, sess, user); err != nil {
		t.Fatal(err)
	}
	r.drained(t)
}

// drained waits until every consumer of every stream has nothing pending or unacknowledged and
// no session awaits a summary.
func (r *recoveryRun) drained(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	store, err := session.NewStore(ctx, r.js, events.DefaultTopology())
	if err != nil {
		t.Fatal(err)
	}
	brokertest.CheckFor(t, 60*time.Second, 20*time.Millisecond, func() error {
		for name := range r.js.StreamNames(ctx).Name() {
			s, err := r.js.Stream(ctx, name)
			if err != nil {
				return err
			}
			for ci := range s.ListConsumers(ctx).Info() {
				if ci.NumPending > 0 || ci.NumAckPending > 0 {
					return fmt.Errorf("consumer %s of %s: %d pending, %d unacknowledged", ci.Name, name, ci.NumPending, ci.NumAckPending)
				}
			}
		}
		return store.List(ctx, func(h session.Header) error {
			if !h.AwaitingSince.IsZero() {
				return fmt.Errorf("%s awaits summary %s", h.Session, h.SummaryID)
			}
			return nil
		})
	})
}

// memoryOf renders a session's short-term entries and counters and its user's facts (history
// included) and summaries, for comparison.
func memoryOf(t *testing.T, js jetstream.JetStream, topo events.Topology, sess, user string) string {
	t.Helper()
	ctx := context.Background()
	store, err := session.NewStore(ctx, js, topo)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Load(ctx, session.Key{Tenant: "acme", Session: sess}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, e := range append(st.Short.Pending(), st.Short.Entries()...) {
		lines = append(lines, fmt.Sprintf("entry %s %s %q %v", e.ID, e.Type, e.Content, e.Provenance))
	}
	h := st.Header
	lines = append(lines, fmt.Sprintf("header user=%s turns=%d pressures=%d summaries=%d tokens=%d ended=%t",
		h.User, h.Turns, h.Pressures, h.Summaries, h.Tokens, h.Ended))
	long, err := longterm.Open(ctx, js, topo)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := long.User(ctx, "acme", user)
	if err != nil {
		t.Fatal(err)
	}
	var lt []string
	for _, f := range recs.Facts {
		prov := slices.Clone(f.Provenance)
		slices.Sort(prov)
		lt = append(lt, fmt.Sprintf("fact %s %q live=%t from=%s %v", f.ID, f.Content, f.Live(), f.ValidFrom.Format(time.RFC3339), prov))
	}
	for _, s := range recs.Summaries {
		lt = append(lt, fmt.Sprintf("summary %s %q", s.ID, s.Content))
	}
	slices.Sort(lt)
	return strings.Join(append(lines, lt...), "\n")
}

// After an unclean stop the daemon rebuilds, from the turns stream, the sessions (and their
// users) that had turns after the last checkpoint, and nothing else: a session damaged after the
// checkpoint comes back as a replay builds it, one untouched since is not written, and the
// consumers carry on after the rebuild without applying anything twice.
func TestUncleanStopRebuildsWhatFollowsTheCheckpoint(t *testing.T) {
	dir := t.TempDir()
	cfg := lazyConfig(t, dir, "")
	ctx := context.Background()
	r := startRun(t, cfg)
	if rep, ok := r.d.Recovered(); !ok || !rep.First {
		t.Fatalf("a new data directory: recovered %+v (lazy %t), want its first start", rep, ok)
	}
	r.talk(t, "a", "ua", 0, 30)
	r.talk(t, "b", "ub", 0, 30)
	cp, err := r.d.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r.talk(t, "a", "ua", 30, 20)
	topo := events.DefaultTopology()
	store, err := session.NewStore(ctx, r.js, topo)
	if err != nil {
		t.Fatal(err)
	}
	_, revB, err := store.Header(ctx, session.Key{Tenant: "acme", Session: "b"})
	if err != nil {
		t.Fatal(err)
	}
	// What a power cut can leave of lazily written state: a's chunks and ua's facts gone.
	if _, err := archive.PurgeKV(ctx, r.js, topo.ChunkBucket(), "acme.a.>"); err != nil {
		t.Fatal(err)
	}
	if _, err := archive.PurgeKV(ctx, r.js, topo.LongTermBucket(), "acme.ua.f.>"); err != nil {
		t.Fatal(err)
	}
	r.stop()
	// The stop was clean; without its mark the next start takes it for a crash.
	if taken, err := datadir.TakeClean(dir); err != nil || !taken {
		t.Fatalf("the clean stop left no mark to take away (%v)", err)
	}

	r = startRun(t, cfg)
	rep, _ := r.d.Recovered()
	if rep.Clean || rep.First || rep.From != cp.Seq || rep.Sessions != 1 || rep.Users != 1 {
		t.Fatalf("recovered %+v; want a rebuild of session a and user ua from the checkpoint at %d", rep, cp.Seq)
	}
	if store, err = session.NewStore(ctx, r.js, topo); err != nil {
		t.Fatal(err)
	}
	if _, rev, err := store.Header(ctx, session.Key{Tenant: "acme", Session: "b"}); err != nil || rev != revB {
		t.Fatalf("session b, untouched since the checkpoint, was written by the rebuild (revision %d, was %d; %v)", rev, revB, err)
	}
	r.drained(t)
	// The rebuilt memory is what a replay of the turns stream builds.
	rp, err := daemon.NewReplayer(ctx, cfg, "CHECK", r.js, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rp.Replay(ctx, "acme", 0, time.Time{}, nil); err != nil {
		t.Fatal(err)
	}
	check := ingest.ReplayTopology(topo, "CHECK")
	for _, s := range []struct{ sess, user string }{{"a", "ua"}, {"b", "ub"}} {
		got, want := memoryOf(t, r.js, topo, s.sess, s.user), memoryOf(t, r.js, check, s.sess, s.user)
		if got != want {
			t.Fatalf("session %s after the rebuild:\n%s\nwant (a replay):\n%s", s.sess, got, want)
		}
		if !strings.Contains(got, "fact ") || !strings.Contains(got, "summary ") {
			t.Fatalf("session %s has no fact or no summary: the scenario is too small\n%s", s.sess, got)
		}
	}
	// The consumers start after the rebuild: a new turn is applied once, nothing before it again.
	before := r.d.Ingest().Stats().Applied
	r.talk(t, "a", "ua", 50, 1)
	if n := r.d.Ingest().Stats().Applied - before; n != 2 {
		t.Fatalf("ingest applied %d messages for one turn and one session end after the rebuild", n)
	}
}

// A clean stop needs no rebuild: the next start finds the mark, takes the consumers' positions
// from the stop and applies nothing again. The consumers of the turns stream keep their state in
// memory, the streams and buckets derived from it are persisted asynchronously, the turns stream
// and the recovery bucket are not.
func TestCleanStopNeedsNoRebuild(t *testing.T) {
	dir := t.TempDir()
	cfg := lazyConfig(t, dir, "")
	ctx := context.Background()
	r := startRun(t, cfg)
	r.talk(t, "a", "ua", 0, 20)
	r.stop()
	r = startRun(t, cfg)
	if rep, _ := r.d.Recovered(); !rep.Clean || rep.Sessions != 0 {
		t.Fatalf("recovered %+v after a clean stop; want it clean, nothing rebuilt", rep)
	}
	r.talk(t, "a", "ua", 20, 1)
	if st := r.d.Ingest().Stats(); st.Messages != 2 || st.Applied != 2 {
		t.Fatalf("after a clean restart ingest took %d messages and applied %d for one turn and one session end: something was delivered again", st.Messages, st.Applied)
	}
	topo := events.DefaultTopology()
	for _, name := range []string{ingest.TurnsConsumerName(topo, 0), ingest.MalformedConsumerName(topo)} {
		c, err := r.js.Consumer(ctx, topo.TurnsStream(), name)
		if err != nil {
			t.Fatal(err)
		}
		if !c.CachedInfo().Config.MemoryStorage {
			t.Fatalf("consumer %s of the turns stream keeps its state on disk", name)
		}
	}
	persist := func(stream string) jetstream.PersistModeType {
		s, err := r.js.Stream(ctx, stream)
		if err != nil {
			t.Fatal(err)
		}
		return s.CachedInfo().Config.PersistMode
	}
	for _, s := range []string{topo.TurnsStream(), "KV_" + topo.RecoveryBucket()} {
		if persist(s) != jetstream.DefaultPersistMode {
			t.Fatalf("%s is persisted asynchronously", s)
		}
	}
	for _, s := range []string{topo.PressureStream(), topo.SummaryStream(), topo.FactStream(), topo.DeadLetterStream(),
		"KV_" + topo.SessionBucket(), "KV_" + topo.ChunkBucket(), "KV_" + topo.LongTermBucket(), "KV_" + topo.VectorBucket()} {
		if persist(s) != jetstream.AsyncPersistMode {
			t.Fatalf("%s is not persisted asynchronously", s)
		}
	}
}

// A data directory every write of which was synced (--durability sync-all, or a build from
// before lazy persistence) is taken over as it is: its consumers of the turns stream carry on
// from where they were, in memory, and its streams keep their persist mode.
func TestSyncedDataDirectoryIsTakenOver(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	r := startRun(t, lazyConfig(t, dir, broker.DurabilitySyncAll))
	if _, ok := r.d.Recovered(); ok {
		t.Fatal("sync-all persists lazily")
	}
	r.talk(t, "a", "ua", 0, 20)
	r.stop()
	r = startRun(t, lazyConfig(t, dir, ""))
	if rep, ok := r.d.Recovered(); !ok || !rep.First || rep.Sessions != 0 {
		t.Fatalf("recovered %+v (lazy %t); want the first start of lazy persistence, nothing rebuilt", rep, ok)
	}
	r.talk(t, "a", "ua", 20, 1)
	if st := r.d.Ingest().Stats(); st.Messages != 2 {
		t.Fatalf("ingest took %d messages for one turn and one session end: the positions of the synced run were lost", st.Messages)
	}
	s, err := r.js.Stream(ctx, "KV_"+events.DefaultTopology().SessionBucket())
	if err != nil {
		t.Fatal(err)
	}
	if s.CachedInfo().Config.PersistMode != jetstream.DefaultPersistMode {
		t.Fatal("the session bucket of the synced run changed its persist mode")
	}
	// The directory stays lazy whatever the durability of a later run.
	r.stop()
	r = startRun(t, lazyConfig(t, dir, broker.DurabilitySyncAll))
	if rep, ok := r.d.Recovered(); !ok || !rep.Clean {
		t.Fatalf("recovered %+v (lazy %t) with sync-all on a directory that persisted lazily", rep, ok)
	}
}

// ReplaySessions replays the chosen sessions alone, in stream order, up to a sequence: each one
// becomes what a replay of the whole stream at that sequence builds, and the others are not
// written.
func TestReplaySessionsReplaysTheChosenSessionsUpToASequence(t *testing.T) {
	ctx := context.Background()
	cfg := lazyConfig(t, t.TempDir(), "")
	r := startRun(t, cfg)
	for _, s := range []string{"a", "b", "c"} {
		r.talk(t, s, "u"+s, 0, 40)
	}
	topo := events.DefaultTopology()
	turns, err := r.js.Stream(ctx, topo.TurnsStream())
	if err != nil {
		t.Fatal(err)
	}
	upTo := turns.CachedInfo().State.LastSeq
	full, err := daemon.NewReplayer(ctx, cfg, "FULL", r.js, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := full.Replay(ctx, "acme", 0, time.Time{}, nil); err != nil {
		t.Fatal(err)
	}
	r.talk(t, "a", "ua", 40, 10) // after upTo: left out
	part, err := daemon.NewReplayer(ctx, cfg, "PART", r.js, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	st, err := part.ReplaySessions(ctx, []session.Key{{Tenant: "acme", Session: "a"}, {Tenant: "acme", Session: "c"}}, nil, upTo)
	if err != nil {
		t.Fatal(err)
	}
	if st.Sessions != 2 || st.Summaries == 0 {
		t.Fatalf("replayed %+v; want 2 sessions and their summaries", st)
	}
	for _, s := range []string{"a", "c"} {
		got, want := memoryOf(t, r.js, ingest.ReplayTopology(topo, "PART"), s, "u"+s), memoryOf(t, r.js, ingest.ReplayTopology(topo, "FULL"), s, "u"+s)
		if got != want {
			t.Fatalf("session %s replayed alone:\n%s\nwant (the whole stream replayed):\n%s", s, got, want)
		}
	}
	store, err := session.NewStore(ctx, r.js, ingest.ReplayTopology(topo, "PART"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := store.Header(ctx, session.Key{Tenant: "acme", Session: "b"}); err == nil {
		t.Fatal("session b, not chosen, was replayed")
	}
}

// A user's edit of their facts (a fact deleted through the forget service) is recorded in the
// turns stream: after an unclean stop that lost the edited facts, the rebuild replays the edit
// where it was made, and so does a replay of the whole stream.
func TestUncleanStopKeepsTheEditsOfFacts(t *testing.T) {
	dir := t.TempDir()
	cfg := lazyConfig(t, dir, "")
	ctx := context.Background()
	r := startRun(t, cfg)
	r.talk(t, "a", "ua", 0, 30)
	if _, err := r.d.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	topo := events.DefaultTopology()
	long, err := longterm.Open(ctx, r.js, topo)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := long.User(ctx, "acme", "ua")
	if err != nil {
		t.Fatal(err)
	}
	deleted := ""
	for _, f := range recs.Facts {
		if f.Live() {
			deleted = f.ID
		}
	}
	if deleted == "" {
		t.Fatal("ua has no live fact: the scenario is too small")
	}
	if _, err := r.cl.ForgetFact(ctx, "ua", deleted); err != nil {
		t.Fatal(err)
	}
	// What a power cut can leave of lazily written state: ua's facts gone.
	if _, err := archive.PurgeKV(ctx, r.js, topo.LongTermBucket(), "acme.ua.f.>"); err != nil {
		t.Fatal(err)
	}
	r.stop()
	if taken, err := datadir.TakeClean(dir); err != nil || !taken {
		t.Fatalf("the clean stop left no mark to take away (%v)", err)
	}

	r = startRun(t, cfg)
	rep, _ := r.d.Recovered()
	if rep.Clean || rep.Users != 1 || rep.Sessions != 1 || rep.Replay.Edits != 1 {
		t.Fatalf("recovered %+v; want a rebuild of user ua, its session and its edit", rep)
	}
	r.drained(t)
	if long, err = longterm.Open(ctx, r.js, topo); err != nil {
		t.Fatal(err)
	}
	f, err := long.Fact(ctx, "acme", "ua", deleted)
	if err != nil || !f.Deleted {
		t.Fatalf("fact %s after the rebuild: %+v (%v); want it deleted, as the user asked", deleted, f, err)
	}
	rp, err := daemon.NewReplayer(ctx, cfg, "CHECK", r.js, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rp.Replay(ctx, "acme", 0, time.Time{}, nil); err != nil {
		t.Fatal(err)
	}
	if got, want := memoryOf(t, r.js, topo, "a", "ua"), memoryOf(t, r.js, ingest.ReplayTopology(topo, "CHECK"), "a", "ua"); got != want {
		t.Fatalf("after the rebuild:\n%s\nwant (a replay):\n%s", got, want)
	}
}

// After an unclean stop the embedder delivers again, from the checkpoint, the summary and fact
// events it had acknowledged: a vector it stored after the checkpoint and lost (written lazily)
// is made again, while the events and the embedder's position survived.
func TestUncleanStopEmbedsAgainWhatFollowsTheCheckpoint(t *testing.T) {
	dir := t.TempDir()
	cfg := lazyConfig(t, dir, "")
	local, err := wordvec.New()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Retrieve = retrieve.Config{Embedder: local}
	ctx := context.Background()
	topo := events.DefaultTopology()
	r := startRun(t, cfg)
	embedded := func() map[string]bool {
		t.Helper()
		vs, err := vectors.Open(ctx, r.js, topo)
		if err != nil {
			t.Fatal(err)
		}
		ids := map[string]bool{}
		if err := vs.ScanAll(ctx, "acme.ua.>", func(v vectors.Vector) {
			if v.Kind != vectors.KindTurn {
				ids[v.ID] = true
			}
		}); err != nil {
			t.Fatal(err)
		}
		return ids
	}
	r.talk(t, "a", "ua", 0, 30)
	if _, err := r.d.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	before := embedded()
	r.talk(t, "a", "ua", 30, 30)
	var after []string
	for id := range embedded() {
		if !before[id] {
			after = append(after, id)
		}
	}
	if len(after) == 0 {
		t.Fatal("no summary or fact was embedded after the checkpoint: the scenario is too small")
	}
	// What a power cut can leave of lazily written state: ua's vectors gone.
	if _, err := archive.PurgeKV(ctx, r.js, topo.VectorBucket(), "acme.ua.>"); err != nil {
		t.Fatal(err)
	}
	r.stop()
	if taken, err := datadir.TakeClean(dir); err != nil || !taken {
		t.Fatalf("the clean stop left no mark to take away (%v)", err)
	}
	r = startRun(t, cfg)
	if rep, _ := r.d.Recovered(); rep.Clean {
		t.Fatalf("recovered %+v; want a rebuild", rep)
	}
	r.drained(t)
	got := embedded()
	for _, id := range after {
		if !got[id] {
			t.Fatalf("%s, embedded after the checkpoint and lost, was not embedded again (%d of %d are)", id, len(got), len(after))
		}
	}
}
