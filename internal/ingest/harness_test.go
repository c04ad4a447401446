package ingest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/pkg/events"
	"github.com/agentmem/agentmem/pkg/memory"
)

// harness is a real in-process JetStream with the topology created and an ingest worker running.
type harness struct {
	t      *testing.T
	env    *brokertest.Env
	topo   events.Topology
	store  *session.Store
	cfg    ingest.Config
	worker *ingest.Worker
	stop   func()
}

func newHarness(t *testing.T, cfg ingest.Config) *harness {
	t.Helper()
	env := brokertest.Start(t)
	return startOn(t, env, cfg)
}

func startOn(t *testing.T, env *brokertest.Env, cfg ingest.Config) *harness {
	t.Helper()
	topo := events.DefaultTopology()
	topo.Partitions = 4
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := topo.Ensure(ctx, env.JS); err != nil {
		t.Fatalf("ensure: %v", err)
	}
	store, err := session.NewStore(ctx, env.JS, topo)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Topology = topo
	h := &harness{t: t, env: env, topo: topo, store: store, cfg: cfg}
	h.startWorker()
	return h
}

// startWorker starts an ingest worker on its own connection; stop drains it and waits.
func (h *harness) startWorker() {
	h.t.Helper()
	nc := h.env.Connect(h.t)
	js, err := jetstream.New(nc)
	if err != nil {
		h.t.Fatal(err)
	}
	w, err := ingest.New(context.Background(), h.cfg, js, zerolog.Nop())
	if err != nil {
		h.t.Fatalf("ingest.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var once sync.Once
	h.worker = w
	h.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					h.t.Errorf("ingest run: %v", err)
				}
			case <-time.After(30 * time.Second):
				h.t.Errorf("ingest did not stop within 30s")
			}
		})
	}
	h.t.Cleanup(h.stop)
}

// turn is a turn to publish.
type turn struct {
	id, role, content, user string
	at                      time.Time
}

// publish sends a turn in binary mode with its Nats-Msg-Id and returns the PubAck.
func (h *harness) publish(tenant, sess string, tr turn) *jetstream.PubAck {
	h.t.Helper()
	if tr.at.IsZero() {
		tr.at = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	}
	ev, err := events.NewEvent(tr.id, events.TypeTurn, "test", tr.at, events.Turn{Role: tr.role, Content: tr.content, User: tr.user})
	if err != nil {
		h.t.Fatal(err)
	}
	subj, err := events.TurnSubject(tenant, sess)
	if err != nil {
		h.t.Fatal(err)
	}
	msg, err := events.BinaryMsg(subj, ev)
	if err != nil {
		h.t.Fatal(err)
	}
	msg.Header.Set(events.HeaderMsgID, events.MsgID(tenant, sess, tr.id))
	return h.publishMsg(msg)
}

func (h *harness) publishMsg(msg *nats.Msg) *jetstream.PubAck {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ack, err := h.env.JS.PublishMsg(ctx, msg)
	if err != nil {
		h.t.Fatalf("publishing to %s: %v", msg.Subject, err)
	}
	return ack
}

// header reads a session header.
func (h *harness) header(tenant, sess string) (session.Header, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hd, _, err := h.store.Header(ctx, session.Key{Tenant: tenant, Session: sess})
	return hd, err
}

// waitDecided waits until ingest decided every message of the session up to seq.
func (h *harness) waitDecided(tenant, sess string, seq uint64) session.Header {
	h.t.Helper()
	var hd session.Header
	brokertest.CheckFor(h.t, 20*time.Second, 10*time.Millisecond, func() error {
		var err error
		hd, err = h.header(tenant, sess)
		if err != nil {
			return err
		}
		if hd.LastSeq < seq {
			return fmt.Errorf("session %s/%s decided up to %d, want %d", tenant, sess, hd.LastSeq, seq)
		}
		return nil
	})
	return hd
}

// load reads a session's full state.
func (h *harness) load(tenant, sess string) *session.State {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := h.store.Load(ctx, session.Key{Tenant: tenant, Session: sess}, 0)
	if err != nil {
		h.t.Fatal(err)
	}
	return st
}

// entryIDs lists the ids of every turn entry the session holds or has named, oldest first.
func turnIDs(st *session.State) []string {
	var out []string
	var walk func(e memory.Entry)
	walk = func(e memory.Entry) {
		if e.Type == memory.Summary {
			for _, p := range st.Covered(e.ID) {
				walk(p)
			}
			return
		}
		out = append(out, e.ID)
	}
	for _, e := range st.Short.Pending() {
		walk(e)
	}
	for _, e := range st.Short.Entries() {
		walk(e)
	}
	return out
}

// deadLetters reads every dead letter stored so far.
func (h *harness) deadLetters() []events.DeadLetter {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := h.env.JS.Stream(ctx, h.topo.DeadLetterStream())
	if err != nil {
		h.t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		h.t.Fatal(err)
	}
	var out []events.DeadLetter
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			h.t.Fatal(err)
		}
		var dl events.DeadLetter
		if err := json.Unmarshal(m.Data, &dl); err != nil {
			h.t.Fatal(err)
		}
		out = append(out, dl)
	}
	return out
}

// TestStaticWorkerUnpinsOnStop: a worker with static partitions that stops unpins its
// consumers, so the next process (a restart) is served at once instead of after the pin's TTL.
func TestStaticWorkerUnpinsOnStop(t *testing.T) {
	h := newHarness(t, ingest.Config{Partitions: []int{0, 1, 2, 3}, IdleTimeout: -1})
	ack := h.publish("acme", "s1", turn{id: "t1", role: "user", content: "hello", user: "u1"})
	h.waitDecided("acme", "s1", ack.Sequence)
	pinned := func() []string {
		var out []string
		ctx := context.Background()
		for p := range h.topo.Partitions {
			for stream, consumer := range map[string]string{h.topo.TurnsStream(): ingest.TurnsConsumerName(h.topo, p), h.topo.SummaryStream(): ingest.SummaryConsumerName(h.topo, p)} {
				c, err := h.env.JS.Consumer(ctx, stream, consumer)
				if err != nil {
					t.Fatal(err)
				}
				info, err := c.Info(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for _, g := range info.PriorityGroups {
					if g.PinnedClientID != "" {
						out = append(out, consumer)
					}
				}
			}
		}
		return out
	}
	if len(pinned()) == 0 {
		t.Fatal("no consumer is pinned while the worker runs: the check cannot tell anything")
	}
	h.stop()
	if p := pinned(); len(p) != 0 {
		t.Fatalf("still pinned after the worker stopped: %v", p)
	}
}

// storedTurns sums the messages of a stream info asked with a subject filter: the turns of the
// turns stream, without ingest's announcements.
func storedTurns(info *jetstream.StreamInfo) uint64 {
	var n uint64
	for _, c := range info.State.Subjects {
		n += c
	}
	return n
}
