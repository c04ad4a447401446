package retrieve_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker"
	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/daemon"
	"github.com/agentmem/agentmem/internal/footprint"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/internal/metrics"
	"github.com/agentmem/agentmem/internal/retrieve"
	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

// startMetered is startWith with the daemon's metrics, whose memory report it returns.
func startMetered(t *testing.T, rcfg retrieve.Config) (*env, *footprint.Registry) {
	t.Helper()
	rcfg.Now = func() time.Time { return day.Add(48 * time.Hour) }
	m := metrics.New()
	cfg := daemon.Config{
		Broker:   broker.Config{Listen: "127.0.0.1:-1", DataDir: t.TempDir()},
		Ingest:   ingest.Config{IdleTimeout: -1},
		Retrieve: rcfg,
		Metrics:  m,
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
	return &env{nc: nc, cl: cl, cfg: cfg}, m.Footprint()
}

func structure(reg *footprint.Registry, name string) footprint.Structure {
	for _, s := range reg.Structures() {
		if s.Name == name {
			return s
		}
	}
	return footprint.Structure{Name: name}
}

// A loaded user's view is counted (its entries, its index), and so is the session's; views
// no request used for ViewIdle are dropped, and the next request reads them again and answers
// as before.
func TestViewsAreCountedAndDroppedWhenIdle(t *testing.T) {
	e, reg := startMetered(t, retrieve.Config{ViewIdle: 300 * time.Millisecond})
	turns := conversation()
	e.seed(t, "s1", "alice", turns)
	ask := func() events.RetrieveReply {
		r, err := e.cl.Retrieve(context.Background(), events.RetrieveRequest{Query: "favourite programming language", User: "alice"})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	first := ask()
	if len(first.Entries) == 0 {
		t.Fatal("no entries")
	}
	views, entries, index := structure(reg, "retrieve_user_views"), structure(reg, "retrieve_user_entries"), structure(reg, "retrieve_user_index")
	if views.Items != 1 || entries.Items != int64(len(turns)) || index.Bytes <= 0 ||
		views.Bytes < entries.Bytes+index.Bytes || views.Bytes > entries.Bytes+index.Bytes+1024 {
		t.Fatalf("after one user's query: views %+v, entries %+v, index %+v; want 1 view of %d entries, its bytes their sum (and the sessions' last turns)", views, entries, index, len(turns))
	}
	brokertest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		v, s := structure(reg, "retrieve_user_views"), structure(reg, "retrieve_session_views")
		if v.Items != 0 || v.Bytes != 0 || s.Items != 0 {
			return fmt.Errorf("still cached: %+v, %+v", v, s)
		}
		return nil
	})
	again := ask()
	if len(again.Entries) != len(first.Entries) || again.Entries[0].ID != first.Entries[0].ID || again.Entries[0].Score != first.Entries[0].Score {
		t.Fatalf("after the view was dropped: %v, before %v", top(again), top(first))
	}
	if v := structure(reg, "retrieve_user_views"); v.Items != 1 {
		t.Fatalf("the view was not read again: %+v", v)
	}
}

// The views' cap under a memory limit.
func TestViewBytes(t *testing.T) {
	for _, c := range []struct {
		limit int64
		want  int
	}{{1 << 30, 448 << 20}, {512 << 20, 192 << 20}, {256 << 20, 64 << 20}, {130 << 20, 16 << 20}} {
		if got := retrieve.ViewBytes(c.limit); got != c.want {
			t.Errorf("limit %d MiB: %d MiB, want %d", c.limit>>20, got>>20, c.want>>20)
		}
	}
}
