package ingest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/pkg/events"
)

func TestIdleSessionEndedWithDeterministicEvent(t *testing.T) {
	h := newHarness(t, ingest.Config{IdleTimeout: 300 * time.Millisecond})
	ack := h.publish("acme", "idle", turn{id: "i1", role: "user", content: "remember that I live in Lyon", user: "alice"})
	var hd = h.waitDecided("acme", "idle", ack.Sequence)
	brokertest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		var err error
		if hd, err = h.header("acme", "idle"); err != nil {
			return err
		}
		if !hd.Ended {
			return fmt.Errorf("session not ended yet")
		}
		return nil
	})
	// The end event went into the session's turns subject, after its last turn, with an id derived
	// from that turn's sequence.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := h.env.JS.Stream(ctx, h.topo.TurnsStream())
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.GetMsg(ctx, hd.LastSeq)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m.Header.Get("ce-id"), ingest.IdleEndID(ack.Sequence); got != want || m.Header.Get("ce-type") != events.TypeSessionEnded {
		t.Fatalf("last message of the session: id %q type %q, want %q %s", got, m.Header.Get("ce-type"), want, events.TypeSessionEnded)
	}
	if hd.LastSeq <= ack.Sequence {
		t.Fatalf("end event at %d is not after the last turn at %d", hd.LastSeq, ack.Sequence)
	}
	// A turn after the end reopens the session.
	again := h.publish("acme", "idle", turn{id: "i2", role: "user", content: "and I work on agentmem"})
	hd = h.waitDecided("acme", "idle", again.Sequence)
	// (It may already have gone idle again, which takes a second end event after the new turn.)
	if hd.Turns != 2 || (hd.Ended && hd.LastSeq <= again.Sequence) {
		t.Fatalf("after a new turn: ended=%t turns=%d last seq %d (turn at %d)", hd.Ended, hd.Turns, hd.LastSeq, again.Sequence)
	}
}
