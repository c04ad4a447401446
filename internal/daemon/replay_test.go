package daemon_test

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker"
	"github.com/agentmem/agentmem/internal/daemon"
	"github.com/agentmem/agentmem/internal/extract"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/internal/longterm"
	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
	"github.com/agentmem/agentmem/pkg/memory"
)

// recorded is a mixed-language stream with long tool results and session ends.
func recorded(i int) client.Turn {
	at := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Minute)
	switch {
	case i%11 == 10:
		return client.Turn{Role: "tool", Tool: "shell", Content: "$ kubectl get pods\n" + strings.Repeat("api-7d9f   1/1   Running   0   3d\n", 40), Time: at}
	case i%4 == 0:
		return client.Turn{Role: "user", Content: fmt.Sprintf("第%d条：我最喜欢的编程语言是 Go，我住在杭州，我们的项目用 NATS。", i), Time: at}
	case i%4 == 2:
		return client.Turn{Role: "user", Content: fmt.Sprintf("Note %d: I prefer tea over coffee and I work at Acme on the billing service.", i), Time: at}
	default:
		return client.Turn{Role: "assistant", Content: fmt.Sprintf("Answer %d: noted, I will keep the rollback plan and the on-call rota in mind.", i), Time: at}
	}
}

func TestReplayRebuildsTheLiveMemory(t *testing.T) {
	b := memory.DefaultBudget()
	b.ContextWindow = 900 + b.System + b.Tools + b.Response
	cfg := daemon.Config{
		Broker: broker.Config{Listen: "127.0.0.1:-1", DataDir: t.TempDir()},
		Ingest: ingest.Config{Budget: b, IdleTimeout: -1},
	}
	ctx := context.Background()
	d, err := daemon.Start(ctx, cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Stop() })
	nc, err := nats.Connect(d.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	cl, _ := client.New(nc, client.Options{Tenant: "acme"})
	sessions := []string{"r1", "r2", "r3"}
	for i := range 90 {
		sess := sessions[i%3]
		tr := recorded(i)
		tr.ID, tr.Session, tr.User = fmt.Sprintf("%s-%03d", sess, i), sess, "u"+sess
		if _, err := cl.Publish(ctx, tr); err != nil {
			t.Fatal(err)
		}
		if i == 60 {
			if _, err := cl.EndSession(ctx, "r1", "ur1"); err != nil {
				t.Fatal(err)
			}
		}
	}
	js, _ := jetstream.New(nc)
	for _, s := range sessions[:2] {
		if _, err := cl.EndSession(ctx, s, "u"+s); err != nil {
			t.Fatal(err)
		}
	}
	// The last session ends in structured content mode: live and replayed alike extract at its
	// end.
	end, err := events.NewEvent("r3-end", events.TypeSessionEnded, "test", time.Date(2026, 11, 20, 11, 0, 0, 0, time.UTC), events.SessionEnded{User: "ur3"})
	if err != nil {
		t.Fatal(err)
	}
	em, err := events.StructuredEventMsg("acme", "r3", end)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.PublishMsg(ctx, em); err != nil {
		t.Fatal(err)
	}
	topo := events.DefaultTopology()
	live, err := session.NewStore(ctx, js, topo)
	if err != nil {
		t.Fatal(err)
	}
	// Quiet: every session ended, every named range summarised, the extractors drained.
	deadline := time.Now().Add(30 * time.Second)
	quiet := func() error {
		for _, s := range sessions {
			h, _, err := live.Header(ctx, session.Key{Tenant: "acme", Session: s})
			if err != nil {
				return err
			}
			if !h.Ended || !h.AwaitingSince.IsZero() || h.Pressures == 0 {
				return fmt.Errorf("%s: ended=%t awaiting=%v pressures=%d", s, h.Ended, !h.AwaitingSince.IsZero(), h.Pressures)
			}
		}
		for stream, name := range map[string]string{topo.TurnsStream(): extract.EndConsumerName(topo), topo.SummaryStream(): extract.SummaryConsumerName(topo)} {
			c, err := js.Consumer(ctx, stream, name)
			if err != nil {
				return err
			}
			info, err := c.Info(ctx)
			if err != nil {
				return err
			}
			if info.NumPending+uint64(info.NumAckPending) > 0 {
				return fmt.Errorf("%s busy", name)
			}
		}
		return nil
	}
	for err := quiet(); err != nil; err = quiet() {
		if time.Now().After(deadline) {
			dumpStreams(t, js)
			_ = pprof.Lookup("goroutine").WriteTo(os.Stderr, 1)
			t.Fatal(err)
		}
		<-time.After(100 * time.Millisecond)
	}

	rp, err := daemon.NewReplayer(ctx, cfg, "REPLAY1", js, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	stats, err := rp.Replay(ctx, "acme", 0, time.Time{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("replay: %+v", stats)
	rtopo := ingest.ReplayTopology(topo, "REPLAY1")
	replayed, err := session.NewStore(ctx, js, rtopo)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sessions {
		k := session.Key{Tenant: "acme", Session: s}
		a, err := live.Load(ctx, k, 0)
		if err != nil {
			t.Fatal(err)
		}
		r, err := replayed.Load(ctx, k, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := describe(r), describe(a); got != want {
			t.Errorf("%s replayed:\n%s\nlive:\n%s", s, got, want)
		}
	}
	liveLT, _ := longterm.Open(ctx, js, topo)
	replayLT, _ := longterm.Open(ctx, js, rtopo)
	for _, s := range sessions {
		a, err := liveLT.User(ctx, "acme", "u"+s)
		if err != nil {
			t.Fatal(err)
		}
		r, err := replayLT.User(ctx, "acme", "u"+s)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := describeLT(r), describeLT(a); got != want {
			t.Errorf("u%s long-term replayed:\n%s\nlive:\n%s", s, got, want)
		}
		if len(a.Facts) == 0 || len(a.Summaries) == 0 {
			t.Errorf("u%s: live run made %d facts and %d summaries; the scenario should make both", s, len(a.Facts), len(a.Summaries))
		}
	}
}

// describe renders what a session holds, for comparison.
func describe(st *session.State) string {
	var b strings.Builder
	h := st.Header
	fmt.Fprintf(&b, "user=%s turns=%d rejected=%d pressures=%d summaries=%d tokens=%d kept=%d pending=%d ended=%t\n",
		h.User, h.Turns, h.Rejected, h.Pressures, h.Summaries, h.Tokens, h.Kept, h.Pending, h.Ended)
	for _, e := range append(st.Short.Pending(), st.Short.Entries()...) {
		fmt.Fprintf(&b, "%s %s %d %s %q %v\n", e.ID, e.Type, e.Tokens, e.Timestamp.Format(time.RFC3339), e.Content, e.Provenance)
	}
	return b.String()
}

func describeLT(r longterm.UserRecords) string {
	var lines []string
	for _, f := range r.Facts {
		prov := slices.Clone(f.Provenance)
		slices.Sort(prov)
		lines = append(lines, fmt.Sprintf("fact %s %q %s key=%s live=%t %v", f.ID, f.Content, f.ValidFrom.Format(time.RFC3339), f.Key, f.Live(), prov))
	}
	for _, s := range r.Summaries {
		lines = append(lines, fmt.Sprintf("summary %s %q", s.ID, s.Content))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// dumpStreams logs the pressure, summary and dead-letter events, to see why a run did not settle.
func dumpStreams(t *testing.T, js jetstream.JetStream) {
	ctx := context.Background()
	for _, name := range []string{"AGENTMEM_PRESSURE", "AGENTMEM_SUMMARIES", "AGENTMEM_DLQ"} {
		s, err := js.Stream(ctx, name)
		if err != nil {
			continue
		}
		info, err := s.Info(ctx)
		if err != nil {
			continue
		}
		for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
			if m, err := s.GetMsg(ctx, seq); err == nil {
				t.Logf("%s %d %s %s %.300s", name, seq, m.Subject, m.Header.Get("Agentmem-Reason"), m.Data)
			}
		}
	}
}
